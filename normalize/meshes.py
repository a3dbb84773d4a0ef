"""Mesh files and primitive shapes: loading, bounds, mass properties and OBJ output.

- `load_mesh(path)` reads OBJ, STL, DAE, GLB or GLTF with trimesh (geometry only) and refuses
  corrupt files (`mesh.corrupt`: unparsable, truncated, NaN/infinite vertices, faces pointing
  past the vertex list, no faces) and missing ones (`mesh.missing`). Vertices are in metres: a
  COLLADA `<asset><unit meter>` is applied (its `<up_axis>` is not, as in Gazebo and RViz).
  What reading noted (`mesh.unit_scaled`, `mesh.up_axis_ignored`, and whatever trimesh logged:
  `texture.missing`, `mesh.loader_warning`) is kept in `Mesh.notes`, never printed. Loaded
  meshes are cached in process by the SHA-256 of the file content, so a mesh shared by many
  objects is parsed once.
- `geometry_bounds(geometry, pose)` is the exact axis-aligned box of a shape placed at `pose`.
- `mass_properties(geometry)` gives mass, centre of mass and inertia at uniform density
  `MESH_DENSITY`: exact formulas for primitives; for meshes the enclosed volume when the mesh is
  watertight, else its convex hull; a flat mesh (no volume either way) is weighed as a thin shell
  of thickness `SHELL_THICKNESS` (the method is reported).
- `write_obj_copy` / `write_obj_converted` / `write_capsule_obj` / `write_unit_sphere_obj`
  produce the OBJ files of the
  written convention (see docs/convention.md).

`TIMING` accumulates the seconds spent in mesh work (loading, bounds, mass, writing) so that
benchmarks can separate it from the rest.

`disk_cache(folder)` (a context manager) also keeps parsed meshes, mesh mass properties and the
OBJ text of converted meshes on disk, keyed by the file's content (the build puts them under its
cache folder): worker processes share them, and a later build or release reuses them even when
the object cache is invalidated by a code change. The store is keyed by this module's code and
the trimesh version too; every entry ends with its own SHA-256, and an entry that fails it is
deleted and recomputed, never trusted. GLTF files are not stored (their buffers live in other
files).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import logging
import math
import os
import re
import threading
import time
import urllib.parse
import uuid
import warnings
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from normalize import files, inputs
from normalize.changes import Change
from normalize.errors import AssetError
from normalize.model import Geometry
from normalize.paths import is_inside, resolve_reference

if TYPE_CHECKING:  # trimesh and scipy are imported where meshes are read or computed
    import trimesh

MESH_DENSITY = 1000.0  # kg/m^3, water: the uniform density of computed inertials
SHELL_THICKNESS = 0.001  # m: flat meshes (no enclosed volume) are weighed as a thin shell
WALL_THICKNESS = 0.015  # m: a hollow part (a carcass, a housing) weighed as walls of a board
MESH_SUFFIXES = (".obj", ".stl", ".dae", ".glb", ".gltf", ".msh")
MAX_MESH_BYTES = 256 * 1024 * 1024
#: Triangles (and a third of the vertices) of one mesh file, counted from its bytes before it
#: is parsed (`mesh.too_many_triangles`); real meshes have up to a few hundred thousand
MAX_MESH_TRIANGLES = 2_000_000
#: Pixels of one texture or height-field image, read from its header (`texture.too_large`):
#: a 30000 x 30000 PNG would take 3.6 GB decoded
MAX_TEXTURE_PIXELS = 8192 * 8192
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tga", ".tif", ".tiff", ".webp")
CACHE_BYTES = 256 * 1024 * 1024  # arrays kept in memory per process (the disk store has the rest)
CAPSULE_SECTIONS = 32
SPHERE_SECTIONS = 32

TIMING: dict[str, float] = {"load": 0.0, "bounds": 0.0, "mass": 0.0, "write": 0.0}


@contextmanager
def _timed(key: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        TIMING[key] += time.perf_counter() - start


def reset_timing() -> None:
    for key in TIMING:
        TIMING[key] = 0.0


# --------------------------------------------------------------------------------- loading
@dataclass(frozen=True, eq=False)
class Mesh:
    """A loaded mesh: float64 vertices (n, 3), int faces (m, 3), file content hash."""

    sha256: str
    vertices: np.ndarray
    faces: np.ndarray
    notes: tuple[tuple[str, str], ...] = ()

    def changes(self, element: str | None = None) -> list[Change]:
        """The notes taken while reading the file, as recorded changes."""
        return [Change(code, message, element=element) for code, message in self.notes]

    @property
    def nbytes(self) -> int:
        return self.vertices.nbytes + self.faces.nbytes


_lock = threading.Lock()
_cache: OrderedDict[str, Mesh] = OrderedDict()
_cache_bytes = 0
_mass_cache: dict[tuple, tuple[float, np.ndarray, np.ndarray, str] | None] = {}
#: Meshes a source gives as data (`generated_obj`): path -> OBJ bytes, never on disk.
GENERATED_FOLDER = Path("/arena-generated-meshes")
_generated: dict[str, bytes] = {}
_sha_by_stat: dict[tuple, str] = {}


def clear_cache() -> None:
    global _cache_bytes
    with _lock:
        _cache.clear()
        _mass_cache.clear()
        _generated.clear()
        _sha_by_stat.clear()
        _cache_bytes = 0


# --------------------------------------------------------------------------------- disk store
DISK_FORMAT = 2
_DIGEST_BYTES = 32
_disk: Path | None = None  # where parsed meshes and mass properties are stored, if anywhere


@functools.cache
def _code_key() -> str:
    """What stored entries depend on besides file content: this module and trimesh."""
    import trimesh

    code = Path(__file__).read_bytes() + trimesh.__version__.encode()
    return hashlib.sha256(code).hexdigest()[:16]


@contextmanager
def disk_cache(folder: Path | None) -> Iterator[None]:
    """Inside the block, store parsed meshes and mass properties under `folder` as well (None:
    in memory only). Process-wide: meant for worker processes running one object at a time."""
    global _disk
    previous = _disk
    _disk = Path(folder) / f"v{DISK_FORMAT}-{_code_key()}" if folder is not None else None
    try:
        yield
    finally:
        _disk = previous


def _disk_path(sha: str, suffix: str) -> Path | None:
    if _disk is None or sha.endswith(".gltf"):
        return None
    return _disk / sha[:2] / f"{sha}{suffix}"


def _disk_read(path: Path | None) -> bytes | None:
    """The body of a stored entry, or None when absent or damaged (then deleted)."""
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    body, digest = data[:-_DIGEST_BYTES], data[-_DIGEST_BYTES:]
    if len(data) > _DIGEST_BYTES and hashlib.sha256(body).digest() == digest:
        return body
    with contextlib.suppress(OSError):
        path.unlink()
    return None


def _disk_write(path: Path | None, body: bytes) -> None:
    """Store `body` with its digest (under a temporary name, then renamed: a killed process
    leaves no half-written entry). Best effort: a full or read-only disk only costs speed."""
    if path is None:
        return
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(body + hashlib.sha256(body).digest())
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _stored_arrays(sha: str) -> tuple[np.ndarray, np.ndarray, tuple] | None:
    """A parsed mesh from the disk store: a JSON line (counts and notes), then the vertices
    (float64) and faces (int64), little-endian."""
    body = _disk_read(_disk_path(sha, ".arrays"))
    if body is None:
        return None
    header, _, data = body.partition(b"\n")
    stored = json.loads(header)
    n_vertices, n_faces = stored["vertices"], stored["faces"]
    split = n_vertices * 3 * 8
    if len(data) != split + n_faces * 3 * 8:
        return None
    vertices = np.frombuffer(data, dtype="<f8", count=n_vertices * 3).reshape(-1, 3)
    faces = np.frombuffer(data, dtype="<i8", offset=split).reshape(-1, 3)
    return vertices, faces, tuple(tuple(note) for note in stored["notes"])


def _store_arrays(sha: str, vertices: np.ndarray, faces: np.ndarray, notes: tuple) -> None:
    path = _disk_path(sha, ".arrays")
    if path is not None:
        header = json.dumps({"vertices": len(vertices), "faces": len(faces), "notes": notes})
        body = b"".join(
            [
                header.encode() + b"\n",
                np.ascontiguousarray(vertices, dtype="<f8").tobytes(),
                np.ascontiguousarray(faces, dtype="<i8").tobytes(),
            ]
        )
        _disk_write(path, body)


def _mass_path(key: tuple) -> Path | None:
    sha, scale, density = key
    tag = hashlib.sha256(repr((scale, density)).encode()).hexdigest()[:16]
    return _disk_path(sha, f".mass-{tag}.json")


def _stored_mass(key: tuple):
    """(found, result) from the disk store; result as `_mesh_mass` returns it."""
    body = _disk_read(_mass_path(key))
    if body is None:
        return False, None
    stored = json.loads(body)
    if stored["key"] != [key[0], list(key[1]), key[2]]:
        return False, None
    if stored["result"] is None:
        return True, None
    mass, com, inertia, method = stored["result"]
    return True, (mass, np.array(com), np.array(inertia), method)


def _store_mass(key: tuple, result) -> None:
    path = _mass_path(key)
    if path is not None:
        value = None
        if result is not None:
            mass, com, inertia, method = result
            value = [mass, com.tolist(), inertia.tolist(), method]
        record = {"key": [key[0], list(key[1]), key[2]], "result": value}
        _disk_write(path, json.dumps(record).encode())


def resolve_mesh_file(
    reference: str,
    *,
    referrer: Path,
    root: Path,
    package_roots=(),
    element: str | None = None,
    changes: list[Change],
    target: Path | None = None,
) -> Path | None:
    """The mesh file a reference in `referrer` names, confined to `root` (or `target` when the
    caller resolved it itself). A remote URL is never fetched: the shape is dropped with a record
    and None returned. Raises AssetError `mesh.format` for an unsupported format and
    `mesh.missing` for a file that is not there."""
    if target is None:
        try:
            target = resolve_reference(
                reference,
                referrer=referrer,
                root=root,
                package_roots=package_roots,
                element=element,
            )
        except AssetError as exc:
            if exc.code != "path.remote":
                raise
            changes.append(
                Change(
                    "mesh.remote_dropped",
                    f"mesh {reference!r} is a remote URL; it was not fetched and this shape was "
                    "dropped",
                    element=element,
                )
            )
            return None
    where = {"stage": "mesh", "path": str(referrer), "element": element}
    _check_format(target, f"mesh {reference!r}: format", where)
    if target.is_dir() or not files.regular_status(target):  # FIFO, device: file.not_regular
        raise AssetError(
            f"mesh {reference!r} does not exist (looked for {target})", code="mesh.missing", **where
        )
    return target


def _check_format(path: Path, what: str, where: dict) -> None:
    """Raise `mesh.format` when `path` is not one of MESH_SUFFIXES; `what` starts the message."""
    if path.suffix.lower() not in MESH_SUFFIXES:
        raise AssetError(
            f"{what} {path.suffix or '(none)'} is not supported ({', '.join(MESH_SUFFIXES)})",
            code="mesh.format",
            **where,
        )


def _stat_key(path: Path) -> tuple | None:
    """Identity of a file's current content without reading it (path, inode, size, mtime), so
    a mesh used again is not re-read to find its hash; None when it cannot be stat'ed."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (str(path), st.st_ino, st.st_size, st.st_mtime_ns)


