"""Helical (screw) joints: composed from mimic-coupled prismatic + rotational pairs, and split
back into such a pair for writing URDF, which has no helical joint type.

A pair composes when all of these hold (anything else stays as it is):
- joint A from link P to link M and joint B from M to link C, one prismatic and one rotational
  (continuous or revolute);
- M has no geometry, no mass, and no other joint attached;
- one of the pair mimics the other with offset 0: x = m * theta (the rotational drives) or
  theta = m * x with m != 0 (the prismatic drives); the driver is not a follower of a third
  joint unless it is the rotational;
- the prismatic axis is parallel (world frame, at rest, within 1e-9) to the rotation axis.
The helical joint keeps the rotational joint's name, runs from P to C with the rotation angle as
its coordinate, pitch = translation per radian along its axis (negative when the slide runs
against the rotation axis), and the driver's limits (converted to radians if the prismatic
drives). Joints that mimicked the prismatic now mimic the helical joint with the multiplier
converted. `split_helical` is the exact inverse for objects `compose_helical` leaves unchanged.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from normalize.changes import Change
from normalize.model import ArticulatedObject, Joint, Link, Mimic

PARALLEL_TOLERANCE = 1e-9
ROTATIONAL = ("continuous", "revolute")


def _massless(link: Link) -> bool:
    return (
        not link.visuals
        and not link.collisions
        and (link.inertial is None or link.inertial.mass == 0.0)
    )


def _pair_coupling(first: Joint, second: Joint) -> tuple[Joint, Joint, float, str] | None:
    """(prismatic, rotational, c, driver) with x = c * theta when the two joints are coupled
    by a mimic with offset 0, else None."""
    types = {first.type, second.type}
    if "prismatic" not in types or not types & set(ROTATIONAL) or len(types) != 2:
        return None
    prismatic, rotational = (first, second) if first.type == "prismatic" else (second, first)
    if prismatic.mimic is not None and prismatic.mimic.joint == rotational.name:
        mimic, driver = prismatic.mimic, "rotational"
        if mimic.offset != 0.0:
            return None
        return prismatic, rotational, mimic.multiplier, driver
    if rotational.mimic is not None and rotational.mimic.joint == prismatic.name:
        mimic = rotational.mimic
        if mimic.offset != 0.0 or mimic.multiplier == 0.0 or prismatic.mimic is not None:
            return None
        return prismatic, rotational, 1.0 / mimic.multiplier, "prismatic"
    return None


def _helical_limits(prismatic: Joint, rotational: Joint, driver: str) -> tuple[float, float]:
    if driver == "rotational":
        return rotational.lower, rotational.upper
    if not math.isfinite(prismatic.lower):
        return -math.inf, math.inf
    m = rotational.mimic.multiplier
    lower, upper = sorted((m * prismatic.lower, m * prismatic.upper))
    return lower, upper


def _compose_pair(a: Joint, b: Joint, coupling: tuple[Joint, Joint, float, str]):
    """(helical joint, child frame offset or None, change) for the pair a: P -> M, b: M -> C
    coupled as `_pair_coupling` found, or None when their axes are not parallel. With an offset
    T the child link frame moves: old child frame = new child frame @ T."""
    prismatic, rotational, c, driver = coupling
    # Axes of both joints in a's joint frame, at rest.
    a_axis_in_a = a.axis
    b_axis_in_a = b.origin[:3, :3] @ b.axis
    s = float(a_axis_in_a @ b_axis_in_a)
    if np.linalg.norm(np.cross(a_axis_in_a, b_axis_in_a)) > PARALLEL_TOLERANCE:
        return None
    sign = 1.0 if s > 0 else -1.0
    moved = None
    if a is prismatic:
        # Slide then rotate: Trans(a x) @ O_b @ Rot(b, theta) = O_b @ Trans(s b x) @ Rot(...).
        origin, axis = a.origin @ b.origin, b.axis
    else:
        # Rotate then slide: Rot(a, theta) @ O_b @ Trans(b x) = Rot(a) @ Trans(s a x) @ O_b.
        offset = b.origin
        on_axis = np.linalg.norm(np.cross(offset[:3, 3], a.axis)) <= PARALLEL_TOLERANCE
        if on_axis:
            origin, axis = a.origin @ offset, offset[:3, :3].T @ a.axis
        else:
            origin, axis = a.origin, a.axis
            moved = offset
    pitch = sign * c
    lower, upper = _helical_limits(prismatic, rotational, driver)
    mimic = rotational.mimic if driver == "rotational" else None
    helical = Joint(
        rotational.name,
        "helical",
        a.parent,
        b.child,
        origin=origin,
        axis=axis,
        lower=lower,
        upper=upper,
        pitch=pitch,
        mimic=mimic,
        source_name=rotational.source_name,
        effort=rotational.effort,
        velocity=rotational.velocity,
    )
    dropped = ""
    if driver == "rotational" and math.isfinite(prismatic.lower):
        dropped = f"; the follower's own limits [{prismatic.lower:g}, {prismatic.upper:g}] lapse"
    change = Change(
        "joint.helical_composed",
        f"prismatic joint {prismatic.name} and {rotational.type} joint {rotational.name}, coupled "
        f"by a mimic (x = {c:.12g} theta), composed with the massless link "
        f"{a.child} into helical joint {rotational.name} with pitch {pitch:.12g} m/rad{dropped}"
        + ("; the child link frame moved onto the screw axis" if moved is not None else ""),
        element=f"joint {rotational.name}",
    )
    return helical, moved, change


def compose_helical(obj: ArticulatedObject) -> tuple[ArticulatedObject, list[Change]]:
    """Compose every coupled prismatic + rotational pair into one helical joint (see the module
    docstring); returns the new object and one ``joint.helical_composed`` change per pair."""
    changes: list[Change] = []
    while True:
        found = _find_pair(obj)
        if found is None:
            return obj, changes
        obj, change = found
        changes.append(change)


def _find_pair(obj: ArticulatedObject):
    """The object with the first composable pair composed, and its change; None if none."""
    children: dict[str, list[Joint]] = {}
    for joint in obj.joints:
        children.setdefault(joint.parent, []).append(joint)
    for a in obj.joints:
        middle = obj.link_map[a.child]
        below = children.get(a.child, [])
        if len(below) != 1 or not _massless(middle):
            continue
        b = below[0]
        coupling = _pair_coupling(a, b)
        composed = _compose_pair(a, b, coupling) if coupling is not None else None
        if composed is None:
            continue
        helical, moved, change = composed
        prismatic, _, c, _ = coupling
        joints = []
        for joint in obj.joints:
            if joint is a:
                joints.append(helical)
            elif joint is b:
                continue
            else:
                if joint.mimic is not None and joint.mimic.joint == prismatic.name:
                    # y = k x + d with x = c theta.
                    mimic = Mimic(helical.name, joint.mimic.multiplier * c, joint.mimic.offset)
                    joint = replace(joint, mimic=mimic)
                if moved is not None and joint.parent == b.child:
                    joint = replace(joint, origin=moved @ joint.origin)
                joints.append(joint)
        links = [
            link.reexpressed(moved) if (moved is not None and link.name == b.child) else link
            for link in obj.links
            if link.name != middle.name
        ]
        return obj.replace(links=tuple(links), joints=tuple(joints)), change
    return None


def split_helical(obj: ArticulatedObject) -> ArticulatedObject:
    """Each helical joint J (P -> C) becomes the rotational joint J (continuous when unbounded,
    else revolute; same origin, axis, limits and mimic) from P to a massless link ``<C>__screw``,
    then the prismatic joint ``<J>__screw`` (identity origin, same axis) from there to C,
    mimicking J with multiplier = pitch. `compose_helical` undoes it exactly."""
    if not any(j.type == "helical" for j in obj.joints):
        return obj
    links = list(obj.links)
    joints = []
    for joint in obj.joints:
        if joint.type != "helical":
            joints.append(joint)
            continue
        middle = f"{joint.child}__screw"
        links.append(Link(middle))
        bounded = math.isfinite(joint.lower)
        joints.append(
            replace(
                joint,
                type="revolute" if bounded else "continuous",
                child=middle,
                pitch=0.0,
            )
        )
        if bounded:
            lower, upper = sorted((joint.pitch * joint.lower, joint.pitch * joint.upper))
        else:
            lower, upper = -math.inf, math.inf
        joints.append(
            Joint(
                f"{joint.name}__screw",
                "prismatic",
                middle,
                joint.child,
                origin=np.eye(4),
                axis=joint.axis,
                lower=lower,
                upper=upper,
                mimic=Mimic(joint.name, joint.pitch, 0.0),
                source_name=joint.source_name,
            )
        )
    return obj.replace(links=tuple(links), joints=tuple(joints))
