"""Shapes as point sets, for comparing readings of one object: primitives sampled on their
surface, meshes by their vertices (large ones by their convex hull, computed once per mesh
content), all moved into world space by link poses."""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
from scipy.spatial import ConvexHull, QhullError

from normalize.convention import link_shapes
from normalize.meshes.distinct import distinct_rows

PRIMITIVE_SAMPLES = 24


def _ring(radius: float, z: float, n: int = PRIMITIVE_SAMPLES) -> np.ndarray:
    angle = np.linspace(0.0, 2.0 * math.pi, n, endpoint=False)
    return np.column_stack([radius * np.cos(angle), radius * np.sin(angle), np.full(n, z)])


def _sphere(radius: float) -> np.ndarray:
    rings = [_ring(radius * math.sin(t), radius * math.cos(t)) for t in np.linspace(0, math.pi, 9)]
    return np.concatenate(rings)


def shape_points(kind: str, size) -> np.ndarray:
    """Points on a primitive in its own frame (sizes as in the canonical model: box full
    extents, sphere radius, cylinder and capsule radius and length, ellipsoid semi-axes)."""
    if kind == "box":
        half = np.asarray(size[:3], float) / 2.0
        corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)])
        return corners * half
    if kind == "sphere":
        return _sphere(size[0])
    if kind == "ellipsoid":
        return _sphere(1.0) * np.asarray(size[:3], float)
    radius, length = size[0], size[1]
    ends = np.concatenate([_ring(radius, -length / 2), _ring(radius, length / 2)])
    if kind == "capsule":
        cap = _sphere(radius)
        ends = np.concatenate([ends, cap + [0, 0, length / 2], cap - [0, 0, length / 2]])
    return ends


_HULLS: OrderedDict[str, np.ndarray] = OrderedDict()
MAX_HULLS = 4096
HULL_ABOVE = 64  # vertices: smaller point sets are used as they are


def hull_points(key: str, vertices: np.ndarray) -> np.ndarray:
    """The vertices of the convex hull of `vertices` (cached under `key`, e.g. a mesh's content
    hash): a rigid or linear map of them has the same bounding box as the whole set, at a
    fraction of the points. Flat or degenerate sets are kept whole."""
    if len(vertices) <= HULL_ABOVE:
        return vertices
    hull = _HULLS.get(key)
    if hull is None:
        try:
            hull = vertices[ConvexHull(vertices).vertices]
        except QhullError:  # flat: every point may be extreme
            hull = distinct_rows(vertices)
        _HULLS[key] = hull
        while len(_HULLS) > MAX_HULLS:
            _HULLS.popitem(last=False)
    else:
        _HULLS.move_to_end(key)
    return hull


def mesh_points(mesh, scale) -> np.ndarray:
    """Hull points of a loaded mesh (`normalize.meshes.Mesh`) at a per-axis scale."""
    return hull_points(mesh.sha256, np.asarray(mesh.vertices, float)) * scale


def _moved(points: np.ndarray, pose: np.ndarray) -> np.ndarray:
    return points @ pose[:3, :3].T + pose[:3, 3]


def shapes_points(shapes, meshes: dict) -> np.ndarray | None:
    """Points of `shapes` in their link's frame (meshes from `meshes`, by filename; a mesh not
    there is left out); None when there are none."""
    parts = []
    for g in shapes:
        if g.kind == "mesh":
            mesh = meshes.get(g.filename)
            if mesh is None:
                continue
            local = mesh_points(mesh, g.scale)
        else:
            local = shape_points(g.kind, g.size)
        parts.append(_moved(local, g.origin))
    return np.concatenate(parts) if parts else None


def canonical_points(obj, meshes: dict) -> dict[str, np.ndarray]:
    """Per link of a read-back object, points of the shapes standing for it, in its frame."""
    found = {link.name: shapes_points(link_shapes(link), meshes) for link in obj.links}
    return {name: points for name, points in found.items() if points is not None}


def _box(points: np.ndarray) -> np.ndarray:
    return np.stack([points.min(axis=0), points.max(axis=0)])