def _corrupt(path: Path, why: str, element: str | None) -> AssetError:
    return AssetError(
        f"mesh {path.name} is corrupt: {why}",
        code="mesh.corrupt",
        stage="mesh",
        path=str(path),
        element=element,
    )


def read_mesh_bytes(path: Path, element: str | None = None, what: str = "mesh file") -> bytes:
    """The bytes of a mesh file (or of a material library, texture or GLTF buffer: `what`);
    `mesh.missing` when absent, `mesh.too_large` above the limit, `file.not_regular` for a
    FIFO or device (`normalize.files.read_regular`: never a blocking open)."""
    path = Path(path)
    generated = _generated.get(str(path))
    if generated is not None:
        return generated
    inputs.record(path)
    try:
        if path.is_dir():
            raise FileNotFoundError(path)
        return files.read_regular(
            path,
            MAX_MESH_BYTES,
            too_large="mesh.too_large",
            stage="mesh",
            element=element,
            what=what,
        )
    except FileNotFoundError:
        raise AssetError(
            f"{what} {path.name} does not exist",
            code="mesh.missing",
            stage="mesh",
            path=str(path),
            element=element,
        ) from None


class _ConfinedResolver:
    """Lets a GLTF read its buffers and images only from beside it, inside `root` (trimesh's
    resolver interface, `trimesh.resolvers.Resolver`)."""

    def __init__(self, path: Path, root: Path):
        self.path, self.root = path, root

    def get(self, name):
        target = self.path.parent / name
        if not is_inside(target, self.root) or not target.is_file():
            raise AssetError(
                f"GLTF resource {name!r} is missing or outside the source root",
                code="mesh.corrupt",
                stage="mesh",
                path=str(self.path),
            )
        return read_mesh_bytes(target, what="GLTF resource")

    def write(self, name, data):
        raise NotImplementedError("read-only resolver")

    def namespaced(self, namespace):
        raise NotImplementedError("read-only resolver")

    def keys(self):
        return []

    def __getitem__(self, name):
        return self.get(name)


