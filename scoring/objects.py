"""Reading objects for scoring, and the arrays the metric needs from them.

Both the release's ground truth and a method's predictions are read with the project's readers
and never re-placed: a URDF with `normalize.urdf.read_object` (helical pairs recomposed), an MJCF
file with the MJCF adapter (then helical pairs recomposed the same way). Everything is in the
file's own root-link frame, which for a release is its canonical frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from metric import Joints, Tree
from normalize.errors import AssetError
from normalize.model import ArticulatedObject

URDF_SUFFIXES = (".urdf",)
MJCF_SUFFIXES = (".xml", ".mjcf")
PREFERRED_ENTRY = "object.urdf"


def find_entry(folder: Path) -> Path:
    """The file describing the object in `folder`: `object.urdf`, else the only URDF, else the
    only MJCF file (*.xml, *.mjcf). Raises AssetError `prediction.no_entry` when there is none
    and `prediction.ambiguous` when several could be meant."""
    folder = Path(folder)
    if (folder / PREFERRED_ENTRY).is_file():
        return folder / PREFERRED_ENTRY
    for suffixes in (URDF_SUFFIXES, MJCF_SUFFIXES):
        found = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in suffixes)
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            names = ", ".join(p.name for p in found[:5])
            raise AssetError(
                f"{len(found)} candidate files ({names}); name the object's file object.urdf",
                code="prediction.ambiguous",
                stage="score",
                path=str(folder),
            )
    raise AssetError(
        "no URDF (*.urdf) or MJCF (*.xml, *.mjcf) file in the folder",
        code="prediction.no_entry",
        stage="score",
        path=str(folder),
    )


def read_mjcf(path: Path) -> ArticulatedObject:
    """An MJCF file as an object in its world frame, confined to its folder, helical pairs
    recomposed (as `read_object` does for URDF)."""
    from normalize.adapters import get_adapter
    from normalize.discovery import Candidate
    from normalize.helical import compose_helical
    from normalize.sources import SourceConfig

    path = Path(path).absolute()
    source = SourceConfig(name="prediction", format="mjcf", path=path.parent, license="")
    obj = get_adapter("mjcf").load(Candidate(source, path.stem, path))
    obj, _ = compose_helical(obj)
    return obj


def read_any(path: Path) -> ArticulatedObject:
    """The object in a URDF or MJCF file, or in a folder holding one (see `find_entry`).
    Raises AssetError (codes of the readers, or `prediction.*`)."""
    from normalize.urdf import read_object

    path = Path(path)
    if path.is_dir():
        path = find_entry(path)
    if not path.is_file():
        raise AssetError(
            "file does not exist", code="prediction.missing", stage="score", path=str(path)
        )
    suffix = path.suffix.lower()
    if suffix in URDF_SUFFIXES:
        return read_object(path)
    if suffix in MJCF_SUFFIXES:
        return read_mjcf(path)
    raise AssetError(
        f"unsupported file type {suffix!r} (expected .urdf, .xml or .mjcf)",
        code="prediction.format",
        stage="score",
        path=str(path),
    )


@dataclass(frozen=True, eq=False)
class Kinematics:
    """One object as the metric sees it, all in the object's world frame at rest.

    names, types: per joint (every joint, fixed ones included); joints: world twists and
    limits; axis, point: unit axis and a point on it (the joint frame origin); tree: the
    kinematic tree (edges parent -> child link); mass, com, inertia: each joint's child link
    moments (mass 0 when the link has no inertial).
    """

    names: tuple[str, ...]
    types: tuple[str, ...]
    joints: Joints
    axis: np.ndarray
    point: np.ndarray
    tree: Tree
    mass: np.ndarray
    com: np.ndarray
    inertia: np.ndarray

    def __len__(self) -> int:
        return len(self.names)

    @property
    def moving(self) -> np.ndarray:
        """(N,) True for joints that carry motion (not exactly fixed: E(J, J0) > 0)."""
        return ~self.joints.fixed


def kinematics(obj: ArticulatedObject) -> Kinematics:
    """The screws, tree and child mass moments of an object (see `Kinematics`)."""
    screws = obj.screws()
    mass, com, inertia = obj.child_mass_moments()
    joints = Joints(screws.twist, screws.lower, screws.upper)
    edges = list(zip(screws.parents, screws.children, strict=True))
    return Kinematics(
        names=screws.names,
        types=screws.types,
        joints=joints,
        axis=screws.axis,
        point=screws.point,
        tree=Tree(edges, joints),
        mass=mass,
        com=com,
        inertia=inertia,
    )
