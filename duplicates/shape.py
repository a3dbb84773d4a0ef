"""Shape evidence: a symmetric Chamfer distance between seeded surface samples of two written
objects at rest, scale-free, under the quarter turns about z the convention leaves open.

The convention places every object's rest box centred on the z axis with its bottom at z = 0
(docs/convention.md), so two exports of one object differ only by a yaw of a multiple of 90
degrees (which way the source called "front") and by a size factor (a unit fixed upstream, or
not). Each object is sampled once: SAMPLES points on its surface (every link's visuals, else its
collisions, as the placement uses), area-weighted with a fixed seed, divided by the diagonal of
its rest box. The distance from A to B is the mean distance of A's first QUERY points to their
nearest neighbour among all of B's points (scipy cKDTree); the Chamfer distance is the mean of
both directions, minimized over the four yaws. Sampling noise for two samples of one surface is
about 0.005 (in diagonals) on the generated library; SHAPE_TOLERANCE is the threshold.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import trimesh
from scipy.spatial import cKDTree

from normalize.convention import link_shapes
from normalize.meshes import load_mesh
from normalize.model import Geometry
from normalize.urdf import read_object

SAMPLES = 32768
QUERY = 2048
SEED = 20_181
SHAPE_TOLERANCE = 0.009
#: For two objects built of the same mesh files: the parts may rest in other poses.
POSED_TOLERANCE = 0.08
YAWS = (0, 90, 180, 270)


@dataclass(frozen=True)
class Sample:
    """Surface points of one object divided by its box diagonal, and their search tree."""

    points: np.ndarray  # (SAMPLES, 3)
    tree: cKDTree
    diagonal: float
    mesh_uses: tuple[tuple[str, float], ...]  # (mesh file relative to the folder, its scale)


@lru_cache(maxsize=64)
def _primitive(kind: str, size: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    if kind == "box":
        mesh = trimesh.creation.box(extents=size[:3])
    elif kind == "sphere":
        mesh = trimesh.creation.icosphere(subdivisions=2, radius=size[0])
    elif kind == "cylinder":
        mesh = trimesh.creation.cylinder(radius=size[0], height=size[1], sections=32)
    else:  # capsule: radius, length of the cylinder part
        mesh = trimesh.creation.capsule(radius=size[0], height=size[1], count=[16, 16])
    return np.asarray(mesh.vertices, dtype=float), np.asarray(mesh.faces, dtype=np.int64)


def _triangles(g: Geometry, folder: Path, pose: np.ndarray) -> np.ndarray:
    """(T, 3, 3) world-frame triangles of one shape."""
    frame = pose @ g.origin
    if g.kind == "mesh":
        mesh = load_mesh(folder / g.filename, root=folder, element=g.name)
        vertices, faces = mesh.vertices * g.scale, mesh.faces
    else:
        vertices, faces = _primitive(g.kind, g.size)
    world = vertices @ frame[:3, :3].T + frame[:3, 3]
    return world[faces]


def surface_sample(urdf: Path, diagonal: float, count: int = SAMPLES, seed: int = SEED) -> Sample:
    """`count` seeded, area-weighted surface points of the written object at rest divided by
    `diagonal` (its rest box's). An object without shapes gives its link origins."""
    urdf = Path(urdf)
    obj = read_object(urdf)
    poses = obj.link_poses()
    parts = [
        _triangles(g, urdf.parent, poses[link.name])
        for link in obj.links
        for g in link_shapes(link)
    ]
    scale = max(diagonal, 1e-12)
    rng = np.random.default_rng(seed)
    if parts:
        tris = np.concatenate(parts)
        area = 0.5 * np.linalg.norm(
            np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0]), axis=1
        )
    if not parts or area.sum() <= 0:
        points = np.array([p[:3, 3] for p in poses.values()], dtype=float)
        points = points[rng.integers(len(points), size=count)]
    else:
        chosen = rng.choice(len(tris), size=count, p=area / area.sum())
        r1, r2 = rng.random(count), rng.random(count)
        s = np.sqrt(r1)
        t = tris[chosen]
        points = (
            (1 - s)[:, None] * t[:, 0]
            + (s * (1 - r2))[:, None] * t[:, 1]
            + (s * r2)[:, None] * t[:, 2]
        )
    points = points / scale
    uses = tuple(
        sorted(
            (g.filename, float(np.mean(g.scale)))
            for link in obj.links
            for g in link_shapes(link)
            if g.kind == "mesh"
        )
    )
    return Sample(points, cKDTree(points), scale, uses)


def yaw_matrix(degrees: int) -> np.ndarray:
    """The exact rotation by a multiple of 90 degrees about z."""
    c, s = {0: (1, 0), 90: (0, 1), 180: (-1, 0), 270: (0, -1)}[degrees % 360]
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]], dtype=float)


def chamfer(a: Sample, b: Sample, yaw: int, size: float = 1.0) -> float:
    """Symmetric Chamfer distance (in B's box diagonals) between A turned by `yaw`, its points
    multiplied by `size`, and B."""
    rot = yaw_matrix(yaw) * size
    a_to_b, _ = b.tree.query(a.points[:QUERY] @ rot.T)
    b_to_a, _ = a.tree.query(b.points[:QUERY] @ np.linalg.inv(rot).T)
    return 0.5 * (float(a_to_b.mean()) + float(b_to_a.mean()) * size)


def shape_distances(a: Sample, b: Sample, size: float = 1.0) -> dict[int, float]:
    """yaw (degrees) -> Chamfer distance, for each of the four quarter turns. `size`: A's
    points in B's units (1: both scale-free)."""
    return {yaw: chamfer(a, b, yaw, size) for yaw in YAWS}