class _LibraryLog(logging.Handler):
    """What trimesh logs. While a thread parses a mesh (`capture`), its warnings (with the
    failures they carry) are kept, to become the mesh's notes (recorded changes) instead of
    tracebacks on stderr; outside a parse, warnings go on as one line to this module's logger,
    without the traceback."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.local = threading.local()

    @contextmanager
    def capture(self) -> Iterator[list[logging.LogRecord]]:
        records: list[logging.LogRecord] = []
        self.local.records = records
        try:
            yield records
        finally:
            self.local.records = None

    def emit(self, record: logging.LogRecord) -> None:
        records = getattr(self.local, "records", None)
        if records is not None:
            records.append(record)
        else:
            _log.warning("trimesh: %s", record.getMessage())


_log = logging.getLogger(__name__)
_library_log = _LibraryLog()
_trimesh_log = logging.getLogger("trimesh")
_trimesh_log.addHandler(_library_log)
_trimesh_log.setLevel(logging.WARNING)  # its debug records are many and say nothing of input
_trimesh_log.propagate = False

_TEXTURE_WORDS = re.compile(r"texture|bumpmap|image", re.IGNORECASE)


def _log_notes(records: list[logging.LogRecord], path: Path) -> list[tuple[str, str]]:
    """(code, message) for each thing trimesh logged while reading `path`: `texture.missing`
    for a texture it could not load, `mesh.loader_warning` for anything else."""
    notes = []
    for record in records:
        message = record.getMessage()
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, (_TextureNotRead, _TextureMissing)):
            continue  # answered by `_ColladaTextures`, which notes the missing ones itself
        if exc is not None:
            message += f" ({type(exc).__name__}: {exc})"
        code = "texture.missing" if _TEXTURE_WORDS.search(message) else "mesh.loader_warning"
        what = "its material lost the texture" if code == "texture.missing" else "trimesh"
        notes.append((code, f"{path.name}: {what}: {message}"))
    return list(dict.fromkeys(notes))


# --------------------------------------------------------------------------------- units
_COLLADA_ASSET = re.compile(rb"<asset\b.*?</asset>", re.DOTALL)
_COLLADA_UNIT = re.compile(rb"<unit\b[^>]*?\bmeter\s*=\s*[\"']([^\"']*)[\"']")
_COLLADA_UP = re.compile(rb"<up_axis>\s*([^<\s]*)\s*</up_axis>")


def _collada_units(data: bytes, path: Path, element: str | None):
    """(metres per unit, notes) from a COLLADA file's <asset>: `<unit meter>` (default 1) is
    applied as Gazebo and RViz apply it; `<up_axis>` is not (neither applies it), noted
    `mesh.up_axis_ignored` when it is not Z_UP."""
    asset = _COLLADA_ASSET.search(data)
    if asset is None:
        return 1.0, []
    notes = []
    unit = _COLLADA_UNIT.search(asset.group(0))
    meter = 1.0
    if unit is not None:
        text = unit.group(1).decode("utf-8", "replace").strip()
        try:
            meter = float(text)
        except ValueError:
            meter = math.nan
        if not (math.isfinite(meter) and meter > 0):
            raise _corrupt(path, f"<unit meter={text!r}> is not a positive number", element)
        if meter != 1.0:
            notes.append(
                (
                    "mesh.unit_scaled",
                    f'{path.name}: COLLADA <unit meter="{text}"> applied: vertices scaled by '
                    f"{meter!r} to metres",
                )
            )
    up = _COLLADA_UP.search(asset.group(0))
    if up is not None and up.group(1) != b"Z_UP":
        notes.append(
            (
                "mesh.up_axis_ignored",
                f"{path.name}: COLLADA <up_axis> {up.group(1).decode('utf-8', 'replace')} is not "
                "applied (Gazebo and RViz ignore it): vertices kept as written",
            )
        )
    return meter, notes


class _TextureNotRead(Exception):
    """A COLLADA texture that exists: not decoded, since converted meshes keep no materials."""


class _TextureMissing(Exception):
    """A COLLADA texture that does not exist inside the source root."""


class _ColladaTextures(_ConfinedResolver):
    """Answers trimesh's texture requests for a COLLADA file without reading images: a texture
    that exists inside the root is not needed (`_TextureNotRead`); one that does not is noted
    in `missing` (`texture.missing`). trimesh catches both and carries on."""

    def __init__(self, path: Path, root: Path):
        super().__init__(path, root)
        self.missing: list[str] = []

    def get(self, name):
        target = self.path.parent / name
        inputs.record(target)
        if is_inside(target, self.root) and target.is_file():
            raise _TextureNotRead(name)
        self.missing.append(name)
        raise _TextureMissing(name)

    def notes(self) -> list[tuple[str, str]]:
        return [
            (
                "texture.missing",
                f"{self.path.name}: texture {name} does not exist inside the source root; the "
                "material loses it",
            )
            for name in dict.fromkeys(self.missing)
        ]


_OBJ_FACE = re.compile(rb"^f[ \t][^\n]*", re.MULTILINE)
#: bytes per face line above which an OBJ's faces are counted corner by corner: an n-gon is
#: n - 2 triangles, and one line of a million corners is a million triangles
OBJ_BYTES_PER_FACE = 256
_DAE_COUNT = re.compile(
    rb"<(?:triangles|polylist|polygons|trifans|tristrips)\b[^>]*?\bcount\s*=\s*[\"'](\d+)"
)
_DAE_TAG = re.compile(
    rb"<(/?)(geometry|node|visual_scene|instance_geometry|instance_node|instance_visual_scene|"
    rb"triangles|polylist|polygons|trifans|tristrips)\b([^>]*)>"
)
_DAE_ATTRIBUTE = re.compile(rb"\b(id|url|count)\s*=\s*[\"']([^\"']*)[\"']")
_DAE_PRIMITIVES = (b"triangles", b"polylist", b"polygons", b"trifans", b"tristrips")


def _collada_placed_triangles(data: bytes, cap: int) -> int:
    """The primitive counts of a COLLADA file multiplied out over its scene: every node placed
    by the scene (`<instance_visual_scene>`, else every visual scene) counts the geometries it
    instances, the nodes it instances (`<instance_node>`, by id) and its child nodes, so that
    nodes instancing nodes ten times over four levels count ten thousand times. Read from the
    tags with one linear scan, nothing parsed; an instance cycle counts once; every count is
    bounded by `cap` (the answer is min(count, cap))."""
    geometry: dict[bytes, int] = {}
    parts: list[list[tuple[str, object]]] = []  # per node: ("geometry"|"node", id) or ("child", i)
    node_ids: dict[bytes, int] = {}
    scenes: dict[bytes, list[int]] = {}
    chosen: list[bytes] = []
    stack: list[tuple[bytes, object]] = []  # open geometry / node / visual_scene elements
    for match in _DAE_TAG.finditer(data):
        closing, tag, rest = match.group(1), match.group(2), match.group(3)
        attributes = dict(_DAE_ATTRIBUTE.findall(rest))
        if closing:
            if stack and stack[-1][0] == tag:
                stack.pop()
            continue
        empty = rest.rstrip().endswith(b"/")
        inside = stack[-1] if stack else (None, None)
        if tag in _DAE_PRIMITIVES:
            if inside[0] == b"geometry" and attributes.get(b"count", b"").isdigit():
                key = inside[1]
                geometry[key] = min(cap, geometry.get(key, 0) + int(attributes[b"count"]))
        elif tag == b"geometry":
            if not empty:
                stack.append((tag, attributes.get(b"id", b"")))
        elif tag == b"visual_scene":
            key = attributes.get(b"id", b"")
            scenes.setdefault(key, [])
            if not empty:
                stack.append((tag, key))
        elif tag == b"node":
            index = len(parts)
            parts.append([])
            if b"id" in attributes:
                node_ids.setdefault(attributes[b"id"], index)
            if inside[0] == b"node":
                parts[inside[1]].append(("child", index))
            elif inside[0] == b"visual_scene":
                scenes[inside[1]].append(index)
            if not empty:
                stack.append((tag, index))
        elif tag == b"instance_visual_scene":
            chosen.append(attributes.get(b"url", b"").lstrip(b"#"))
        elif inside[0] == b"node":  # instance_geometry, instance_node
            kind = "geometry" if tag == b"instance_geometry" else "node"
            parts[inside[1]].append((kind, attributes.get(b"url", b"").lstrip(b"#")))

    counted: dict[int, int] = {}

    def node_count(root: int) -> int:  # depth first without recursion: nodes nest deeply
        todo, visiting = [root], set()
        while todo:
            index = todo[-1]
            if index in counted:
                todo.pop()
                continue
            children = [
                c
                for kind, target in parts[index]
                for c in (
                    [target]
                    if kind == "child"
                    else [node_ids[target]]
                    if kind == "node" and target in node_ids
                    else []
                )
            ]
            waiting = [c for c in children if c not in counted and c not in visiting]
            if index not in visiting and waiting:
                visiting.add(index)
                todo.extend(waiting)
                continue
            total = sum(geometry.get(t, 0) for kind, t in parts[index] if kind == "geometry")
            total += sum(counted.get(c, 0) for c in children)  # a cycle's back edge: 0
            counted[index] = min(cap, total)
            visiting.discard(index)
            todo.pop()
        return counted[root]

    roots = [i for key in (chosen or list(scenes)) for i in scenes.get(key, [])]
    return min(cap, sum(node_count(i) for i in roots))


def _gltf_json(data: bytes, suffix: str) -> dict | None:
    """The JSON document of a GLB or GLTF file, None when it cannot be read (trimesh then
    refuses the file)."""
    try:
        if suffix == ".glb":
            length, kind = int.from_bytes(data[12:16], "little"), data[16:20]
            if data[:4] != b"glTF" or kind != b"JSON":
                return None
            data = data[20 : 20 + length]
        document = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return document if isinstance(document, dict) else None


def _gltf_triangles(document: dict) -> int:
    """Triangles a glTF document makes: each mesh's primitives, once per node that places it."""
    accessors = document.get("accessors") or []

    def count(index) -> int:
        if isinstance(index, int) and 0 <= index < len(accessors):
            accessor = accessors[index]
            if isinstance(accessor, dict) and isinstance(accessor.get("count"), int):
                return accessor["count"]
        return 0

    per_mesh = []
    for mesh in document.get("meshes") or []:
        total = 0
        for primitive in (mesh or {}).get("primitives") or [] if isinstance(mesh, dict) else []:
            if not isinstance(primitive, dict):
                continue
            attributes = primitive.get("attributes") or {}
            corners = count(primitive.get("indices")) or count(attributes.get("POSITION"))
            total += corners // 3
        per_mesh.append(total)
    nodes = [n for n in document.get("nodes") or [] if isinstance(n, dict) and "mesh" in n]
    if not nodes:
        return sum(per_mesh)
    meshes = [n["mesh"] for n in nodes]
    return sum(per_mesh[m] for m in meshes if isinstance(m, int) and 0 <= m < len(per_mesh))


