"""Cheap keys of an accepted object and the candidate pairs they propose (blocking).

An `ObjectRecord` is what the stage knows about one accepted object without opening a file: its
manifest rows (objects, joints) and the digests of the files of its release folder. Two blocks
propose candidate pairs, each near-linear in the number of objects:

- mesh digest: objects that ship a byte-identical mesh file (a digest held by more than
  MAX_DIGEST_BUCKET objects, such as a primitive every library uses, proposes nothing);
- extents: objects whose rest-pose box has the same shape, taken scale-free and up to a quarter
  turn about z (x and y extents sorted, divided by the diagonal), on a grid of EXTENT_CELL cells
  (each object is compared with its cell and the neighbouring ones).

`cheap_match` then keeps the pairs whose boxes agree within EXTENT_TOLERANCE at a size ratio of
1 or a unit factor (`unit_factor`), and those built of the same mesh files; only those are
measured (`duplicates.stage.measure`).
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAX_DIGEST_BUCKET = 32
COMMON_DIGEST = 8  # a mesh file held by more objects is a stock part, no evidence of identity
EXTENT_CELL = 0.004
EXTENT_TOLERANCE = 0.004  # on extents divided by the diagonal
UNIT_TOLERANCE = 0.002  # relative, on the size ratio against a unit factor
#: Size ratios a unit mistake fixed upstream can leave (metres, centimetres, millimetres, inches).
UNIT_FACTORS = (1.0, 10.0, 100.0, 1000.0, 0.0254, 0.254, 2.54, 25.4, 39.37007874015748)
MESH_SUFFIXES = (".obj",)
MESH_SHARE = 0.9


@dataclass(frozen=True)
class ObjectRecord:
    """One accepted object as the duplicate stage sees it (built from its manifest rows)."""

    object_id: str
    source: str
    category: str
    status: str
    n_moving: int
    type_counts: tuple[int, ...]  # links, revolute, prismatic, continuous, helical
    bbox_min: tuple[float, float, float]
    bbox_max: tuple[float, float, float]
    mesh_files: tuple[tuple[str, str], ...]  # (path in the object folder, sha256) of its meshes
    joints: tuple[dict, ...]  # joints-table rows
    urdf: Path  # the written object.urdf in the release (staging) folder

    @property
    def mesh_digests(self) -> frozenset[str]:
        return frozenset(d for _, d in self.mesh_files)

    @property
    def extents(self) -> np.ndarray:
        return np.asarray(self.bbox_max, dtype=float) - np.asarray(self.bbox_min, dtype=float)

    @property
    def diagonal(self) -> float:
        return float(np.linalg.norm(self.extents))

    @property
    def shape_key(self) -> np.ndarray:
        """(short side, long side, height) of the rest box divided by its diagonal."""
        e = self.extents
        diag = max(float(np.linalg.norm(e)), 1e-12)
        return np.array([min(e[0], e[1]), max(e[0], e[1]), e[2]]) / diag


def record_from_rows(object_row: dict, joint_rows: list[dict], files: dict, folder: Path):
    """The ObjectRecord of an accepted object from its manifest rows and folder digests
    (relative path -> sha256); `folder` is where its files are now."""
    types = [j["type"] for j in joint_rows]
    meshes = tuple(sorted((n, d) for n, d in files.items() if n.lower().endswith(MESH_SUFFIXES)))
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
        joints=tuple(joint_rows),
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


def candidate_pairs(records: list[ObjectRecord]) -> dict[tuple[int, int], set[str]]:
    """(i, j) with i < j -> the blocks that proposed the pair ("mesh_digest", "extents")."""
    pairs: dict[tuple[int, int], set[str]] = defaultdict(set)
    by_digest: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        for digest in r.mesh_digests:
            by_digest[digest].append(i)
    for members in by_digest.values():
        if 2 <= len(members) <= MAX_DIGEST_BUCKET:
            for i, j in itertools.combinations(members, 2):
                pairs[(i, j)].add("mesh_digest")
    cells: dict[tuple[int, int], list[int]] = defaultdict(list)
    keys = [r.shape_key for r in records]
    for i, key in enumerate(keys):
        cells[(int(key[0] // EXTENT_CELL), int(key[2] // EXTENT_CELL))].append(i)
    for (a, b), members in cells.items():
        for da, db in itertools.product((-1, 0, 1), repeat=2):
            others = cells.get((a + da, b + db), ())
            for i in members:
                for j in others:
                    if i < j:
                        pairs[(i, j)].add("extents")
    return pairs


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
    if a.type_counts == b.type_counts:
        keys.append("joint_counts")
    if a.category == b.category:
        keys.append("category")
    fewer = min(len(a.mesh_digests), len(b.mesh_digests))
    same_files = shared >= 2 and shared >= MESH_SHARE * fewer
    return same_files or "extents" in keys, keys
