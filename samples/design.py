"""The format-neutral description of one generated object, built once and written in any format.

Everything is expressed in the design's world frame at rest (z up, metres, radians): each part is
a box or a cylinder with its world pose, each joint has a world frame whose origin lies on the
joint axis. Writers choose their own link frames from this, so the ground truth (the world-frame
twists) follows from the design alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from samples.frames import AXES, pose, rotation_to

DENSITY = 600.0  # kg/m^3, for the inertials written into URDF and SDF files


@dataclass(frozen=True)
class Part:
    """A box (size = full x, y, z extents) or a cylinder (size = radius, length along local z)."""

    shape: str
    size: tuple[float, ...]
    pose: np.ndarray
    name: str


@dataclass
class LinkDesign:
    name: str
    label: str
    parts: list[Part] = field(default_factory=list)


@dataclass
class JointDesign:
    """A joint at rest. `frame` is the world pose of the joint frame (origin on the axis); `axis`
    is the world unit axis; limits None mean unbounded; pitch in metres per radian (helical)."""

    name: str
    type: str
    parent: str
    child: str
    frame: np.ndarray
    axis: np.ndarray
    lower: float | None = None
    upper: float | None = None
    pitch: float = 0.0

    @property
    def point(self) -> np.ndarray:
        return self.frame[:3, 3]


@dataclass
class Design:
    name: str
    kind: str
    category: str
    model_cat: str
    root: str
    links: list[LinkDesign]
    joints: list[JointDesign]  # parents before children

    def link(self, name: str) -> LinkDesign:
        return next(link for link in self.links if link.name == name)

    def parent_joint(self, link: str) -> JointDesign | None:
        return next((j for j in self.joints if j.child == link), None)

    def children(self, link: str) -> list[JointDesign]:
        return [j for j in self.joints if j.parent == link]

    @property
    def moving_joints(self) -> list[JointDesign]:
        return [j for j in self.joints if j.type != "fixed"]

    def transformed(self, transform: np.ndarray) -> Design:
        """The same object moved rigidly by `transform` (world poses, points and axes)."""
        rot = transform[:3, :3]
        links = [
            LinkDesign(
                link.name, link.label, [replace(p, pose=transform @ p.pose) for p in link.parts]
            )
            for link in self.links
        ]
        joints = [replace(j, frame=transform @ j.frame, axis=rot @ j.axis) for j in self.joints]
        return replace(self, links=links, joints=joints)


def part_centred_frames(design: Design) -> dict[str, np.ndarray]:
    """World poses of the link frames, as the MJCF and SDF writers place them: the root's is the
    world frame; every other link's is turned like its joint frame and centred on its first
    part (on the joint point for a link without parts)."""
    frames = {design.root: np.eye(4)}
    for joint in design.joints:
        parts = design.link(joint.child).parts
        centre = parts[0].pose[:3, 3] if parts else joint.point
        frames[joint.child] = pose(joint.frame[:3, :3], centre)
    return frames


class Builder:
    """Collects links, parts and joints of one design in world coordinates."""

    def __init__(self, name: str, kind: str, category: str, model_cat: str):
        self.name, self.kind, self.category, self.model_cat = name, kind, category, model_cat
        self.links: list[LinkDesign] = []
        self.joints: list[JointDesign] = []

    def link(self, name: str, label: str) -> str:
        self.links.append(LinkDesign(name, label))
        return name

    def _add(self, link: str, part: Part) -> None:
        target = next(item for item in self.links if item.name == link)
        target.parts.append(part)

    def box(self, link: str, size, center, rotation=None, name: str | None = None) -> None:
        size = tuple(round(float(v), 4) for v in size)
        self._add(link, Part("box", size, pose(rotation, center), name or f"{link}_box"))

    def cylinder(self, link, radius, length, center, axis="z", name: str | None = None) -> None:
        size = (round(float(radius), 4), round(float(length), 4))
        rotation = rotation_to(axis)
        self._add(link, Part("cylinder", size, pose(rotation, center), name or f"{link}_cyl"))

    def joint(
        self,
        name: str,
        type: str,
        parent: str,
        child: str,
        point,
        axis="z",
        lower: float | None = None,
        upper: float | None = None,
        pitch: float = 0.0,
        frame_rotation=None,
    ) -> None:
        a = np.asarray(AXES[axis] if isinstance(axis, str) else axis, dtype=float)
        a = a / np.linalg.norm(a)
        self.joints.append(
            JointDesign(
                name, type, parent, child, pose(frame_rotation, point), a, lower, upper, pitch
            )
        )

    def attach(self, parent: str, name: str, label: str, point, separate: bool) -> str:
        """Where to put a rigid accessory (a handle, a screen): its own link joined to `parent`
        by a fixed joint when `separate` (the helper-link quirk), else `parent` itself."""
        if not separate:
            return parent
        self.link(name, label)
        self.joint(f"{name}_fixed", "fixed", parent, name, point)
        return name

    def build(self) -> Design:
        children = {j.child for j in self.joints}
        root = next(link.name for link in self.links if link.name not in children)
        return Design(
            self.name, self.kind, self.category, self.model_cat, root, self.links, self.joints
        )


def part_inertia(part: Part) -> tuple[float, np.ndarray]:
    """Mass and inertia tensor about the part's centre, in the part frame, at DENSITY."""
    if part.shape == "box":
        x, y, z = part.size
        mass = DENSITY * x * y * z
        diag = mass / 12.0 * np.array([y * y + z * z, x * x + z * z, x * x + y * y])
    else:
        r, h = part.size
        mass = DENSITY * math.pi * r * r * h
        side = mass / 12.0 * (3 * r * r + h * h)
        diag = np.array([side, side, mass * r * r / 2.0])
    return mass, np.diag(diag)


def link_inertial(parts: list[Part], frame: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Mass, centre of mass and inertia about it, in the link frame whose world pose is `frame`."""
    to_link = np.linalg.inv(frame)
    masses, centres, inertias = [], [], []
    for part in parts:
        local = to_link @ part.pose
        mass, inertia = part_inertia(part)
        rot = local[:3, :3]
        masses.append(mass)
        centres.append(local[:3, 3])
        inertias.append(rot @ inertia @ rot.T)
    total = float(sum(masses))
    com = sum(m * c for m, c in zip(masses, centres, strict=True)) / total
    tensor = np.zeros((3, 3))
    for m, c, inertia in zip(masses, centres, inertias, strict=True):
        d = c - com
        tensor += inertia + m * (float(d @ d) * np.eye(3) - np.outer(d, d))
    return total, com, tensor
