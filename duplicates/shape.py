"""Shape evidence: a symmetric Chamfer distance between seeded surface samples of two written
objects at rest, scale-free, under the quarter turns about z the convention leaves open.

The convention places every object's rest box centred on the z axis with its bottom at z = 0
(docs/convention.md), so two exports of one object differ only by a yaw of a multiple of 90
degrees (which way the source called "front") and by a size factor (a unit fixed upstream, or
not). Each object is read once (`signature`, with the mesh files standing for its links) and
sampled once: SAMPLES points on its surface (every link's visuals, else its
collisions, as the placement uses), area-weighted with a fixed seed, divided by the diagonal of
its rest box. The distance from A to B is the mean distance of A's first QUERY points to their
nearest neighbour among all of B's points (scipy cKDTree), each capped at CAP; the Chamfer
distance is the mean of both directions, minimized over the four yaws. Two samples of one
surface measure below 0.003 (in diagonals: planted duplicates of the generated library, and
the real xArm7 as URDF and MJCF: 0.0029), while near-misses measure 0.0045 and more (a
cabinet with one drawer more, the URDFormer cabinets built from one set of parts: 0.010);
SHAPE_TOLERANCE lies between. Objects built of the same mesh files
(`duplicates.stage.mesh_match`) are compared at the size their mesh scales give and may rest
in other poses (a door frame turned by the source): POSED_TOLERANCE.
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
COARSE = 256
SEED = 20_181
SHAPE_TOLERANCE = 0.004
#: For two objects built of the same mesh files: the parts may rest in other poses.
POSED_TOLERANCE = 0.05
REFINE_BELOW = 0.06  # coarse distances above this are final (beyond every tolerance)
YAWS = (0, 90, 180, 270)
#: Nearest-neighbour distances are capped here (in diagonals): far points cost the search most
#: and say only "different"; the Chamfer distance is the mean of the capped distances.
CAP = 0.1


@dataclass(frozen=True)
class Sample:
    """Surface points of one object divided by its box diagonal, and their search tree."""

    points: np.ndarray  # (SAMPLES, 3)
    tree: cKDTree
    diagonal: float


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


@dataclass(frozen=True)
class Signature:
    """What the shape evidence needs of one object, read once: its surface sample, the mesh
    files standing for its links (`mesh_uses`) and the vertex count of each."""

    sample: Sample
    uses: tuple[tuple[str, float], ...]
    vertices: dict[str, int]  # mesh file (relative to the object folder) -> vertex count


def _triangles(g: Geometry, folder: Path, pose: np.ndarray, vertices: dict, meshes) -> np.ndarray:
    """(T, 3, 3) world-frame triangles of one shape; a mesh's vertex count goes to `vertices`.
    `meshes`: a `MeshCache` or None."""
    frame = pose @ g.origin
    if g.kind == "mesh":
        loaded = meshes.get(g.filename) if meshes is not None else None
        if loaded is None:
            mesh = load_mesh(folder / g.filename, root=folder, element=g.name)
            loaded = (np.asarray(mesh.vertices, dtype=float), np.asarray(mesh.faces))
            if meshes is not None:
                meshes.put(g.filename, loaded)
        vertices[g.filename] = len(loaded[0])
        points, faces = loaded[0] * g.scale, loaded[1]
    else:
        points, faces = _primitive(g.kind, g.size)
    world = points @ frame[:3, :3].T + frame[:3, 3]
    return world[faces]


class MeshCache:
    """Loaded meshes by content digest, shared by the objects of one stage run (a mesh file
    several objects ship, such as a re-exported object's, is read once)."""

    def __init__(self):
        self.by_digest: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.digests: dict[str, str] = {}  # file name -> digest of the object being read

    def of(self, digests: dict[str, str]) -> MeshCache:
        """A view for one object whose files have these digests (name -> sha256)."""
        view = MeshCache()
        view.by_digest, view.digests = self.by_digest, digests
        return view

    def get(self, name: str):
        digest = self.digests.get(name)
        return self.by_digest.get(digest) if digest else None

    def put(self, name: str, loaded) -> None:
        digest = self.digests.get(name)
        if digest:
            self.by_digest[digest] = loaded


def signature(
    urdf: Path,
    diagonal: float,
    count: int = SAMPLES,
    seed: int = SEED,
    meshes: MeshCache | None = None,
) -> Signature:
    """The Signature of a written object: `count` seeded, area-weighted surface points at rest
    divided by `diagonal` (its rest box's; an object without shapes gives its link origins),
    from one reading of its URDF and meshes (`meshes`: a MeshCache view of the object)."""
    urdf = Path(urdf)
    obj = read_object(urdf)
    poses = obj.link_poses()
    vertices: dict[str, int] = {}
    parts = [
        _triangles(g, urdf.parent, poses[link.name], vertices, meshes)
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
    # An unbalanced tree builds in half the time and answers the same nearest neighbours.
    tree = cKDTree(points, balanced_tree=False, compact_nodes=False)
    return Signature(Sample(points, tree, scale), mesh_uses(obj), vertices)


def mesh_uses(obj) -> tuple[tuple[str, float], ...]:
    """(mesh file relative to the object folder, its mean scale) of every shape that stands
    for a link (`link_shapes`), sorted."""
    return tuple(
        sorted(
            (g.filename, float(np.mean(g.scale)))
            for link in obj.links
            for g in link_shapes(link)
            if g.kind == "mesh"
        )
    )


def yaw_matrix(degrees: int) -> np.ndarray:
    """The exact rotation by a multiple of 90 degrees about z."""
    c, s = {0: (1, 0), 90: (0, 1), 180: (-1, 0), 270: (0, -1)}[degrees % 360]
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]], dtype=float)


def chamfer(a: Sample, b: Sample, yaw: int, size: float = 1.0, query: int = QUERY) -> float:
    """Symmetric Chamfer distance (in B's box diagonals) between A turned by `yaw`, its points
    multiplied by `size`, and B, from the first `query` points of each."""
    rot = yaw_matrix(yaw) * size
    a_to_b, _ = b.tree.query(a.points[:query] @ rot.T, distance_upper_bound=CAP)
    b_to_a, _ = a.tree.query(
        b.points[:query] @ np.linalg.inv(rot).T, distance_upper_bound=CAP / size
    )
    a_to_b = np.minimum(a_to_b, CAP)
    b_to_a = np.minimum(b_to_a * size, CAP)
    return 0.5 * (float(a_to_b.mean()) + float(b_to_a.mean()))


def shape_distances(a: Sample, b: Sample, size: float = 1.0, yaws=YAWS) -> dict[int, float]:
    """yaw (degrees) -> Chamfer distance for each quarter turn of `yaws`: first from
    COARSE points, then from QUERY points for the yaws near the best that could be within a
    tolerance (a wrong yaw's queries are the slow ones). `size`: A's points in B's units (1:
    both scale-free)."""
    coarse = {yaw: chamfer(a, b, yaw, size, COARSE) for yaw in yaws}
    best = min(coarse.values())
    return {
        yaw: chamfer(a, b, yaw, size) if value <= min(1.5 * best + 0.005, REFINE_BELOW) else value
        for yaw, value in coarse.items()
    }