def counted_triangles(data: bytes, suffix: str) -> int:
    """A cheap lower bound on the triangles (or a third of the vertices, if more) a mesh
    file's bytes make, without parsing them: OBJ face and vertex lines, the binary STL count or
    ASCII facets, COLLADA primitive counts (multiplied out over the nodes that place them),
    glTF accessor counts per placed mesh."""
    if suffix == ".obj":
        faces = data.count(b"\nf ") + data.startswith(b"f ")
        vertices = data.count(b"\nv ") + data.startswith(b"v ")
        if len(data) > OBJ_BYTES_PER_FACE * max(faces, 1):  # long face lines: polygons
            faces = sum(max(1, len(m.split()) - 3) for m in _OBJ_FACE.findall(data))
        return max(faces, vertices // 3)
    if suffix == ".stl":
        binary = int.from_bytes(data[80:84], "little") if len(data) >= 84 else -1
        if len(data) == 84 + 50 * binary:
            return binary
        return data.count(b"endfacet")
    if suffix == ".dae":
        listed = sum(int(n) for n in _DAE_COUNT.findall(data))
        return max(listed, _collada_placed_triangles(data, MAX_MESH_TRIANGLES + 1))
    if suffix in (".glb", ".gltf"):
        document = _gltf_json(data, suffix)
        return 0 if document is None else _gltf_triangles(document)
    if suffix == ".msh":
        counts = _msh_counts(data)
        return 0 if counts is None else max(counts[3], counts[0] // 3)
    return 0


def check_triangles(data: bytes, path: Path, element: str | None = None) -> None:
    """`mesh.too_many_triangles` when the file counts more than MAX_MESH_TRIANGLES."""
    triangles = counted_triangles(data, path.suffix.lower())
    if triangles > MAX_MESH_TRIANGLES:
        raise AssetError(
            f"mesh {path.name} has at least {triangles} triangles (or a third as many "
            f"vertices), above the limit of {MAX_MESH_TRIANGLES} (see docs/limits.md)",
            code="mesh.too_many_triangles",
            stage="mesh",
            path=str(path),
            element=element,
        )


def check_texture(data: bytes, path: Path, element: str | None = None, stage: str = "mesh") -> None:
    """`texture.too_large` when the image header of `data` claims more than
    MAX_TEXTURE_PIXELS pixels. Only the header is read (PIL's Image.open decodes nothing);
    bytes PIL does not know are left to whoever reads them."""
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                width, height = image.size
        size = f"{width} x {height}"
    except Image.DecompressionBombError:  # PIL's own bound, far above ours
        width, height, size = MAX_TEXTURE_PIXELS + 1, 1, "more than 2 x Image.MAX_IMAGE_PIXELS"
    except Exception:  # not an image PIL knows: nothing claimed
        return
    if width * height > MAX_TEXTURE_PIXELS:
        raise AssetError(
            f"texture {path.name} is {size} pixels, above the limit of "
            f"{MAX_TEXTURE_PIXELS} pixels (see docs/limits.md); it was not decoded",
            code="texture.too_large",
            stage=stage,
            path=str(path),
            element=element,
        )


def _check_gltf_images(data: bytes, path: Path, root: Path | None, element) -> None:
    """`check_texture` on every image of a glTF file: embedded in a GLB buffer view, or a
    file beside it (read through `read_mesh_bytes`, confined)."""
    suffix = path.suffix.lower()
    document = _gltf_json(data, suffix)
    if document is None:
        return
    views = document.get("bufferViews") or []
    binary_start = None
    if suffix == ".glb":
        json_length = int.from_bytes(data[12:16], "little")
        binary_start = 20 + json_length + 8  # the BIN chunk's header is 8 bytes
    for image in document.get("images") or []:
        if not isinstance(image, dict):
            continue
        view = image.get("bufferView")
        if binary_start is not None and isinstance(view, int) and 0 <= view < len(views):
            v = views[view] if isinstance(views[view], dict) else {}
            offset = binary_start + int(v.get("byteOffset", 0) or 0)
            check_texture(data[offset : offset + int(v.get("byteLength", 0) or 0)], path, element)
        uri = image.get("uri")
        if isinstance(uri, str) and uri and not uri.startswith("data:"):
            confined_to = root if root is not None and is_inside(path, root) else path.parent
            texture = _confined_file(uri, path.parent, confined_to)
            if texture is not None and texture.suffix.lower() in IMAGE_SUFFIXES:
                check_texture(read_mesh_bytes(texture, element, "texture"), texture, element)


#: A GLB's BIN chunk may exceed its buffer's byteLength by this much padding (glTF 2.0, GLB).
GLB_PADDING = 3


def _held_bytes(buffer: dict, index: int, data: bytes, path: Path, root: Path | None, element):
    """How many bytes buffer `index` of a glTF file holds: its GLB BIN chunk, its data URI
    decoded, or the size of the file its URI names (None when that file does not exist)."""
    uri = buffer.get("uri")
    if uri is None:
        if path.suffix.lower() != ".glb" or index != 0:
            raise _corrupt(path, f"buffer {index} has no uri and no GLB BIN chunk", element)
        json_length = int.from_bytes(data[12:16], "little")
        return int.from_bytes(data[20 + json_length : 24 + json_length], "little")
    if not isinstance(uri, str):
        raise _corrupt(path, f"buffer {index} has a uri that is not a string", element)
    if uri.startswith("data:"):
        header, _, payload = uri.partition(",")
        if header.endswith(";base64"):
            payload = payload.rstrip()
            return len(payload) * 3 // 4 - (len(payload) - len(payload.rstrip("=")))
        return len(urllib.parse.unquote_to_bytes(payload))
    confined_to = root if root is not None and is_inside(path, root) else path.parent
    target = _confined_file(uri, path.parent, confined_to)
    return None if target is None else target.stat().st_size


def _check_gltf_buffers(data: bytes, path: Path, root: Path | None, element) -> None:
    """`mesh.corrupt` unless every buffer of a glTF file holds the byteLength it declares (a GLB
    BIN chunk up to GLB_PADDING bytes more) and every buffer view lies inside its buffer, as
    the glTF 2.0 specification requires. A buffer file that does not exist is left to the
    parser's own error."""
    document = _gltf_json(data, path.suffix.lower())
    if document is None:
        return
    declared = []
    for index, buffer in enumerate(document.get("buffers") or []):
        length = buffer.get("byteLength") if isinstance(buffer, dict) else None
        if not isinstance(length, int) or length < 1:
            raise _corrupt(path, f"buffer {index} declares no valid byteLength", element)
        held = _held_bytes(buffer, index, data, path, root, element)
        padding = GLB_PADDING if buffer.get("uri") is None else 0
        if held is not None and not length <= held <= length + padding:
            raise _corrupt(
                path, f"buffer {index} declares {length} bytes but holds {held}", element
            )
        declared.append(length)
    for index, view in enumerate(document.get("bufferViews") or []):
        view = view if isinstance(view, dict) else {}
        buffer, offset, length = (
            view.get("buffer"),
            view.get("byteOffset", 0),
            view.get("byteLength"),
        )
        if not (
            isinstance(buffer, int)
            and 0 <= buffer < len(declared)
            and isinstance(offset, int)
            and isinstance(length, int)
            and offset >= 0
            and length >= 1
            and offset + length <= declared[buffer]
        ):
            raise _corrupt(path, f"buffer view {index} does not lie inside its buffer", element)


def _obj_arrays(data: bytes) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """(vertices, faces) of each part of an OBJ file with faces, from trimesh's OBJ reader
    without building a scene of it; None when the reader gives something else (a point cloud,
    a part placed by a transform), which the scene then handles."""
    import trimesh

    loaded = trimesh.exchange.obj.load_obj(io.BytesIO(data), skip_materials=True)
    if not isinstance(loaded.get("geometry"), dict) or any(
        "matrix" in edge for edge in loaded.get("graph") or ()
    ):
        return None
    return [
        (part["vertices"], part["faces"])
        for part in loaded["geometry"].values()
        if len(part.get("faces", ()))
    ]


MSH_HEADER = np.dtype("<i4")  # nvertex, nnormal, ntexcoord, nface


def _msh_counts(data: bytes) -> tuple[int, int, int, int] | None:
    """The four counts of a MuJoCo binary mesh's header, None when it has none."""
    if len(data) < 4 * MSH_HEADER.itemsize:
        return None
    return tuple(int(v) for v in np.frombuffer(data, MSH_HEADER, 4))


def _msh_arrays(data: bytes, path: Path, element) -> tuple[np.ndarray, np.ndarray, list]:
    """(vertices, faces, notes) of MuJoCo's legacy binary mesh (.msh): four int32 counts
    (vertices, normals, texture coordinates, faces), then float32 vertices (3 each), normals
    (3), texture coordinates (2) and int32 faces (3 vertex indices each), little-endian. A
    mesh without faces is its vertices' convex hull, as MuJoCo makes it."""
    counts = _msh_counts(data)
    if counts is None or min(counts) < 0:
        raise _corrupt(path, "its .msh header is not four non-negative counts", element)
    nvertex, nnormal, ntexcoord, nface = counts
    expected = 16 + 4 * (3 * nvertex + 3 * nnormal + 2 * ntexcoord + 3 * nface)
    if len(data) != expected:
        raise _corrupt(
            path, f"its .msh header announces {expected} bytes, the file has {len(data)}", element
        )
    vertices = np.frombuffer(data, "<f4", 3 * nvertex, 16).reshape(-1, 3).astype(float)
    start = 16 + 4 * (3 * nvertex + 3 * nnormal + 2 * ntexcoord)
    faces = np.frombuffer(data, "<i4", 3 * nface, start).reshape(-1, 3).astype(np.int64)
    notes = []
    if nface == 0 and nvertex >= 4:
        hull = _convex_hull(vertices)
        if hull is not None:
            found = {tuple(v): i for i, v in enumerate(vertices.tolist())}
            faces = np.array([[found[tuple(c)] for c in tri.tolist()] for tri in hull])
            notes.append(("mesh.hull_faces", f"{path.name}: no faces; its convex hull, as MuJoCo"))
    return vertices, faces, notes


def _parse(
    data: bytes, path: Path, root: Path | None, element: str | None = None
) -> tuple[np.ndarray, np.ndarray, tuple[tuple[str, str], ...]]:
    """(vertices in metres, faces, notes) of a mesh file's bytes."""
    import trimesh

    suffix = path.suffix.lower()
    if suffix == ".msh":
        vertices, faces, notes = _msh_arrays(data, path, element)
        return vertices, faces, tuple(notes)
    kwargs: dict = {"file_type": suffix[1:], "process": False}
    if suffix in (".obj", ".glb", ".gltf"):
        kwargs["skip_materials"] = True
    textures = None
    resolver_root = root if root is not None and is_inside(path, root) else path.parent
    if suffix == ".gltf":  # a mesh outside `root` came through a trusted package root
        kwargs["resolver"] = _ConfinedResolver(path, resolver_root)
    elif suffix == ".dae":
        kwargs["resolver"] = textures = _ColladaTextures(path, resolver_root)
    meter, notes = _collada_units(data, path, element) if suffix == ".dae" else (1.0, [])
    with _library_log.capture() as records:
        meshes = _obj_arrays(data) if suffix == ".obj" else None
        if meshes is None:
            scene = trimesh.load_scene(io.BytesIO(data), **kwargs)
            meshes = [(g.vertices, g.faces) for g in scene.dump() if isinstance(g, trimesh.Trimesh)]
    if textures is not None:
        notes += textures.notes()
    notes = tuple(notes + _log_notes(records, path))
    if not meshes:
        return np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64), notes
    vertices, faces, offset = [], [], 0
    for mesh_vertices, mesh_faces in meshes:
        vertices.append(np.asarray(mesh_vertices, dtype=float))
        faces.append(np.asarray(mesh_faces, dtype=np.int64) + offset)
        offset += len(mesh_vertices)
    vertices = np.concatenate(vertices)
    if meter != 1.0:
        vertices = vertices * meter
    return vertices, np.concatenate(faces), notes


def load_mesh(path: Path, *, root: Path | None = None, element: str | None = None) -> Mesh:
    """Load and check a mesh file (cached by content); raises `mesh.missing`,
    `mesh.format` or `mesh.corrupt`. Safe to call from several threads."""
    path = Path(path)
    _check_format(path, "mesh format", {"stage": "mesh", "path": str(path), "element": element})
    with _timed("load"):
        stat_key = _stat_key(path)
        known = _sha_by_stat.get(stat_key) if stat_key else None
        cached = _cached(known) if known else None
        if cached is not None:
            inputs.record(path)
            return cached
        data = read_mesh_bytes(path, element)
        sha = hashlib.sha256(data).hexdigest() + path.suffix.lower()
        if stat_key:
            _sha_by_stat[stat_key] = sha
        cached = _cached(sha)
        if cached is not None:
            return cached
        stored = _stored_arrays(sha)
        if stored is not None:
            vertices, faces, notes = stored
        else:
            check_triangles(data, path, element)
            if path.suffix.lower() in (".glb", ".gltf"):
                _check_gltf_buffers(data, path, root, element)
                _check_gltf_images(data, path, root, element)
            try:
                vertices, faces, notes = _parse(data, path, root, element)
            except AssetError:
                raise
            except Exception as exc:  # trimesh raises many kinds on bad input
                raise _corrupt(path, f"{type(exc).__name__}: {exc}", element) from exc
        if len(faces) == 0 or len(vertices) == 0:
            raise _corrupt(path, "it holds no triangles", element)
        if not np.all(np.isfinite(vertices)):
            raise _corrupt(path, "it has NaN or infinite vertex coordinates", element)
        if faces.min() < 0 or faces.max() >= len(vertices):
            raise _corrupt(path, "faces refer to vertices that do not exist", element)
        if stored is None:
            _store_arrays(sha, vertices, faces, notes)
        vertices.setflags(write=False)
        faces.setflags(write=False)
        return _store(Mesh(sha, vertices, faces, notes))


def _cached(sha: str) -> Mesh | None:
    with _lock:
        mesh = _cache.get(sha)
        if mesh is not None:
            _cache.move_to_end(sha)
        return mesh


def _store(mesh: Mesh) -> Mesh:
    """Keep `mesh` in the cache (evicting the least recently used above CACHE_BYTES)."""
    global _cache_bytes
    with _lock:
        if mesh.sha256 not in _cache:
            _cache[mesh.sha256] = mesh
            _cache_bytes += mesh.nbytes
        while _cache_bytes > CACHE_BYTES and len(_cache) > 1:
            _, old = _cache.popitem(last=False)
            _cache_bytes -= old.nbytes
        return _cache[mesh.sha256]


# --------------------------------------------------------------------------------- bounds
def geometry_bounds(
    geometry: Geometry, pose: np.ndarray, *, root: Path | None = None
) -> tuple[np.ndarray, np.ndarray] | None:
    """(min, max) corners of the axis-aligned box around `geometry` placed by `pose` (the world
    pose of its link); exact for every kind (a capsule or an ellipsoid: the triangle mesh it is
    written as, so that the written object reads back with the same bounds).
    None for a mesh without vertices."""
    frame = pose @ geometry.origin
    rot, centre = frame[:3, :3], frame[:3, 3]
    if geometry.kind in ("capsule", "ellipsoid"):  # the mesh it is written as: bounds stay put
        if geometry.kind == "capsule":
            points = _capsule_vertices(float(geometry.size[0]), float(geometry.size[1]))
        else:
            points = unit_sphere_vertices() * np.asarray(geometry.size[:3], dtype=float)
        with _timed("bounds"):
            points = points @ rot.T + centre
            return points.min(axis=0), points.max(axis=0)
    if geometry.kind == "mesh":
        mesh = load_mesh(Path(geometry.filename), root=root, element=geometry.name)
        with _timed("bounds"):
            points = (mesh.vertices * geometry.scale) @ rot.T + centre
            return points.min(axis=0), points.max(axis=0)
    size = geometry.size
    if geometry.kind == "box":
        half = np.abs(rot) @ (np.asarray(size[:3], dtype=float) / 2.0)
    elif geometry.kind == "sphere":
        half = np.full(3, size[0])
    else:  # cylinder along the local z axis: (radius, length)
        radius, length = size[0], size[1]
        axis = rot[:, 2]
        half = np.abs(axis) * length / 2.0 + radius * np.sqrt(np.clip(1.0 - axis**2, 0, 1))
    return centre - half, centre + half


# --------------------------------------------------------------------------------- mass
def _primitive_mass(geometry: Geometry, density: float):
    """(mass, inertia about the centre, in the shape frame) of a primitive; centre at origin."""
    size = geometry.size
    if geometry.kind == "box":
        a, b, c = size[:3]
        m = density * a * b * c
        return m, np.diag([b * b + c * c, a * a + c * c, a * a + b * b]) * m / 12.0
    if geometry.kind == "sphere":
        r = size[0]
        m = density * 4.0 / 3.0 * math.pi * r**3
        return m, np.eye(3) * 0.4 * m * r * r
    if geometry.kind == "ellipsoid":
        a, b, c = size[:3]
        m = density * 4.0 / 3.0 * math.pi * a * b * c
        return m, np.diag([b * b + c * c, a * a + c * c, a * a + b * b]) * m / 5.0
    r, length = size[0], size[1]
    m_cyl = density * math.pi * r * r * length
    ixx = m_cyl * (3 * r * r + length * length) / 12.0
    izz = m_cyl * r * r / 2.0
    if geometry.kind == "capsule":
        # Two hemispheres: centre of mass 3r/8 from the flat face; 83/320 m r^2 about it.
        m_hemi = density * 2.0 / 3.0 * math.pi * r**3
        d = length / 2.0 + 3.0 * r / 8.0
        ixx += 2.0 * (83.0 / 320.0 * m_hemi * r * r + m_hemi * d * d)
        izz += 2.0 * 0.4 * m_hemi * r * r
        m_cyl += 2.0 * m_hemi
    return m_cyl, np.diag([ixx, ixx, izz])


def _shell_mass(
    vertices: np.ndarray,
    faces: np.ndarray,
    density: float,
    thickness: float = SHELL_THICKNESS,
    method: str = "mesh_surface_shell",
):
    """Mass moments of a triangle surface as a shell of `thickness`."""
    tri = vertices[faces]
    areas = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    area = areas.sum()
    if not area > 0:
        return None
    areal = density * thickness
    mass = areal * area
    com = (areas[:, None] * tri.mean(axis=1)).sum(axis=0) / area
    # Second moment of a triangle about the origin: A/12 (sum v v^T + s s^T), s = sum of vertices.
    corner = tri - com
    total = corner.sum(axis=1)
    second = areal * np.einsum(
        "f,fij->ij",
        areas / 12.0,
        np.einsum("fvi,fvj->fij", corner, corner) + np.einsum("fi,fj->fij", total, total),
    )
    inertia = np.trace(second) * np.eye(3) - second
    return float(mass), com, inertia, method


def _mesh_mass(mesh: Mesh, scale: np.ndarray, density: float):
    """(mass, com, inertia about com, method) of a scaled mesh in its own frame, or None when it
    has neither volume nor area."""
    key = (mesh.sha256, tuple(float(s) for s in scale), float(density))
    if key in _mass_cache:
        return _mass_cache[key]
    found, result = _stored_mass(key)
    if not found:
        result = _computed_mass(mesh, scale, density)
        _store_mass(key, result)
    _mass_cache[key] = result
    return result


def _convex_hull(points: np.ndarray) -> np.ndarray | None:
    """The triangles of the convex hull of `points`, wound outwards, or None when qhull
    refuses them (flat or degenerate sets)."""
    from scipy.spatial import ConvexHull, QhullError

    try:
        hull = ConvexHull(points, qhull_options="QbB Pp Qt")
    except (QhullError, ValueError):
        return None
    triangles = points[hull.simplices]
    normals = np.cross(triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0])
    inward = np.einsum("ij,ij->i", normals, hull.equations[:, :3]) < 0
    triangles[inward] = triangles[inward][:, ::-1]
    return triangles


