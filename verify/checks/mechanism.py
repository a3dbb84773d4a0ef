"""Moving parts working as mechanisms in MuJoCo: `mechanism.penetration`.

A drawer must slide in its cabinet and a door swing in its frame without MuJoCo pushing them
apart: their collision geometry must not overlap their parent's. For every driving prismatic,
revolute or continuous joint (not a mimic follower, not a free body), the joint alone is set to
rest and to its lower limit, 1/4, 1/2, 3/4 of its range and its upper limit (unbounded
rotations: pi/2, pi and -pi/2), everything else at rest (mimic followers take their coupled
values), and MuJoCo's collision pipeline (`mj_collision`) runs on the model the simulator
checks compiled from the shipped URDF, exactly its collision geoms (contype/conaffinity as
written), with parent-child filtering turned off (MuJoCo skips parent-child body pairs by
default, exactly the pairs judged here). The moving side is the joint's child link and its
subtree, the parent side its parent link and the links fixed to it (one rigid body). The
penetration depth of a contact is minus its distance; the deepest over the configurations is
the joint's value, reported with the configuration and the two geoms.

Tolerance: DEPTH_TOLERANCE (1 mm). Allowance where the source itself is built overlapping (a
hinge pin inside its frame, a drawer's runners in their grooves): the deepest point of the
moving side's visual shapes inside the parent side's at rest (vertices of one inside the other,
when that one is watertight, by signed distance) is added to the tolerance, and the message
and threshold record it. The allowances of `verify/allowances.py` waive the check per source or
object as any other.

The check is a warning (the object goes to review): with one convex hull per collision mesh,
as MuJoCo collides them, a cabinet's carcass fills its cavities and most drawers fail. Objects
with more than MAX_JOINTS judged joints are skipped (`mechanism.skipped`, info), as are objects
MuJoCo did not compile (the simulator checks say why).
"""

from __future__ import annotations

import copy
import math

import numpy as np

from verify.checks import Context, single
from verify.checks.attachment import _primitive
from verify.checks.collision import UNBOUNDED_ANGLES
from verify.report import CheckResult

DEPTH_TOLERANCE = 0.001  # metres
FRACTIONS = (0.0, 0.25, 0.5, 0.75, 1.0)
MAX_JOINTS = 256
MAX_OVERLAP_POINTS = 4096  # vertices of a visual shape tested against another's inside
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


def _rigid_group(obj, link: str, exclude: set[str]) -> set[str]:
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


class _Collider:
    """The simulator checks' MuJoCo model (a copy, parent filtering off) and its data."""

    def __init__(self, mujoco, model):
        self.mujoco = mujoco
        self.model = copy.copy(model)
        self.model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_FILTERPARENT)
        self.data = mujoco.MjData(self.model)
        self.body = {self.model.body(i).name: i for i in range(self.model.nbody)}
        collides = (self.model.geom_contype != 0) | (self.model.geom_conaffinity != 0)
        self.colliding_bodies = set(self.model.geom_bodyid[collides].tolist())

    def address(self, joint: str) -> int | None:
        index = self.mujoco.mj_name2id(self.model, self.mujoco.mjtObj.mjOBJ_JOINT, joint)
        return None if index < 0 else int(self.model.jnt_qposadr[index])

    def bodies(self, links: set[str]) -> set[int]:
        return {self.body[name] for name in links if name in self.body}

    def deepest(self, coords: dict[str, float], moving: set[int], fixed: set[int]):
        """(depth m, geom names) of the deepest contact between the two sides at `coords`."""
        mujoco, model, data = self.mujoco, self.model, self.data
        data.qpos[:] = model.qpos0
        for name, value in coords.items():
            address = self.address(name)
            if address is not None:
                data.qpos[address] = value
        mujoco.mj_kinematics(model, data)
        mujoco.mj_collision(model, data)
        best = (0.0, None)
        contacts = data.contact
        for k in range(data.ncon):
            g1, g2 = int(contacts.geom1[k]), int(contacts.geom2[k])
            b1, b2 = model.geom_bodyid[g1], model.geom_bodyid[g2]
            if not ((b1 in moving and b2 in fixed) or (b2 in moving and b1 in fixed)):
                continue
            depth = -float(contacts.dist[k])
            if depth > best[0]:
                best = (depth, (model.geom(g1).name, model.geom(g2).name))
        return best


def _visual_parts(obj, links: set[str], poses: dict, meshes: dict):
    """Trimesh of each visual shape of `links`, placed at `poses`."""
    import trimesh

    parts = []
    for name in links:
        for g in obj.link_map[name].visuals:
            if g.kind == "mesh":
                mesh = meshes.get(g.filename)
                if mesh is None:
                    continue
                v, f = np.asarray(mesh.vertices) * g.scale, np.asarray(mesh.faces)
            else:
                v, f = _primitive(g.kind, g.size)
            pose = poses[name] @ g.origin
            parts.append(trimesh.Trimesh(v @ pose[:3, :3].T + pose[:3, 3], f, process=False))
    return parts


