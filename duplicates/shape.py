"""Shape evidence: a symmetric Chamfer distance between seeded surface samples of two written
objects at rest, scale-free, under the quarter turns about z the convention leaves open, or
under any turn about z.

The convention places every object's rest box centred on the z axis with its bottom at z = 0
(docs/convention.md), with z up as the sources file declares, so two exports of one object
differ by a yaw and a size factor (a unit fixed upstream, or not). A yaw of a multiple of 90
degrees (which way the source called "front") keeps the box, so the boxes are centred alike;
any other yaw changes the box and so the placement: the surfaces are then put together by
their exact centroids (`centring_shift`) and the yaw searched (`any_yaw_alignment`). Each
object is read once (`signature`, with the mesh files standing for its links) and
sampled once: SAMPLES points on its surface (every link's visuals, else its
collisions, as the placement uses), area-weighted with a fixed seed, divided by the diagonal of
its rest box, with the exact centroid and covariance of that surface. The distance from A to
B is the mean distance of A's first QUERY points to their
nearest neighbour among all of B's points (scipy cKDTree), each capped at CAP; the Chamfer
distance is the mean of both directions, minimized over the yaws. Two samples of one
surface measure below 0.003 (in diagonals: planted duplicates of the generated library, and
the real xArm7 as URDF and MJCF: 0.0029), while near-misses measure 0.0045 and more (a
cabinet with one drawer more, the URDFormer cabinets built from one set of parts: 0.010);
SHAPE_TOLERANCE lies between. Objects built of the same mesh files
(`duplicates.stage.mesh_match`) are compared at the size their mesh scales give and may rest
in other poses (a door frame turned by the source): POSED_TOLERANCE.
"""

from __future__ import annotations

import contextlib
import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np
import trimesh
from scipy.spatial import ConvexHull, QhullError, cKDTree

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
#: Any yaw (`any_yaw_alignment`): the coarse search's step, how many of its minima are refined,
#: the step below which the refinement uses QUERY points, and where it stops (degrees).
FREE_STEP = 4.0
FREE_STARTS = 2
FREE_PRECISION = 0.02
#: Footprints whose horizontal spread has this anisotropy or more start from their principal
#: axes (their angle is then well defined), searched from PRINCIPAL_STEP degrees.
ANISOTROPIC = 0.05
PRINCIPAL_STEP = 1.0
#: A start whose coarse distance is above this is not searched (the same surface at a wrong
#: yaw of FREE_STEP / 2 at most measures below it).
SEARCH_BELOW = 0.04
#: `spreads_agree`: the invariant spreads (lengths) may differ by this much of B's overall
#: spread (sampling-free: the same surface agrees to rounding; other meshings of a primitive
#: to a fraction of this).
SPREAD_TOLERANCE = 0.02
#: Nearest-neighbour distances are capped here (in diagonals): far points cost the search most
#: and say only "different"; the Chamfer distance is the mean of the capped distances.
CAP = 0.1


@dataclass(eq=False)
class Sample:
    """Surface points of one object divided by its box diagonal, and their search tree, drawn
    on first use (many objects of candidate pairs are told apart by their spreads or boxes
    before a distance needs points), with the surface's exact moments and outline."""

    diagonal: float
    #: The exact area-weighted centroid and covariance of the surface (of the link origins
    #: without shapes), in the points' units: where a turned copy's surface is and how it
    #: spreads, whatever its box.
    centroid: np.ndarray
    covariance: np.ndarray
    #: The surface's vertices as far as its box at any yaw needs them (`outline`), in the
    #: points' units: its footprint's convex hull (K, 2) and its vertical extent.
    footprint: np.ndarray
    tall: float
    draw: Callable[[], np.ndarray]  # -> the points (SAMPLES, 3), seeded: the same at every call

    @cached_property
    def points(self) -> np.ndarray:
        return self.draw()

    @cached_property
    def tree(self) -> cKDTree:
        # Unbalanced with leaves of 64 points: built and searched fastest on these samples.
        return cKDTree(self.points, leafsize=64, balanced_tree=False, compact_nodes=False)


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