def _computed_mass(mesh: Mesh, scale: np.ndarray, density: float):
    import trimesh

    faces = mesh.faces if np.prod(scale) > 0 else mesh.faces[:, ::-1]
    result = None
    with np.errstate(all="ignore"):
        tm = trimesh.Trimesh(mesh.vertices * scale, faces, process=True)
        if tm.is_watertight and tm.is_winding_consistent and abs(tm.volume) > 0:
            if tm.volume < 0:
                tm.invert()
            method, solid = "mesh_volume", tm.triangles
        else:
            method, solid = "mesh_convex_hull", _convex_hull(np.asarray(tm.vertices))
        props = None if solid is None else trimesh.triangles.mass_properties(solid, density=density)
        if props is not None and props.volume > 0:
            result = (
                float(props.mass),
                np.array(props.center_mass),
                np.array(props.inertia),
                method,
            )
        elif len(tm.faces):
            result = _shell_mass(np.asarray(tm.vertices), np.asarray(tm.faces), density)
        if result is not None and not all(np.all(np.isfinite(v)) for v in result[:3]):
            result = None
    return result


def mass_properties(
    geometry: Geometry, *, density: float = MESH_DENSITY, root: Path | None = None
) -> tuple[float, np.ndarray, np.ndarray, str] | None:
    """(mass, com, inertia about the com, method) of a shape at uniform `density`, in the frame
    of the link holding it; None when the shape encloses no volume (flat or empty)."""
    if geometry.kind == "mesh":
        mesh = load_mesh(Path(geometry.filename), root=root, element=geometry.name)
        with _timed("mass"):
            found = _mesh_mass(mesh, geometry.scale, density)
        if found is None:
            return None
        mass, com, inertia, method = found
    else:
        mass, inertia = _primitive_mass(geometry, density)
        com, method = np.zeros(3), f"{geometry.kind}_formula"
        if not mass > 0:
            return None
    rot, shift = geometry.origin[:3, :3], geometry.origin[:3, 3]
    return mass, rot @ com + shift, rot @ inertia @ rot.T, method


