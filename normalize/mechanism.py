"""Where an object's mechanisms are judged: the joints, the coordinates each is set to and the
two rigid sides it separates. Shared by the convex collision parts (`normalize.collision_parts`,
which clear these configurations) and the `mechanism.penetration` check (which judges them)."""

from __future__ import annotations

import math

DEPTH_TOLERANCE = 0.001  # metres: the deepest contact a mechanism may have
FRACTIONS = (0.0, 0.25, 0.5, 0.75, 1.0)
UNBOUNDED_ANGLES = (math.pi / 2, math.pi, -math.pi / 2)
JUDGED_TYPES = ("prismatic", "revolute", "continuous")


def joint_values(joint) -> tuple[float, ...] | None:
    """Rest and the coordinates one joint is checked at, None for a free body."""
    if math.isfinite(joint.lower):
        values = [joint.lower + f * (joint.upper - joint.lower) for f in FRACTIONS]
    elif joint.type == "prismatic":
        return None
    else:
        values = list(UNBOUNDED_ANGLES)
    return tuple(dict.fromkeys([0.0, *values]))


def judged_joints(obj) -> list:
    """The driving joints a mechanism is judged at (no mimic followers, no free bodies)."""
    return [
        j
        for j in obj.moving_joints
        if j.mimic is None and j.type in JUDGED_TYPES and joint_values(j) is not None
    ]


def rigid_group(obj, link: str, exclude: set[str]) -> set[str]:
    """`link` and every link joined to it by fixed joints, up or down, outside `exclude`."""
    group, stack = {link}, [link]
    while stack:
        name = stack.pop()
        for j in obj.joints:
            if j.type != "fixed":
                continue
            other = j.child if j.parent == name else j.parent if j.child == name else None
            if other is not None and other not in group and other not in exclude:
                group.add(other)
                stack.append(other)
    return group


def sides(obj, joint) -> tuple[set[str], set[str]]:
    """(the moving side: the joint's child and its subtree, the parent side: its parent and the
    links fixed to it) of one joint."""
    moving = set(obj.subtree_links(joint.child))
    return moving, rigid_group(obj, joint.parent, moving)