def _world_mesh(g: Geometry, folder: Path, pose: np.ndarray, vertices: dict, meshes):
    """(world-frame vertices (V, 3), faces (T, 3)) of one shape; a mesh's vertex count goes to
    `vertices`. `meshes`: a `MeshCache` or None."""
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
    return points @ frame[:3, :3].T + frame[:3, 3], faces


#: Bytes of loaded meshes a stage run keeps (the least recently used go first): unbounded, a
#: 20,000-object stage held every mesh it had read, over 17 GB; at 256 MB a pair job in a build's
#: worker added that much to the worker's peak. Meshes shared by objects are in one component of
#: the pair graph, measured one after another.
MESH_CACHE_BYTES = 64 * 1024**2


class _LoadedMeshes:
    """(vertices, faces) by content digest, at most `limit` bytes."""

    def __init__(self, limit: int):
        self.items: OrderedDict[str, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self.nbytes, self.limit = 0, limit

    def get(self, digest: str):
        loaded = self.items.get(digest)
        if loaded is not None:
            self.items.move_to_end(digest)
        return loaded

    def put(self, digest: str, loaded: tuple[np.ndarray, np.ndarray]) -> None:
        if digest in self.items:
            return
        self.items[digest] = loaded
        self.nbytes += sum(a.nbytes for a in loaded)
        while self.nbytes > self.limit and len(self.items) > 1:
            _, old = self.items.popitem(last=False)
            self.nbytes -= sum(a.nbytes for a in old)


class MeshCache:
    """Loaded meshes by content digest, shared by the objects of one stage run (a mesh file
    several objects ship, such as a re-exported object's, is read once while it is among the
    MESH_CACHE_BYTES most recently used)."""

    def __init__(self, limit: int = MESH_CACHE_BYTES):
        self.loaded = _LoadedMeshes(limit)
        self.digests: dict[str, str] = {}  # file name -> digest of the object being read

    def of(self, digests: dict[str, str]) -> MeshCache:
        """A view for one object whose files have these digests (name -> sha256)."""
        view = MeshCache.__new__(MeshCache)
        view.loaded, view.digests = self.loaded, digests
        return view

    def get(self, name: str):
        digest = self.digests.get(name)
        return self.loaded.get(digest) if digest else None

    def put(self, name: str, loaded) -> None:
        digest = self.digests.get(name)
        if digest:
            self.loaded.put(digest, loaded)


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
    meshes_at_rest = [
        _world_mesh(g, urdf.parent, poses[link.name], vertices, meshes)
        for link in obj.links
        for g in link_shapes(link)
    ]
    origins = np.array([p[:3, 3] for p in poses.values()], dtype=float)
    sample = _surface_sample(meshes_at_rest, origins, diagonal, count, seed)
    return Signature(sample, mesh_uses(obj), vertices)


def _surface_sample(meshes_at_rest, origins, diagonal, count, seed) -> Sample:
    """The Sample of the world-frame meshes' surface, divided by `diagonal`: its exact centroid,
    covariance and outline now, `count` seeded area-weighted points on it when first used (the
    link `origins` without a surface)."""
    parts = [world[faces] for world, faces in meshes_at_rest]
    scale = max(diagonal, 1e-12)
    if parts:
        tris = np.concatenate(parts)
        area = 0.5 * np.linalg.norm(
            np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0]), axis=1
        )
    if not parts or area.sum() <= 0:
        centroid = origins.mean(axis=0)
        covariance = np.cov(origins.T, bias=True).reshape(3, 3)
        footprint, tall = outline(origins / scale)

        def draw() -> np.ndarray:
            rng = np.random.default_rng(seed)
            return origins[rng.integers(len(origins), size=count)] / scale

    else:
        footprint, tall = outline(np.concatenate([w for w, _ in meshes_at_rest]) / scale)
        weight = area / area.sum()
        centroid = weight @ tris.mean(axis=1)
        # a triangle's second moment: (sum of v v^T over its corners + s s^T) / 12, s = their sum
        local = tris - centroid
        corners = np.einsum("t,tki,tkj->ij", weight, local, local)
        total = local.sum(axis=1)
        covariance = (corners + np.einsum("t,ti,tj->ij", weight, total, total)) / 12

        def draw() -> np.ndarray:
            rng = np.random.default_rng(seed)
            t = tris[rng.choice(len(tris), size=count, p=weight)]
            r1, r2 = rng.random(count), rng.random(count)
            s = np.sqrt(r1)
            points = (
                (1 - s)[:, None] * t[:, 0]
                + (s * (1 - r2))[:, None] * t[:, 1]
                + (s * r2)[:, None] * t[:, 2]
            )
            return points / scale

    return Sample(scale, centroid / scale, covariance / scale**2, footprint, tall, draw)