def wall_mass_properties(
    geometry: Geometry,
    *,
    thickness: float = WALL_THICKNESS,
    density: float = MESH_DENSITY,
    root: Path | None = None,
) -> tuple[float, np.ndarray, np.ndarray, str] | None:
    """(mass, com, inertia about the com, "<kind>_wall_shell") of a shape weighed as walls of
    `thickness` (its surface area times the thickness, at `density`), in the frame of the link
    holding it: the model of a hollow part, such as a cabinet's carcass. Primitives are weighed
    by their triangulated surface. None when the shape has no area."""
    if geometry.kind == "mesh":
        mesh = load_mesh(Path(geometry.filename), root=root, element=geometry.name)
        vertices, faces = mesh.vertices * geometry.scale, mesh.faces
    else:
        surface = _primitive_surface(geometry)
        vertices, faces = np.asarray(surface.vertices), np.asarray(surface.faces)
    with _timed("mass"):
        found = _shell_mass(vertices, faces, density, thickness, f"{geometry.kind}_wall_shell")
    if found is None:
        return None
    mass, com, inertia, method = found
    rot, shift = geometry.origin[:3, :3], geometry.origin[:3, 3]
    return mass, rot @ com + shift, rot @ inertia @ rot.T, method


# --------------------------------------------------------------------------------- writing
_MTLLIB = re.compile(rb"^[ \t]*mtllib[ \t]+([^\r\n]*?)[ \t]*(\r?\n|\Z)", re.MULTILINE)
_TEXTURE_KEYS = {b"bump", b"disp", b"decal", b"refl", b"norm"}


class OutputNames:
    """Unique file names inside one object's mesh folder, stable per source file."""

    def __init__(self):
        self.by_source: dict[tuple[str, str], str] = {}
        self.used: set[str] = set()

    def name(self, source: Path | str, suffix: str, stem: str | None = None) -> tuple[str, bool]:
        """(name, new) for the output of `source` with `suffix`; new is False when already
        allocated (the file is then already written)."""
        key = (str(source), suffix)
        if key in self.by_source:
            return self.by_source[key], False
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", stem or Path(str(source)).stem) or "mesh"
        candidate, n = f"{stem}{suffix}", 0
        while candidate.lower() in self.used:
            n += 1
            candidate = f"{stem}_{n}{suffix}"
        self.used.add(candidate.lower())
        self.by_source[key] = candidate
        return candidate, True


def _confined_file(reference: str, base: Path, root: Path) -> Path | None:
    """`base/reference` when it exists and stays inside `root`; None when it does not exist.
    Raises `path.outside_root` when it leaves the root."""
    ref = reference.strip().strip('"')
    target = Path(ref) if os.path.isabs(ref) else base / ref
    if not is_inside(target, root):
        raise AssetError(
            f"material or texture {ref!r} is outside the source root {root}",
            code="path.outside_root",
            stage="resolve",
            path=str(base),
        )
    inputs.record(target)
    return target if not target.is_dir() and files.regular_status(target) else None


def _copy_mtl(
    mtl: Path, out_dir: Path, names: OutputNames, root: Path, changes: list[Change]
) -> str:
    """Copy a material library with its textures into `out_dir`; returns its output name."""
    name, new = names.name(mtl, ".mtl")
    if not new:
        return name
    lines = []
    for line in read_mesh_bytes(mtl, what="material library").splitlines():
        parts = line.split()
        key = parts[0].lower() if parts else b""
        if len(parts) >= 2 and (key.startswith(b"map_") or key in _TEXTURE_KEYS):
            reference = parts[-1].decode("utf-8", "replace")
            texture = _confined_file(reference, mtl.parent, root)
            if texture is None:
                changes.append(
                    Change(
                        "texture.missing",
                        f"texture {reference} named by {mtl.name} does not exist; "
                        "its material line was dropped",
                        element=f"file {mtl.name}",
                    )
                )
                continue
            tex_name, tex_new = names.name(texture, texture.suffix.lower())
            if tex_new:
                image = read_mesh_bytes(texture, what="texture")
                check_texture(image, texture, f"file {mtl.name}")
                (out_dir / tex_name).write_bytes(image)
            line = b" ".join([*parts[:-1], tex_name.encode()])
        lines.append(line)
    (out_dir / name).write_bytes(b"\n".join(lines) + b"\n")
    return name


