"""Mesh files parsed into vertices and faces (trimesh; MuJoCo's .msh), COLLADA units and
textures, what trimesh logs kept as notes, and `load_mesh`."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import logging
import math
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import trimesh

from normalize import inputs
from normalize.errors import AssetError
from normalize.meshes import store
from normalize.meshes.convex import _convex_hull
from normalize.meshes.limits import (
    _check_gltf_buffers,
    _check_gltf_images,
    _msh_counts,
    check_triangles,
)
from normalize.meshes.reading import _check_format, _corrupt, _stat_key, read_mesh_bytes
from normalize.meshes.store import Mesh, _cached, _store, _store_arrays, _stored_arrays
from normalize.paths import is_inside
from normalize.timing import timed


class _ConfinedResolver(trimesh.resolvers.Resolver):
    """Lets a GLTF read its buffers and images only from beside it, inside `root`."""

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


class _LibraryLog(logging.Handler):
    """What trimesh logs. While a thread parses a mesh (`capture`), its warnings (with the
    failures they carry) are kept, to become the mesh's notes (recorded changes) instead of
    tracebacks on stderr; outside a parse, warnings go on as one line to this package's logger,
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


_log = logging.getLogger(__package__)
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
    that exists inside the root is not needed (`_TextureNotRead`); one that does not is
    `_TextureMissing`. trimesh catches both and carries on. Each is recorded, so it becomes one
    of the mesh's `references` (`_texture_notes` looks for them on every load)."""

    def get(self, name):
        target = self.path.parent / name
        inputs.record(target)
        if is_inside(target, self.root) and target.is_file():
            raise _TextureNotRead(name)
        raise _TextureMissing(name)


def _confinement(path: Path, root: Path | None) -> Path:
    """Where the files a mesh names must be: the source root, or the mesh's folder for a mesh
    outside it (one that came through a trusted package root)."""
    return root if root is not None and is_inside(path, root) else path.parent


def _texture_notes(path: Path, root: Path | None, mesh: Mesh) -> tuple[tuple[str, str], ...]:
    """`texture.missing` for each texture a COLLADA file names that does not exist inside the
    source root, looked for now: a mesh cached by content may lie beside other files, and a
    texture may have been added or removed since it was parsed."""
    confined_to = _confinement(path, root)
    return tuple(
        (
            "texture.missing",
            f"{path.name}: texture {Path(reference).as_posix()} does not exist inside the source "
            "root; the material loses it",
        )
        for reference in mesh.references
        if not (
            is_inside(path.parent / reference, confined_to) and (path.parent / reference).is_file()
        )
    )


def _obj_arrays(data: bytes) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """(vertices, faces) of each part of an OBJ file with faces, from trimesh's OBJ reader
    without building a scene of it; None when the reader gives something else (a point cloud,
    a part placed by a transform), which the scene then handles."""
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
    suffix = path.suffix.lower()
    if suffix == ".msh":
        vertices, faces, notes = _msh_arrays(data, path, element)
        return vertices, faces, tuple(notes)
    kwargs: dict = {"file_type": suffix[1:], "process": False}
    if suffix in (".obj", ".glb", ".gltf"):
        kwargs["skip_materials"] = True
    if suffix == ".gltf":
        kwargs["resolver"] = _ConfinedResolver(path, _confinement(path, root))
    elif suffix == ".dae":
        kwargs["resolver"] = _ColladaTextures(path, _confinement(path, root))
    meter, notes = _collada_units(data, path, element) if suffix == ".dae" else (1.0, [])
    with _library_log.capture() as records:
        meshes = _obj_arrays(data) if suffix == ".obj" else None
        if meshes is None:
            scene = trimesh.load_scene(io.BytesIO(data), **kwargs)
            meshes = [(g.vertices, g.faces) for g in scene.dump() if isinstance(g, trimesh.Trimesh)]
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
    `mesh.format` or `mesh.corrupt`. Safe to call from several threads. A cached mesh records
    the same inputs as a parse: the file and the files parsing it read (`Mesh.references`)."""
    path = Path(path)
    _check_format(path, "mesh format", {"stage": "mesh", "path": str(path), "element": element})
    with timed("meshes"):
        stat_key = _stat_key(path)
        known = store._sha_by_stat.get(stat_key) if stat_key else None
        mesh = _cached(known) if known else None
        if mesh is None:
            mesh = _read(path, root, element, stat_key)
        else:
            inputs.record(path)
        for reference in mesh.references:
            inputs.record(path.parent / reference)
        if path.suffix.lower() == ".dae":
            missing = _texture_notes(path, root, mesh)
            if missing:
                mesh = dataclasses.replace(mesh, notes=mesh.notes + missing)
        return mesh


def _read(path: Path, root: Path | None, element: str | None, stat_key: tuple | None) -> Mesh:
    """The mesh of a file read now: from the caches by its content, else parsed and checked."""
    with inputs.noting() as read:
        data = read_mesh_bytes(path, element)
        sha = hashlib.sha256(data).hexdigest() + path.suffix.lower()
        if stat_key:
            store._sha_by_stat[stat_key] = sha
        cached = _cached(sha)
        if cached is not None:
            return cached
        stored = _stored_arrays(sha)
        if stored is None:
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
    if stored is not None:
        _check_arrays(stored, path, element)
        return _store(stored)
    # relative to the folder: a file with the same content elsewhere reads its own
    folder, itself = os.path.abspath(path.parent), os.path.abspath(path)
    references = tuple(sorted(os.path.relpath(p, folder) for p in read if p != itself))
    kept = not (references and path.suffix.lower() in (".glb", ".gltf"))
    if not kept:  # its buffers and images count too: identified by them, never cached
        others = sorted(p for p in read if p != itself)
        digests = [sha] + [(os.path.relpath(p, folder), read.digests.get(p)) for p in others]
        sha = hashlib.sha256(json.dumps(digests).encode()).hexdigest() + path.suffix.lower()
    mesh = Mesh(sha, vertices, faces, notes, references)
    _check_arrays(mesh, path, element)
    vertices.setflags(write=False)
    faces.setflags(write=False)
    if not kept:
        return mesh
    _store_arrays(mesh)
    return _store(mesh)


def _check_arrays(mesh: Mesh, path: Path, element: str | None) -> None:
    if len(mesh.faces) == 0 or len(mesh.vertices) == 0:
        raise _corrupt(path, "it holds no triangles", element)
    if not np.all(np.isfinite(mesh.vertices)):
        raise _corrupt(path, "it has NaN or infinite vertex coordinates", element)
    if mesh.faces.min() < 0 or mesh.faces.max() >= len(mesh.vertices):
        raise _corrupt(path, "faces refer to vertices that do not exist", element)
