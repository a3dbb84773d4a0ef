"""Cheap keys of an accepted object and the candidate pairs they propose (blocking).

An `ObjectRecord` is what the stage knows about one accepted object without opening a file: its
manifest rows (objects, joints) and the digests of the files of its release folder. Two blocks
propose candidate pairs, each near-linear in the number of objects:

- mesh digest: objects that share at least two byte-identical mesh files, each held by at most
  COMMON_DIGEST objects (a file many objects ship, such as a primitive every library uses, is
  no evidence of identity);
- extents: objects whose rest-pose boxes have the same shape, taken scale-free and up to a
  quarter turn about z (x and y extents sorted, divided by the diagonal), within
  EXTENT_TOLERANCE, at a size ratio within UNIT_TOLERANCE of 1 or of a unit factor: a k-d tree
  over (shape key, log diagonal) in units of those tolerances, queried once per unit factor
  (Chebyshev distance, scipy cKDTree), so only pairs that can pass `cheap_match` are listed;
- height: the same for what a turn about z by any angle leaves of the box (a source's "front"
  need not be a quarter turn from another's): the height, within UNIT_TOLERANCE of a unit
  factor, and the horizontal diagonal over the height, within a factor sqrt(2) (the
  footprint's diameter <= the horizontal diagonal <= sqrt(2) times it, at any yaw); and,
  since a height is shared by many objects of a kind (every keyboard of a generated library),
  the joints' `motion_key`: the number of moving joints and their summed ranges (rotational,
  and prismatic over the height) within MOTION_TOLERANCE. So this key finds turned copies
  with the same joints; a turned copy with welded joints is found only through shared mesh
  files.

`cheap_match` then keeps the pairs whose boxes agree at a size ratio of 1 or a unit factor
(`unit_factor`), up to a quarter turn ("extents") or any turn ("height"), and those built of
the same mesh files; only those are measured (`duplicates.stage.measure`).
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
from scipy.spatial import cKDTree

from normalize.collision_parts import COLLISION_PART

COMMON_DIGEST = 8  # a mesh file held by more objects is a stock part, no evidence of identity
EXTENT_TOLERANCE = 0.004  # on extents divided by the diagonal
UNIT_TOLERANCE = 0.002  # relative, on the size ratio against a unit factor
#: Size ratios a unit mistake fixed upstream can leave (metres, centimetres, millimetres, inches).
UNIT_FACTORS = (1.0, 10.0, 100.0, 1000.0, 0.0254, 0.254, 2.54, 25.4, 39.37007874015748)
MESH_SUFFIXES = (".obj",)
MESH_SHARE = 0.9


@dataclass(frozen=True)
class ObjectRecord:
    """One accepted object as the duplicate stage sees it (built from its manifest rows; what
    it derives from them is computed once)."""

    object_id: str
    source: str
    category: str
    status: str
    n_moving: int
    type_counts: tuple[int, ...]  # links, revolute, prismatic, continuous, helical
    bbox_min: tuple[float, float, float]
    bbox_max: tuple[float, float, float]
    mesh_files: tuple[tuple[str, str], ...]  # (path in the object folder, sha256) of its meshes
    joints: tuple[dict, ...]  # joints-table rows, their JOINT_FIELDS
    urdf: Path  # the written object.urdf in the release (staging) folder

    @cached_property
    def mesh_digests(self) -> frozenset[str]:
        return frozenset(d for _, d in self.mesh_files)

    @cached_property
    def extents(self) -> np.ndarray:
        return np.asarray(self.bbox_max, dtype=float) - np.asarray(self.bbox_min, dtype=float)

    @cached_property
    def diagonal(self) -> float:
        return float(np.linalg.norm(self.extents))

    @cached_property
    def shape_key(self) -> np.ndarray:
        """(short side, long side, height) of the rest box divided by its diagonal."""
        e = self.extents
        return np.array([min(e[0], e[1]), max(e[0], e[1]), e[2]]) / max(self.diagonal, 1e-12)

    @cached_property
    def height(self) -> float:
        return float(self.extents[2])

    @cached_property
    def motion_key(self) -> tuple[int, float, float]:
        """(moving joints, summed finite ranges of the rotational ones in radians, of the
        prismatic ones over the height): what a turn, a shift and a unit leave of the joints."""
        turning = sliding = 0.0
        for j in self.joints:
            twist = np.asarray(j["twist"], dtype=float)
            span = float(j["upper"]) - float(j["lower"])
            if not math.isfinite(span):
                continue
            turn = float(np.linalg.norm(twist[:3]))
            if turn > 0:
                turning += span * turn
            else:
                sliding += span * float(np.linalg.norm(twist[3:]))
        return len(self.joints), turning, sliding / max(self.height, 1e-12)

    @cached_property
    def footprint(self) -> float:
        """The horizontal diagonal of the rest box."""
        return float(np.hypot(*self.extents[:2]))


#: What the stage reads of a joints-table row (`motion.joint_tree`, `motion.invariants`).
JOINT_FIELDS = ("parent", "child", "twist", "lower", "upper")


def record_from_rows(object_row: dict, joint_rows: list[dict], files: dict, folder: Path):
    """The ObjectRecord of an accepted object from its manifest rows and folder digests
    (relative path -> sha256); `folder` is where its files are now."""
    types = [j["type"] for j in joint_rows]
    meshes = tuple(
        sorted(
            (n, d)
            for n, d in files.items()
            if n.lower().endswith(MESH_SUFFIXES) and not COLLISION_PART.search(n)
        )
    )
    return ObjectRecord(
        object_id=object_row["object_id"],
        source=object_row["source"],
        category=object_row["category"],
        status=object_row["status"],
        n_moving=int(object_row["n_joints"]),
        type_counts=(
            int(object_row["n_links"]),
            types.count("revolute"),
            types.count("prismatic"),
            types.count("continuous"),
            int(object_row["n_helical"]),
        ),
        bbox_min=tuple(float(v) for v in object_row["bbox_min"]),
        bbox_max=tuple(float(v) for v in object_row["bbox_max"]),
        mesh_files=meshes,
        joints=tuple({k: j[k] for k in JOINT_FIELDS} for j in joint_rows),
        urdf=Path(folder) / Path(object_row["urdf_path"]).name,
    )


def unit_factor(ratio: float) -> float | None:
    """The unit factor (or its inverse) within UNIT_TOLERANCE of a size ratio, else None."""
    if not (ratio > 0 and math.isfinite(ratio)):
        return None
    for factor in UNIT_FACTORS:
        for f in (factor, 1.0 / factor):
            if abs(ratio / f - 1.0) <= UNIT_TOLERANCE:
                return f
    return None


#: The unit factors above 1 (a pair is looked up from its smaller object).
FACTORS_UP = tuple(sorted({round(max(f, 1 / f), 9) for f in UNIT_FACTORS} - {1.0}))
#: Half-width of the unit tolerance on the log of the size ratio (the wider side of 1 +- tol).
LOG_UNIT = -math.log(1.0 - UNIT_TOLERANCE)
#: How far a turn about z can change the log of the horizontal diagonal (see the module).
TURN_SPREAD = math.log(math.sqrt(2.0))
#: On log(1 + summed ranges) of `ObjectRecord.motion_key` (the same joints agree to rounding).
MOTION_TOLERANCE = 0.001


def candidate_pairs(records: list[ObjectRecord]) -> dict[tuple[int, int], set[str]]:
    """(i, j) with i < j -> the blocks that proposed the pair ("mesh_digest", "extents")."""
    pairs: dict[tuple[int, int], set[str]] = defaultdict(set)
    for pair in _shared_mesh_pairs(records):
        pairs[pair].add("mesh_digest")
    for pair in _extent_pairs(records):
        pairs[pair].add("extents")
    for pair in _height_pairs(records):
        pairs[pair].add("height")
    return pairs


def _shared_mesh_pairs(records: list[ObjectRecord]) -> list[tuple[int, int]]:
    by_digest: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        for digest in r.mesh_digests:
            by_digest[digest].append(i)
    shared: dict[tuple[int, int], int] = defaultdict(int)
    for members in by_digest.values():
        if 2 <= len(members) <= COMMON_DIGEST:
            for pair in itertools.combinations(members, 2):
                shared[pair] += 1
    return sorted(p for p, n in shared.items() if n >= 2)


def _extent_pairs(records: list[ObjectRecord]) -> list[tuple[int, int]]:
    """Pairs whose shape keys agree within EXTENT_TOLERANCE (each coordinate) and whose size
    ratio is within LOG_UNIT of 1 or of a unit factor (on its log)."""
    if len(records) < 2:
        return []
    shape_keys = np.array([r.shape_key for r in records]) / EXTENT_TOLERANCE
    sizes = np.log(np.maximum([r.diagonal for r in records], 1e-12)) / LOG_UNIT
    return _near_pairs(np.column_stack([shape_keys, sizes]), np.arange(len(records)))


def _height_pairs(records: list[ObjectRecord]) -> list[tuple[int, int]]:
    """Pairs whose heights are within LOG_UNIT of a unit factor (on its log), whose
    horizontal diagonals over heights are within TURN_SPREAD (on its log) and whose motion keys
    agree (`_motion_point`); objects without height or footprint are left to the other
    blocks."""
    kept = np.array([i for i, r in enumerate(records) if r.height > 0 and r.footprint > 0])
    if len(kept) < 2:
        return []
    height = np.array([records[i].height for i in kept])
    footprint = np.array([records[i].footprint for i in kept])
    motion = np.array([_motion_point(records[i]) for i in kept]).reshape(-1, 3)
    points = np.column_stack(
        [np.log(footprint / height) / TURN_SPREAD, motion, np.log(height) / LOG_UNIT]
    )
    return _near_pairs(points, kept)


def _motion_point(r: ObjectRecord) -> tuple[float, float, float]:
    """`motion_key` in units of the tolerance (joint counts 2 apart: never near)."""
    count, turning, sliding = r.motion_key
    return (
        2.0 * count,
        math.log1p(turning) / MOTION_TOLERANCE,
        math.log1p(sliding) / MOTION_TOLERANCE,
    )


def _near_pairs(points: np.ndarray, index: np.ndarray) -> list[tuple[int, int]]:
    """(index[i], index[j]) of the rows within Chebyshev distance 1 of each other, the last
    column (a log size in tolerance units) taken as it is or shifted by a unit factor."""
    tree = cKDTree(points)
    radius = 1.0 + 1e-9
    found = [tree.query_pairs(radius, p=np.inf, output_type="ndarray").reshape(-1, 2)]
    for factor in FACTORS_UP:
        shrunk = points.copy()
        shrunk[:, -1] -= math.log(factor) / LOG_UNIT  # object j at 1/factor of its size
        near = tree.sparse_distance_matrix(cKDTree(shrunk), radius, p=np.inf, output_type="ndarray")
        found.append(np.column_stack([near["i"], near["j"]]).astype(np.int64))
    both = index[np.concatenate(found)]
    both = np.sort(both, axis=1)
    both = np.unique(both[both[:, 0] != both[:, 1]], axis=0)
    return [(int(i), int(j)) for i, j in both]


def cheap_match(a: ObjectRecord, b: ObjectRecord) -> tuple[bool, list[str]]:
    """(worth measuring, the cheap keys that agree). Measured when the scale-free boxes agree
    and the size ratio is a unit factor, or when they share MESH_SHARE of the mesh files of
    the one with fewer (the same parts, perhaps posed otherwise)."""
    keys = []
    shared = len(a.mesh_digests & b.mesh_digests)
    if shared:
        keys.append("mesh_digest")
    boxes = bool(np.all(np.abs(a.shape_key - b.shape_key) <= EXTENT_TOLERANCE))
    if boxes and unit_factor(b.diagonal / max(a.diagonal, 1e-12)) is not None:
        keys.append("extents")
    if turned_match(a, b) is not None:
        keys.append("height")
    if a.type_counts == b.type_counts:
        keys.append("joint_counts")
    if a.category == b.category:
        keys.append("category")
    fewer = min(len(a.mesh_digests), len(b.mesh_digests))
    same_files = shared >= 2 and shared >= MESH_SHARE * fewer
    return same_files or "extents" in keys or "height" in keys, keys


def turned_match(a: ObjectRecord, b: ObjectRecord) -> float | None:
    """B's height over A's when B's box can be A's turned about z by some angle at a unit
    factor and their joints' `motion_key` agree (the height block's test), else None."""
    if min(a.height, b.height, a.footprint, b.footprint) <= 0:
        return None
    if np.abs(np.subtract(_motion_point(a), _motion_point(b))).max() > 1 + 1e-9:
        return None
    ratio = b.height / a.height
    factor = unit_factor(ratio)
    if factor is None:
        return None
    spread = abs(math.log(b.footprint / a.footprint / ratio))
    return ratio if spread <= TURN_SPREAD * (1 + 1e-9) else None