def write_obj_copy(
    source: Path, out_dir: Path, names: OutputNames, root: Path, changes: list[Change]
) -> str:
    """Copy an OBJ file (geometry lines untouched) with its material libraries and textures,
    rewriting their references to the copied names; returns the OBJ's output name."""
    name, new = names.name(source, ".obj")
    if not new:
        return name

    def material(match: re.Match) -> bytes:
        reference = match.group(1).decode("utf-8", "replace")
        mtl = _confined_file(reference, source.parent, root)
        if mtl is None:
            changes.append(
                Change(
                    "mesh.material_missing",
                    f"material library {reference} named by {source.name} does not exist; the "
                    "reference was dropped",
                    element=f"file {source.name}",
                )
            )
            return b""
        copied = _copy_mtl(mtl, out_dir, names, root, changes)
        return b"mtllib " + copied.encode() + match.group(2)

    with _timed("write"):
        data = _MTLLIB.sub(material, read_mesh_bytes(source))
        completed = completed_texcoords(data)
        if completed is not None:
            data = completed
            changes.append(
                Change(
                    "mesh.texcoords_completed",
                    f"{source.name} has faces with texture coordinates and faces without "
                    "(MuJoCo then discards them all, with a warning): the faces without now "
                    "name a texture coordinate (0, 0) added first",
                    element=f"file {source.name}",
                )
            )
        (out_dir / name).write_bytes(data)
    return name


_FACE_WITHOUT_UV = re.compile(rb"^[ \t]*f[ \t]+[^/\s]+(\s|//)", re.MULTILINE)
_FACE_WITH_UV = re.compile(rb"^[ \t]*f[ \t]+[^/\s]+/[^/\s]", re.MULTILINE)


def completed_texcoords(data: bytes) -> bytes | None:
    """OBJ text where every face names a texture coordinate, when some do and some do not
    (None otherwise): a `vt 0 0` is added as the first texture coordinate, positive texture
    indices move up by one and faces without one name it."""
    if not (_FACE_WITHOUT_UV.search(data) and _FACE_WITH_UV.search(data)):
        return None
    out = [b"vt 0 0"]
    for line in data.splitlines():
        parts = line.split()
        if not parts or parts[0] != b"f":
            out.append(line)
            continue
        corners = []
        for token in parts[1:]:
            fields = token.split(b"/")
            uv = fields[1] if len(fields) > 1 else b""
            if not uv:
                uv = b"1"
            elif int(uv) > 0:
                uv = b"%d" % (int(uv) + 1)
            normal = b"/" + fields[2] if len(fields) > 2 else b""
            corners.append(fields[0] + b"/" + uv + normal)
        out.append(b"f " + b" ".join(corners))
    return b"\n".join(out) + b"\n"


def _obj_text(vertices: np.ndarray, faces: np.ndarray) -> str:
    """OBJ text of a triangle mesh; %.17g reads back to the same doubles."""
    v = ("v %.17g %.17g %.17g\n" * len(vertices)) % tuple(vertices.ravel().tolist())
    f = ("f %d %d %d\n" * len(faces)) % tuple((faces + 1).ravel().tolist())
    return v + f


def write_obj_converted(source: Path, out_dir: Path, names: OutputNames, root: Path) -> str:
    """Write a non-OBJ mesh file as an OBJ holding its triangles (coordinates written exactly);
    returns the output name."""
    name, new = names.name(source, ".obj")
    if new:
        mesh = load_mesh(source, root=root)
        with _timed("write"):
            stored = _disk_path(mesh.sha256, ".converted.obj")
            data = _disk_read(stored)
            if data is None:
                data = _obj_text(mesh.vertices, mesh.faces).encode("utf-8")
                _disk_write(stored, data)
            (out_dir / name).write_bytes(data)
    return name


def _primitive_surface(geometry: Geometry) -> trimesh.Trimesh:
    """The triangulated surface of a primitive, in its own frame."""
    import trimesh

    size = geometry.size
    if geometry.kind == "box":
        return trimesh.creation.box(extents=size)
    if geometry.kind == "cylinder":
        return trimesh.creation.cylinder(radius=size[0], height=size[1], sections=SPHERE_SECTIONS)
    if geometry.kind == "capsule":
        return capsule_trimesh(size[0], size[1])
    radii = (size[0],) * 3 if geometry.kind == "sphere" else size
    return trimesh.Trimesh(unit_sphere_vertices() * np.asarray(radii), _unit_sphere().faces)


@functools.lru_cache(maxsize=1024)
def _capsule_vertices(radius: float, length: float) -> np.ndarray:
    return np.asarray(capsule_trimesh(radius, length).vertices, dtype=float)


def capsule_trimesh(radius: float, length: float) -> trimesh.Trimesh:
    """A capsule along z: a cylinder of `length` capped by two hemispheres of `radius`."""
    import trimesh

    return trimesh.creation.capsule(
        height=length, radius=radius, count=[CAPSULE_SECTIONS, CAPSULE_SECTIONS]
    )


def generated_obj(vertices: np.ndarray, faces: np.ndarray) -> Path:
    """The path of an OBJ holding a mesh that a source gives as data, not as a file (MuJoCo
    inline vertices, height fields). Nothing is written: the OBJ text is kept in this process
    under a path in `GENERATED_FOLDER` (named by its SHA-256), which every reader here
    (`read_mesh_bytes`, so `load_mesh` and the OBJ copy into the object folder) serves from
    memory; an object is read, written and verified in one process."""
    text = _obj_text(np.asarray(vertices, dtype=float), np.asarray(faces, dtype=np.int64))
    data = text.encode("utf-8")
    path = GENERATED_FOLDER / f"{hashlib.sha256(data).hexdigest()}.obj"
    with _lock:
        _generated[str(path)] = data
    return path


def height_field_mesh(elevation: np.ndarray, size) -> tuple[np.ndarray, np.ndarray]:
    """(vertices, faces) of a closed MuJoCo height field: `elevation` (nrow, ncol) in [0, 1],
    `size` (x, y, z_top, z_bottom) as MuJoCo's `hfield_size`; row r lies at
    y = (2 r / (nrow - 1) - 1) size_y, column c at x = (2 c / (ncol - 1) - 1) size_x; the top
    at z = elevation * size_z, a flat bottom at z = -z_bottom, closed by walls."""
    rows, cols = elevation.shape
    x = (2.0 * np.arange(cols) / (cols - 1) - 1.0) * size[0]
    y = (2.0 * np.arange(rows) / (rows - 1) - 1.0) * size[1]
    gx, gy = np.meshgrid(x, y)
    top = np.column_stack([gx.ravel(), gy.ravel(), elevation.ravel() * size[2]])
    bottom = top.copy()
    bottom[:, 2] = -size[3]
    index = np.arange(rows * cols).reshape(rows, cols)
    a, b = index[:-1, :-1].ravel(), index[:-1, 1:].ravel()
    c, d = index[1:, :-1].ravel(), index[1:, 1:].ravel()
    up = np.concatenate([np.column_stack([a, b, d]), np.column_stack([a, d, c])])
    n = rows * cols
    down = up[:, ::-1] + n
    ring = np.concatenate([index[0, :], index[1:, -1], index[-1, -2::-1], index[-2:0:-1, 0]])
    start, end = ring, np.roll(ring, -1)
    walls = np.concatenate(
        [np.column_stack([start, start + n, end]), np.column_stack([end, start + n, end + n])]
    )
    return np.concatenate([top, bottom]), np.concatenate([up, down, walls])


@functools.lru_cache(maxsize=1)
def _unit_sphere() -> trimesh.Trimesh:
    import trimesh

    return trimesh.creation.uv_sphere(radius=1.0, count=[SPHERE_SECTIONS, SPHERE_SECTIONS])


def unit_sphere_vertices() -> np.ndarray:
    return np.asarray(_unit_sphere().vertices, dtype=float)


