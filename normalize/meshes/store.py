"""Loaded meshes kept in this process (`Mesh`, by content) and on disk (`disk_cache`)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import trimesh

from normalize.changes import Change

CACHE_BYTES = 256 * 1024 * 1024  # arrays kept in memory while one object is computed
#: arrays kept from one object to the next (`finish_object`); the disk store has the rest, so a
#: worker's memory does not grow with the number of objects it computes
KEPT_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True, eq=False)
class Mesh:
    """A loaded mesh: float64 vertices (n, 3), int faces (m, 3), file content hash, and
    `references`: the files parsing it read or looked for besides it (COLLADA textures, GLTF
    buffers and images), relative to its folder, recorded again on every cache hit."""

    sha256: str
    vertices: np.ndarray
    faces: np.ndarray
    notes: tuple[tuple[str, str], ...] = ()
    references: tuple[str, ...] = ()

    def changes(self, element: str | None = None) -> list[Change]:
        """The notes taken while reading the file, as recorded changes."""
        return [Change(code, message, element=element) for code, message in self.notes]

    @property
    def nbytes(self) -> int:
        return self.vertices.nbytes + self.faces.nbytes


class Recent(OrderedDict):
    """A dict keeping only its `size` most recently stored or read entries: what a worker
    process remembers across objects stays bounded however many objects it computes."""

    def __init__(self, size: int):
        super().__init__()
        self.size = size

    def __getitem__(self, key):
        value = super().__getitem__(key)
        self.move_to_end(key)
        return value

    def get(self, key, default=None):
        if key not in self:
            return default
        self.move_to_end(key)
        return super().__getitem__(key)

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


#: Entries of the small per-mesh caches (mass properties, hashes by file status, hulls, flat
#: normals): tens of bytes to a few kB each.
RECENT_MESHES = 16384

_lock = threading.Lock()
_cache: OrderedDict[str, Mesh] = OrderedDict()
_cache_bytes = 0
_mass_cache: Recent = Recent(RECENT_MESHES)
#: Meshes a source gives as data (`generated_obj`): path -> OBJ bytes, never on disk; kept
#: while their object is computed (`finish_object`).
GENERATED_FOLDER = Path("/arena-generated-meshes")
_generated: dict[str, bytes] = {}
_sha_by_stat: Recent = Recent(RECENT_MESHES)


def finish_object() -> None:
    """Called once an object is computed: drop the meshes its source gave as data, and the
    loaded meshes above KEPT_BYTES (`trim_cache`)."""
    with _lock:
        _generated.clear()
    trim_cache()


def trim_cache() -> None:
    """Drop the least recently used loaded meshes above KEPT_BYTES: what a process keeps from
    one object to the next (the disk store keeps the rest)."""
    with _lock:
        _evict(KEPT_BYTES)


def _evict(limit: int) -> None:
    """Drop the least recently used loaded meshes until at most `limit` bytes (one is kept)."""
    global _cache_bytes
    while _cache_bytes > limit and len(_cache) > 1:
        _, old = _cache.popitem(last=False)
        _cache_bytes -= old.nbytes


def clear_cache() -> None:
    global _cache_bytes
    with _lock:
        _cache.clear()
        _mass_cache.clear()
        _generated.clear()
        _sha_by_stat.clear()
        _cache_bytes = 0


DISK_FORMAT = 3
_DIGEST_BYTES = 32
#: one mesh store for every build, cache, `arena normalize` and `arena validate` that sees it
SHARED_STORE_VARIABLE = "ARENA_MESH_STORE"
_OUTSIDE_BLOCKS = object()  # no `disk_cache` block is active: $ARENA_MESH_STORE decides
_disk: Path | None | object = _OUTSIDE_BLOCKS  # where parsed meshes and mass properties go


@functools.cache
def _code_key() -> str:
    """What stored entries depend on besides file content: every module of this package (by
    name) and trimesh."""
    h = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(trimesh.__version__.encode())
    return h.hexdigest()[:16]


def shared_store() -> Path | None:
    """The mesh store named by $ARENA_MESH_STORE, if set: the store outside `disk_cache` blocks
    (`arena validate`, `arena normalize`, a test normalizing one object)."""
    folder = os.environ.get(SHARED_STORE_VARIABLE)
    return Path(folder).absolute() if folder else None  # worker processes may start elsewhere


@contextmanager
def disk_cache(folder: Path | None) -> Iterator[None]:
    """Inside the block, store parsed meshes and mass properties under `folder` as well (None:
    in memory only); outside any block, under $ARENA_MESH_STORE when set. Process-wide: meant
    for worker processes running one object at a time."""
    global _disk
    previous = _disk
    _disk = Path(folder) / f"v{DISK_FORMAT}-{_code_key()}" if folder is not None else None
    try:
        yield
    finally:
        _disk = previous


def _disk_path(sha: str, suffix: str) -> Path | None:
    folder = _disk
    if folder is _OUTSIDE_BLOCKS:
        shared = shared_store()
        folder = shared / f"v{DISK_FORMAT}-{_code_key()}" if shared is not None else None
    if folder is None or sha.endswith(".gltf"):
        return None
    return folder / sha[:2] / f"{sha}{suffix}"


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


def _stored_arrays(sha: str) -> Mesh | None:
    """A parsed mesh from the disk store: a JSON line (counts, notes and references), then the
    vertices (float64) and faces (int64), little-endian."""
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
    notes = tuple(tuple(note) for note in stored["notes"])
    return Mesh(sha, vertices, faces, notes, tuple(stored["references"]))


def _store_arrays(mesh: Mesh) -> None:
    path = _disk_path(mesh.sha256, ".arrays")
    if path is not None:
        header = {
            "vertices": len(mesh.vertices),
            "faces": len(mesh.faces),
            "notes": mesh.notes,
            "references": mesh.references,
        }
        body = b"".join(
            [
                json.dumps(header).encode() + b"\n",
                np.ascontiguousarray(mesh.vertices, dtype="<f8").tobytes(),
                np.ascontiguousarray(mesh.faces, dtype="<i8").tobytes(),
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
        _evict(CACHE_BYTES)
        return _cache[mesh.sha256]
