"""The axis-aligned box of a shape placed in the world."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from normalize.meshes.loading import load_mesh
from normalize.meshes.primitives import _capsule_vertices, unit_sphere_vertices
from normalize.model import Geometry
from normalize.timing import timed


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
        with timed("meshes"):
            points = points @ rot.T + centre
            return points.min(axis=0), points.max(axis=0)
    if geometry.kind == "mesh":
        mesh = load_mesh(Path(geometry.filename), root=root, element=geometry.name)
        with timed("meshes"):
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