def _inside_depth(points: np.ndarray, mesh) -> float:
    """Deepest of `points` inside a watertight `mesh` (0 when none is, or it is not closed)."""
    import trimesh

    if not mesh.is_watertight or len(points) == 0:
        return 0.0
    low, high = mesh.bounds
    points = points[np.all((points > low) & (points < high), axis=1)]
    if len(points) == 0:
        return 0.0
    points = points[:: max(1, len(points) // MAX_OVERLAP_POINTS)]
    return max(0.0, float(trimesh.proximity.signed_distance(mesh, points).max()))


def source_overlap(obj, moving: set[str], fixed: set[str], poses: dict, meshes: dict) -> float:
    """How deep (m) the moving side's visual shapes lie inside the parent side's at rest, as
    the source built them: the deepest vertex of either inside the other."""
    a = _visual_parts(obj, moving, poses, meshes)
    b = _visual_parts(obj, fixed, poses, meshes)
    depth = 0.0
    for one in a:
        for other in b:
            if not _boxes_overlap(one.bounds, other.bounds):
                continue
            depth = max(
                depth,
                _inside_depth(np.asarray(one.vertices), other),
                _inside_depth(np.asarray(other.vertices), one),
            )
    return depth


def _boxes_overlap(a, b) -> bool:
    return bool(np.all(a[1] >= b[0]) and np.all(b[1] >= a[0]))


def _label(joint, q: float) -> str:
    if q == 0.0:
        return "rest"
    if math.isfinite(joint.lower) and joint.upper > joint.lower:
        fraction = (q - joint.lower) / (joint.upper - joint.lower)
        return f"q = {q:.4g} ({fraction:.3g} of its range)"
    return f"q = {q:.4g}"


def run(ctx: Context) -> list[CheckResult]:
    model = ctx.notes.get("mujoco_model")
    if model is None:
        return [
            single(
                "mechanism.skipped",
                "info",
                False,
                "MuJoCo did not compile the object (or is not installed): the mechanism check "
                "was not run",
            )
        ]
    import mujoco

    obj = ctx.reread
    joints = [
        j
        for j in obj.moving_joints
        if j.mimic is None and j.type in JUDGED_TYPES and joint_values(j) is not None
    ]
    if len(joints) > MAX_JOINTS:
        return [
            single(
                "mechanism.skipped",
                "info",
                False,
                f"{len(joints)} joints to judge, more than {MAX_JOINTS}: the mechanism check "
                "was not run",
            )
        ]
    collider = _Collider(mujoco, model)
    rest = ctx.rest_poses
    judged, unjudged, measured = 0, 0, []
    for joint in joints:
        moving_links = set(obj._subtree_links(joint.child))
        fixed_links = _rigid_group(obj, joint.parent, moving_links)
        moving, fixed = collider.bodies(moving_links), collider.bodies(fixed_links)
        if not (moving & collider.colliding_bodies and fixed & collider.colliding_bodies):
            unjudged += 1
            continue
        judged += 1
        worst = (0.0, None, 0.0)
        for q in joint_values(joint):
            coords = obj.resolve_configuration({joint.name: q})
            depth, geoms = collider.deepest(coords, moving, fixed)
            if depth > worst[0]:
                worst = (depth, geoms, q)
        depth, geoms, q = worst
        overlap = 0.0
        if depth > DEPTH_TOLERANCE:
            meshes = ctx.notes.get("meshes", {})
            overlap = source_overlap(obj, moving_links, fixed_links, rest, meshes)
        measured.append((joint, depth, geoms, q, overlap))
    return _results(measured, judged, unjudged)


def _results(measured, judged: int, unjudged: int) -> list[CheckResult]:
    out = []
    allowed = []
    for joint, depth, geoms, q, overlap in measured:
        threshold = DEPTH_TOLERANCE + overlap
        source = (
            f"; the source's visual shapes already overlap by {1000 * overlap:.1f} mm at rest, "
            f"allowed up to {1000 * threshold:.1f} mm"
            if overlap > 0
            else ""
        )
        if depth <= threshold:
            if overlap > 0:
                allowed.append(f"joint {joint.name} {1000 * depth:.1f} mm{source}")
            continue
        out.append(
            single(
                "mechanism.penetration",
                "warning",
                False,
                f"the moving part's collision geometry penetrates its parent's by "
                f"{1000 * depth:.1f} mm at {_label(joint, q)} (geoms {geoms[0]} and "
                f"{geoms[1]}){source}",
                value=depth,
                threshold=threshold,
                element=f"joint {joint.name}",
            )
        )
    if out:
        return out
    note = f"; {unjudged} joint(s) without collision geometry on one side" if unjudged else ""
    note += "; " + "; ".join(allowed) if allowed else ""
    worst = max(measured, key=lambda m: m[1] - m[4], default=None)
    return [
        single(
            "mechanism.penetration",
            "warning",
            True,
            f"{judged} joint(s): no moving part's collision geometry penetrates its parent's "
            f"by more than {1000 * DEPTH_TOLERANCE:g} mm over its range{note}",
            value=0.0 if worst is None else worst[1],
            threshold=DEPTH_TOLERANCE if worst is None else DEPTH_TOLERANCE + worst[4],
        )
    ]