def outline(vertices: np.ndarray) -> tuple[np.ndarray, float]:
    """(the convex hull of the vertices' footprint on the xy plane, (K, 2); their vertical
    extent): what the box of the vertices turned by any yaw about z depends on. A footprint
    without area (all on one line) keeps its extreme points."""
    vertices = np.asarray(vertices, dtype=float)
    flat = vertices[:, :2]
    with contextlib.suppress(QhullError, ValueError):  # fewer than 3 points, or on one line
        flat = flat[ConvexHull(flat).vertices]
    return flat, float(np.ptp(vertices[:, 2]))


def box_at_yaw(a: Sample, yaw: float, size: float = 1.0) -> np.ndarray:
    """The extents (3,) of A's box after a turn by `yaw` degrees about z, times `size`."""
    turned = a.footprint @ yaw_matrix(yaw)[:2, :2].T
    return np.append(np.ptp(turned, axis=0), a.tall) * size


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


def yaw_matrix(degrees: float) -> np.ndarray:
    """The rotation by `degrees` about z (exact for the quarter turns)."""
    if float(degrees) % 90 == 0:
        c, s = {0: (1, 0), 90: (0, 1), 180: (-1, 0), 270: (0, -1)}[int(degrees) % 360]
    else:
        c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]], dtype=float)


