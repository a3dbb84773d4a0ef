"""Meshes of primitive shapes (capsules, spheres) and of meshes a source gives as data
(inline vertices, height fields)."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import numpy as np
import trimesh

from normalize.meshes import store
from normalize.meshes.store import GENERATED_FOLDER
from normalize.meshes.writing import OutputNames, _obj_text, write_generated_obj
from normalize.model import Geometry
from normalize.timing import timed

CAPSULE_SECTIONS = 32
SPHERE_SECTIONS = 32


def _primitive_surface(geometry: Geometry) -> trimesh.Trimesh:
    """The triangulated surface of a primitive, in its own frame."""
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
    with store._lock:
        store._generated[str(path)] = data
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
    return trimesh.creation.uv_sphere(radius=1.0, count=[SPHERE_SECTIONS, SPHERE_SECTIONS])


def unit_sphere_vertices() -> np.ndarray:
    return np.asarray(_unit_sphere().vertices, dtype=float)


def write_unit_sphere_obj(out_dir: Path, names: OutputNames) -> str:
    """A unit sphere as a UV-sphere triangle mesh of `SPHERE_SECTIONS` sections (its vertices
    on the sphere; it encloses 99.6% of the ball's volume), written once per object: ellipsoids
    are this mesh scaled by their semi-axes."""
    name, new = names.name("sphere:unit", ".obj", stem="unit_sphere")
    if new:
        with timed("meshes"):
            mesh = _unit_sphere()
            write_generated_obj(out_dir / name, mesh.vertices, mesh.faces)
    return name


def write_capsule_obj(radius: float, length: float, out_dir: Path, names: OutputNames) -> str:
    name, new = names.name(f"capsule:{radius!r}:{length!r}", ".obj", stem="capsule")
    if new:
        with timed("meshes"):
            mesh = capsule_trimesh(radius, length)
            write_generated_obj(out_dir / name, mesh.vertices, mesh.faces)
    return name
