"""Planted duplicates and near-misses for the duplicate stage (`arena generate` with a
duplicate fraction; bench/duplicate_stage.py).

A twin is an object built from the design of an earlier object (the same seeded choices) and
changed by one variant. Duplicates (the same physical object):
- reexport: written by another format's writer;
- yaw: turned by a quarter turn about z (another "front");
- any_yaw: turned about z by an angle that is no multiple of 90 degrees (`any_yaw_angle`): its
  rest box, and so its placement, differ from the original's;
- millimetres: every length x 1000, in the source `sample_urdf_mm` whose `scale` is 0.001;
- renamed: every link and joint renamed;
- welded: one moving joint turned into a fixed one;
- merged_meshes: a plain URDF whose parts of a link are one mesh file (one visual per link);
- split_meshes: a plain URDF whose every part's mesh is split into two files (half the faces
  each, two visuals at the part's origin); both have the original's surface exactly.
Near-misses (not duplicates):
- one_more_drawer: the same cabinet design with one drawer more (cabinets only);
- another_size: the same design scaled by 1.15 to 1.27 (not a unit factor; `size_factor`).
Twins of one original that share a design (`design_key`: its duplicates and the original; its
one_more_drawer twins; its another_size twins of one factor) are the same object as each other.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import replace

import numpy as np

from samples.design import Design, LinkDesign
from samples.frames import pose, rot_z

DUPLICATE_VARIANTS = (
    "reexport",
    "yaw",
    "any_yaw",
    "millimetres",
    "renamed",
    "welded",
    "merged_meshes",
    "split_meshes",
)
#: Variants written by the plain URDF writer with another mesh layout (`Quirks.mesh_files`).
MESH_LAYOUTS = {"merged_meshes": "link", "split_meshes": "halves"}
URDF_SOURCES = ("sample_urdf", "sample_urdf_yup")
NEAR_MISS_VARIANTS = ("one_more_drawer", "another_size")
MM_SOURCE = "sample_urdf_mm"  # a URDF source written in millimetres (scale 0.001)


def scaled(design: Design, factor: float) -> Design:
    """Every length times `factor` (parts, poses, joint points, prismatic limits, pitches)."""

    def moved(p: np.ndarray) -> np.ndarray:
        out = p.copy()
        out[:3, 3] *= factor
        return out

    links = [
        LinkDesign(
            link.name,
            link.label,
            [
                replace(
                    p,
                    size=tuple(round(v * factor, 6) for v in p.size),
                    pose=moved(p.pose),
                )
                for p in link.parts
            ],
        )
        for link in design.links
    ]
    joints = []
    for j in design.joints:
        limits = {}
        if j.type == "prismatic":
            limits = {
                "lower": None if j.lower is None else j.lower * factor,
                "upper": None if j.upper is None else j.upper * factor,
            }
        joints.append(replace(j, frame=moved(j.frame), pitch=j.pitch * factor, **limits))
    return replace(design, links=links, joints=joints)


def renamed(design: Design) -> Design:
    """Every link and joint renamed (the object is unchanged)."""
    names = {link.name: f"part_{i}" for i, link in enumerate(design.links)}
    links = [LinkDesign(names[link.name], link.label, link.parts) for link in design.links]
    joints = [
        replace(j, name=f"axis_{i}", parent=names[j.parent], child=names[j.child])
        for i, j in enumerate(design.joints)
    ]
    return replace(design, root=names[design.root], links=links, joints=joints)


def welded(design: Design) -> Design:
    """The last moving revolute or prismatic joint turned into a fixed joint."""
    movable = [i for i, j in enumerate(design.joints) if j.type in ("revolute", "prismatic")]
    if len(design.moving_joints) < 2 or not movable:
        return design
    joints = list(design.joints)
    k = movable[-1]
    joints[k] = replace(joints[k], type="fixed", lower=None, upper=None)
    return replace(design, joints=joints)


def yawed(design: Design, degrees: float = 90.0) -> Design:
    return design.transformed(pose(rot_z(math.radians(degrees))))


ANY_YAWS = (17.0, 38.5, 63.0, 124.0, 201.5, 317.0)  # degrees, none a multiple of 90


def any_yaw_angle(index: int) -> float:
    """The any_yaw angle of twin `index` (degrees)."""
    return ANY_YAWS[index % len(ANY_YAWS)]


SIZE_FACTORS = (1.15, 1.19, 1.23, 1.27)  # 3 % apart at least: sizes that a unit cannot explain


def size_factor(index: int) -> float:
    """The another_size factor of twin `index`."""
    return SIZE_FACTORS[index % len(SIZE_FACTORS)]


def design_key(variant: str, index: int) -> str:
    """Which design of its original a twin has (equal keys: the same object)."""
    if variant == "one_more_drawer":
        return variant
    if variant == "another_size":
        return f"size x{size_factor(index)}"
    return "original"


def design_digest(design: Design) -> str:
    """A digest of what a design builds (parts, joints; not its name), so that two objects that
    happen to draw the same design are known to be the same object."""
    parts = [
        [link.name, p.shape, list(p.size), np.round(p.pose, 9).tolist()]
        for link in design.links
        for p in link.parts
    ]
    joints = [
        [j.type, j.parent, j.child, np.round(j.frame, 9).tolist(), np.round(j.axis, 9).tolist()]
        + [j.lower, j.upper, j.pitch]
        for j in design.joints
    ]
    text = json.dumps([design.kind, parts, joints], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def apply_variant(design: Design, variant: str, index: int) -> Design:
    """The design of twin `index` (one_more_drawer is made by the builder, see
    `samples.kinds`)."""
    if variant == "yaw":
        return yawed(design)
    if variant == "any_yaw":
        return yawed(design, any_yaw_angle(index))
    if variant == "millimetres":
        return scaled(design, 1000.0)
    if variant == "renamed":
        return renamed(design)
    if variant == "welded":
        return welded(design)
    if variant == "another_size":
        return scaled(design, size_factor(index))
    return design