def chamfer(
    a: Sample,
    b: Sample,
    yaw: float,
    size: float = 1.0,
    query: int = QUERY,
    shift: np.ndarray | None = None,
) -> float:
    """Symmetric Chamfer distance (in B's box diagonals) between A turned by `yaw`, its points
    multiplied by `size` and moved by `shift` (B's units), and B, from the first `query`
    points of each."""
    rot = yaw_matrix(yaw) * size
    shift = np.zeros(3) if shift is None else shift
    a_to_b, _ = b.tree.query(a.points[:query] @ rot.T + shift, distance_upper_bound=CAP)
    b_to_a, _ = a.tree.query(
        (b.points[:query] - shift) @ np.linalg.inv(rot).T, distance_upper_bound=CAP / size
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


def centring_shift(a: Sample, b: Sample, yaw: float, size: float) -> np.ndarray:
    """The horizontal shift (B's units) that puts A's surface centroid, turned by `yaw` and
    multiplied by `size`, on B's (both rest on z = 0, so no vertical shift)."""
    moved = yaw_matrix(yaw) @ a.centroid * size
    return np.array([b.centroid[0] - moved[0], b.centroid[1] - moved[1], 0.0])


@dataclass(frozen=True)
class Alignment:
    """The best turn of A onto B at any yaw: A's points turned by `yaw` degrees, multiplied by
    `size` and moved by `shift` lie on B's (B's box diagonals) at Chamfer distance
    `distance`."""

    distance: float
    yaw: float
    shift: np.ndarray


def spreads_agree(a: Sample, b: Sample, size: float = 1.0) -> bool:
    """Whether A's surface, multiplied by `size`, spreads as B's does in what a turn about z
    leaves of the covariance (its vertical variance, the sum and the product of its horizontal
    eigenvalues, the length of its horizontal-vertical part), each within SPREAD_TOLERANCE
    of B's as a length: a cheap necessary test before searching the yaw."""

    def invariants(c: np.ndarray, f: float) -> np.ndarray:
        h = c[:2, :2] * f**2
        cross = float(np.hypot(c[0, 2], c[1, 2])) * f**2
        return np.array([c[2, 2] * f**2, np.trace(h), math.sqrt(max(np.linalg.det(h), 0)), cross])

    ia, ib = invariants(a.covariance, size), invariants(b.covariance, 1.0)
    scale = float(np.trace(b.covariance))  # lengths squared: compare square roots
    return bool((np.abs(np.sqrt(ia) - np.sqrt(ib)) <= SPREAD_TOLERANCE * math.sqrt(scale)).all())


def _principal_yaw(c: np.ndarray) -> tuple[float, float]:
    """(angle in degrees of the first horizontal principal axis, anisotropy (l1 - l2) / (l1 +
    l2)) of a covariance."""
    h = c[:2, :2]
    angle = 0.5 * math.degrees(math.atan2(2 * h[0, 1], h[0, 0] - h[1, 1]))
    spread = math.hypot(h[0, 0] - h[1, 1], 2 * h[0, 1]) / max(h[0, 0] + h[1, 1], 1e-300)
    return angle, spread


def any_yaw_alignment(a: Sample, b: Sample, size: float = 1.0, enough: float = 0.0) -> Alignment:
    """The yaw (any angle) that brings A closest to B, their surface centroids put together.
    Starts: the turns that put A's horizontal principal axes on B's (both signs) when both
    footprints are anisotropic (ANISOTROPIC), else the best FREE_STARTS local minima of the
    Chamfer distance from COARSE points at every FREE_STEP degrees. A principal-axis start
    whose distance from QUERY points is at most `enough` is taken as it is (the principal
    axes of one surface turned are exact; a grid point is not, and the joints' E_tree at a
    wrong degree fails); else from it a pattern search from COARSE points halving its
    step down to FREE_PRECISION degrees, then the distance from QUERY points. Deterministic."""

    def distance(yaw: float, query: int) -> float:
        return chamfer(a, b, yaw, size, query, centring_shift(a, b, yaw, size))

    (angle_a, spread_a), (angle_b, spread_b) = (
        _principal_yaw(a.covariance),
        _principal_yaw(b.covariance),
    )
    principal = min(spread_a, spread_b) >= ANISOTROPIC
    if principal:
        turn = angle_b - angle_a
        starts = [(distance(y, COARSE), y) for y in (turn, turn + 180.0)]
        step = PRINCIPAL_STEP
    else:
        grid = np.arange(0.0, 360.0, FREE_STEP)
        coarse = np.array([distance(y, COARSE) for y in grid])
        n = len(grid)
        minima = [i for i in range(n) if coarse[i] <= min(coarse[i - 1], coarse[(i + 1) % n])]
        starts = [(coarse[i], float(grid[i])) for i in minima]
        step = FREE_STEP / 2
    best = None
    for value, yaw in sorted(starts)[:FREE_STARTS]:
        if value > SEARCH_BELOW:
            continue
        if enough > 0 and principal:
            exact = distance(yaw, QUERY)
            if exact <= enough:
                yaw = yaw % 360.0
                return Alignment(exact, yaw, centring_shift(a, b, yaw, size))
        at_step = step
        while at_step >= FREE_PRECISION:
            found, at = min((distance(y, COARSE), y) for y in (yaw - at_step, yaw + at_step))
            if found < value:
                value, yaw = found, at
            else:
                at_step /= 2
        yaw = round(yaw % 360.0, 3)
        value = distance(yaw, QUERY)
        if best is None or (value, yaw) < (best.distance, best.yaw):
            best = Alignment(value, yaw, centring_shift(a, b, yaw, size))
    if best is None:  # no start near enough: the best start's coarse distance
        value, yaw = min(starts)
        yaw = round(yaw % 360.0, 3)
        best = Alignment(value, yaw, centring_shift(a, b, yaw, size))
    return best