def write_unit_sphere_obj(out_dir: Path, names: OutputNames) -> str:
    """A unit sphere as a UV-sphere triangle mesh of `SPHERE_SECTIONS` sections (its vertices
    on the sphere; it encloses 99.6% of the ball's volume), written once per object: ellipsoids
    are this mesh scaled by their semi-axes."""
    name, new = names.name("sphere:unit", ".obj", stem="unit_sphere")
    if new:
        with _timed("write"):
            mesh = _unit_sphere()
            (out_dir / name).write_text(_obj_text(mesh.vertices, mesh.faces), encoding="utf-8")
    return name


def write_capsule_obj(radius: float, length: float, out_dir: Path, names: OutputNames) -> str:
    name, new = names.name(f"capsule:{radius!r}:{length!r}", ".obj", stem="capsule")
    if new:
        with _timed("write"):
            mesh = capsule_trimesh(radius, length)
            (out_dir / name).write_text(_obj_text(mesh.vertices, mesh.faces), encoding="utf-8")
    return name


# --------------------------------------------------------------------------------- collision
#: A collision mesh thinner than this (m, across its convex hull) is written as its convex hull
#: grown by this much along every axis: simulators that collide convex hulls (MuJoCo) refuse a
#: flat, coplanar or near-degenerate point set.
MIN_COLLISION_THICKNESS = SHELL_THICKNESS
_hulls: dict[tuple, tuple[np.ndarray, np.ndarray] | None] = {}
_thick_enough: set[tuple] = set()  # (content, scale) of meshes that collide as they are


def hull_width(points: np.ndarray) -> float:
    """The extent of `points` along their thinnest principal direction (0 when they do not
    span three dimensions)."""
    unique = np.unique(points, axis=0)
    if len(unique) < 4:
        return 0.0
    centred = unique - unique.mean(axis=0)
    direction = np.linalg.svd(centred, full_matrices=False)[2][-1]
    projected = centred @ direction
    return float(projected.max() - projected.min())


def inward_offset(
    normal: np.ndarray, mesh: Mesh, scale: np.ndarray, toward: np.ndarray
) -> np.ndarray:
    """The move (mesh units) by MIN_COLLISION_THICKNESS after `scale` across the plane of
    `normal` (mesh units), on the side of `toward` (a point in the mesh's frame, mesh units:
    its link's centre), so that thickening keeps the link's box."""
    direction = normal / scale  # a plane's normal after scaling
    direction /= np.linalg.norm(direction)
    if float(direction @ ((toward - mesh.vertices.mean(axis=0)) * scale)) < 0:
        direction = -direction
    return direction * MIN_COLLISION_THICKNESS / scale


def thickened_collision(
    mesh: Mesh, scale: np.ndarray, toward: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """(vertices, faces) of the convex hull of `mesh` and of its copy moved by
    `MIN_COLLISION_THICKNESS` across its thinnest direction, towards `toward` (mesh frame; in
    the mesh's own units, so that after `scale` it is that thick), repeated while the hull is
    still thinner (a needle); a point or segment is grown by that much in every axis instead.
    None when the mesh at `scale` is thick enough to collide as it is. The result is thick
    enough, so normalizing it again leaves it alone. Cached by content, scale and moves."""
    import trimesh

    scale = np.asarray(scale, dtype=float)
    thick_key = (mesh.sha256, tuple(scale.tolist()))
    if thick_key in _thick_enough:
        return None
    with _timed("mass"):
        if hull_width(mesh.vertices * scale) >= MIN_COLLISION_THICKNESS:
            _thick_enough.add(thick_key)
            return None
        points = np.unique(mesh.vertices, axis=0)
        moves = []
        for _ in range(3):  # a plate needs one move, a needle two
            if hull_width(points * scale) >= MIN_COLLISION_THICKNESS:
                break
            centred = points * scale - (points * scale).mean(axis=0)
            values, directions = np.linalg.svd(centred, full_matrices=False)[1:]
            if len(points) >= 3 and values[1] > FLAT_FRACTION * max(values[0], 1e-300):
                normal = directions[-1] * scale  # the thinnest direction, as a plane normal
                offsets = np.array([np.zeros(3), inward_offset(normal, mesh, scale, toward)])
            else:  # a point or a segment
                half = MIN_COLLISION_THICKNESS / 2.0 / np.abs(scale)
                offsets = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).reshape(3, -1).T * half
            moves.append(tuple(offsets.ravel().tolist()))
            points = np.unique((points[:, None, :] + offsets[None, :, :]).reshape(-1, 3), axis=0)
        key = (mesh.sha256, tuple(scale.tolist()), tuple(moves))
        if key not in _hulls:
            hull = trimesh.convex.convex_hull(points)
            _hulls[key] = (np.asarray(hull.vertices, dtype=float), np.asarray(hull.faces))
        return _hulls[key]


def write_collision_obj(
    vertices: np.ndarray, faces: np.ndarray, out_dir: Path, names: OutputNames, key: str, stem: str
) -> str:
    """Write a generated collision mesh (`key` identifies it) as OBJ; returns the output name."""
    name, new = names.name(f"collision:{key}", ".obj", stem=f"{stem}_collision")
    if new:
        with _timed("write"):
            (out_dir / name).write_text(_obj_text(vertices, faces), encoding="utf-8")
    return name


#: A mesh whose points lie in one plane to within this fraction of its size is flat: MuJoCo
#: cannot compute its volume (it refuses the file), so a flat visual is written as two layers.
FLAT_FRACTION = 1e-9


_flat: dict[str, np.ndarray | None] = {}


def flat_normal(mesh: Mesh) -> np.ndarray | None:
    """The unit normal of a mesh whose points are coplanar (or fewer than 4), else None
    (cached by content)."""
    if mesh.sha256 not in _flat:
        with _timed("mass"):
            _flat[mesh.sha256] = _flat_normal(mesh.vertices)
    return _flat[mesh.sha256]


def _flat_normal(vertices: np.ndarray) -> np.ndarray | None:
    unique = np.unique(vertices, axis=0)
    size = float(np.max(unique.max(axis=0) - unique.min(axis=0))) if len(unique) else 0.0
    if len(unique) >= 4 and hull_width(unique) > FLAT_FRACTION * size:
        return None
    centred = unique - unique.mean(axis=0)
    if len(unique) < 3:  # a point or a segment: any direction across it
        direction = centred[-1] if len(unique) == 2 else np.array([0.0, 0.0, 1.0])
        normal = np.cross(direction, [1.0, 0.0, 0.0])
        if np.linalg.norm(normal) < 1e-12:
            normal = np.cross(direction, [0.0, 1.0, 0.0])
        return normal / np.linalg.norm(normal)
    return np.linalg.svd(centred, full_matrices=False)[2][-1]


def _vertex_ref(token: bytes, count: int) -> int:
    """1-based absolute vertex index of an OBJ index token (negative ones count back)."""
    index = int(token)
    return count + index + 1 if index < 0 else index


def doubled_obj(data: bytes, offset: np.ndarray) -> bytes:
    """OBJ text of a flat mesh as two layers, as it is and moved by `offset`, the second with
    reversed faces: every other line (materials, texture coordinates, normals, groups) as it
    was, so it looks the same; vertex k becomes vertices 2k - 1 (front) and 2k (back)."""
    out: list[bytes] = []
    count = 0
    for line in data.splitlines():
        parts = line.split()
        key = parts[0] if parts else b""
        if key == b"v" and len(parts) >= 4:
            point = np.array([float(p) for p in parts[1:4]])
            rest = b" ".join(parts[4:])
            for shifted in (point, point + offset):
                text = "v {:.17g} {:.17g} {:.17g}".format(*shifted).encode()
                out.append(text + (b" " + rest if rest else b""))
            count += 1
        elif key == b"f" and len(parts) >= 4:
            corners = []
            for token in parts[1:]:
                head, sep, tail = token.partition(b"/")
                k = _vertex_ref(head, count)
                corners.append((2 * k - 1, 2 * k, sep + tail))
            out.append(b"f " + b" ".join(b"%d%s" % (a, t) for a, _, t in corners))
            out.append(b"f " + b" ".join(b"%d%s" % (b, t) for _, b, t in reversed(corners)))
        elif key in (b"l", b"p"):
            refs = [b"%d" % (2 * _vertex_ref(t.partition(b"/")[0], count) - 1) for t in parts[1:]]
            out.append(key + b" " + b" ".join(refs))
        else:
            out.append(line)
    return b"\n".join(out) + b"\n"
