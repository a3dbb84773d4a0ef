"""What a format writer hands back: the files of one object folder and how it named the joints."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from samples.design import JointDesign
from samples.meshes import merged_obj_text, obj_text


@dataclass(frozen=True)
class Quirks:
    """Per-object choices of the real-library quirks a writer reproduces (design joint names)."""

    non_unit_axis: frozenset[str] = frozenset()  # axis written with length 2
    upper_first: frozenset[str] = frozenset()  # limits written as lower > upper
    turn_first: bool = False  # URDF helical pair: rotational joint before the prismatic one
    revolute_driver: bool = False  # URDF helical pair: the rotational joint is revolute
    angle_degree: bool = False  # MJCF <compiler angle="degree">
    body_fragment: bool = False  # MJCF sliding parts in an <include>d file
    relative_to: bool = False  # SDF helper-link poses relative_to their parent link
    deprecated_pitch: bool = False  # SDF screw joint also carries the old <thread_pitch>
    # plain URDF visuals: "part" one mesh file per part, "link" the parts of a link in one file,
    # "halves" every part's faces in two files (samples.twins: meshes split differently)
    mesh_files: str = "part"

    def written_axis(self, joint_name: str, axis: np.ndarray) -> np.ndarray:
        """A joint's axis as the file writes it: doubled for the `non_unit_axis` joints."""
        return axis * 2.0 if joint_name in self.non_unit_axis else axis

    def written_limits(self, joint: JointDesign) -> tuple[float | None, float | None]:
        """A joint's (lower, upper) as the file writes them: swapped for `upper_first` joints."""
        if joint.name in self.upper_first:
            return joint.upper, joint.lower
        return joint.lower, joint.upper


@dataclass
class Written:
    """Files of one object folder (relative path -> text), its entry file, and the name each
    moving design joint got in the file."""

    entry: str
    files: dict[str, str] = field(default_factory=dict)
    joint_names: dict[str, str] = field(default_factory=dict)


class MeshTable:
    """Assigns one file per distinct mesh of an object, in order of first use."""

    def __init__(self, folder: str, stem: str):
        self.folder, self.stem = folder, stem
        self.paths: dict[tuple, str] = {}
        self.merged: dict[str, str] = {}  # path -> OBJ text of meshes made of several parts

    def path(self, shape: str, size: tuple[float, ...], rotation: np.ndarray | None = None) -> str:
        baked = () if rotation is None else tuple(round(float(v), 6) + 0.0 for v in rotation.flat)
        key = (shape, size, baked)
        if key not in self.paths:
            self.paths[key] = f"{self.folder}/{self.stem}-{len(self.paths) + 1}.obj"
        return self.paths[key]

    def merged_path(self, parts: list[tuple], half: int | None = None) -> str:
        """A file of its own for the (shape, size, 4x4 transform) parts in one mesh, or for
        half of one part's faces (`half` 0 or 1)."""
        path = f"{self.folder}/{self.stem}-{len(self.paths) + len(self.merged) + 1}.obj"
        self.merged[path] = merged_obj_text(parts, half)
        return path

    def files(self) -> dict[str, str]:
        return {**{path: obj_text(*key) for key, path in self.paths.items()}, **self.merged}
