"""Where an object's mechanisms are judged: the joints, the coordinates each is set to and the
two rigid sides it separates. Shared by the convex collision parts (`normalize.collision_parts`,
which clear these configurations) and the `mechanism.penetration` check (which judges them)."""

from __future__ import annotations

import math

import numpy as np

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


def side_contacts(mujoco, model, data, coords: dict, address: dict, moving, fixed):
    """Pose `data` at `coords` (joint name -> value, `address`: joint name -> its qpos index;
    every other joint at the model's rest), run MuJoCo's collision pipeline and give the
    contacts between a body of the moving side and one of the parent side (`moving`, `fixed`:
    the model's body indices of each), in MuJoCo's order: their geoms (n x 2, parent side
    first), penetration depths (m) and normals (n x 3, from the parent side's geom towards the
    moving side's)."""
    moving, fixed = (np.isin(np.arange(model.nbody), list(side)) for side in (moving, fixed))
    data.qpos[:] = model.qpos0
    for name, value in coords.items():
        if name in address:
            data.qpos[address[name]] = value
    mujoco.mj_kinematics(model, data)
    mujoco.mj_collision(model, data)
    count = data.ncon
    geoms = data.contact.geom[:count]
    bodies = model.geom_bodyid[geoms]
    forward = fixed[bodies[:, 0]] & moving[bodies[:, 1]]
    turned = moving[bodies[:, 0]] & fixed[bodies[:, 1]]
    index = np.flatnonzero(forward | turned)
    turned = turned[index]
    oriented = np.where(turned[:, None], geoms[index, ::-1], geoms[index])
    normals = data.contact.frame[index, :3] * np.where(turned, -1.0, 1.0)[:, None]
    return oriented, -data.contact.dist[index], normals
