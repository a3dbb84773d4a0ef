"""Parts that pass through each other: `collision.range`.

For each moving joint, the joint alone is set to its lower and upper limit and half way between
(unbounded rotations to pi/2, pi and -pi/2), everything else at rest (mimic followers take
their coupled values). The moving side is every link that moves at one of those
configurations, the fixed side every other link. Each link is its collision shapes (what a
simulator collides; its visual shapes when it has none), as one triangle mesh with a
bounding-volume hierarchy (python-fcl, built through `trimesh.collision`).

A pair (moving link, fixed link) whose triangles intersect at one of the configurations but
not at rest, and still intersect with the part moved back along its motion by the depth
tolerance (5 % of the object's largest extent, at least 5 mm; for a rotation, that arc length
at the moving side's largest distance from the axis), is a new interpenetration: a door whose
hinge axis is reversed swings into its cabinet, a drawer slides through the back wall.
Shallower contacts (a key pressed a few millimetres into its board) are not judged.

What it cannot see: pairs already in contact at rest (a drawer touching its runners, a lid
resting on its pot; open and non-watertight meshes give no inside to measure depth in), a part
that ends up wholly inside another without any triangles crossing, and faces that merely touch
(they count as intersecting: a sash whose lock is flush with its neighbour). Free bodies
(unbounded prismatic joints) and joints with no shapes on one side are not judged (the message
counts them).

The check is a warning (the object goes to review): real libraries have parts that graze each
other at a generous limit.
"""

from __future__ import annotations

import math

import numpy as np

from verify.checks import Context, single
from verify.checks.attachment import _primitive
from verify.report import CheckResult

UNBOUNDED_ANGLES = (math.pi / 2, math.pi, -math.pi / 2)
MAX_REACH_POINTS = 2048
#: How deep a part must go, along its own motion, before a new contact counts: this fraction of
#: the object's largest extent, at least DEPTH_MIN (the attachment check's tolerance).
DEPTH_FRACTION = 0.05
DEPTH_MIN = 0.005  # metres
FRACTIONS = (0.0, 0.5, 1.0)


def joint_values(joint) -> tuple[float, ...] | None:
    """The coordinates one joint is checked at (rest excluded), None for a free body."""
    if math.isfinite(joint.lower):
        values = [joint.lower + f * (joint.upper - joint.lower) for f in FRACTIONS]
        return tuple(v for v in dict.fromkeys(values) if v != 0.0)
    if joint.type == "prismatic":
        return None
    return UNBOUNDED_ANGLES


def _link_mesh(link, meshes: dict):
    """(vertices, faces) of a link's collision shapes (else visual shapes), link frame."""
    vertices, faces, count = [], [], 0
    for g in link.collisions or link.visuals:
        if g.kind == "mesh":
            mesh = meshes.get(g.filename)
            if mesh is None:
                continue
            v, f = mesh.vertices * g.scale, mesh.faces
        else:
            v, f = _primitive(g.kind, tuple(g.size))
        vertices.append(v @ g.origin[:3, :3].T + g.origin[:3, 3])
        faces.append(f + count)
        count += len(v)
    if not vertices:
        return None
    return np.concatenate(vertices), np.concatenate(faces)


class _Scene:
    """One fcl collision object per link with shapes, placed by `place(poses)`."""

    def __init__(self, obj, meshes: dict):
        import fcl
        import trimesh
        from trimesh.collision import mesh_to_BVH

        self.fcl = fcl
        self.objects, self.boxes, self.points = {}, {}, {}
        for link in obj.links:
            found = _link_mesh(link, meshes)
            if found is None:
                continue
            mesh = trimesh.Trimesh(*found, process=False)
            self.objects[link.name] = fcl.CollisionObject(mesh_to_BVH(mesh), fcl.Transform())
            low, high = found[0].min(axis=0), found[0].max(axis=0)
            self.boxes[link.name] = (
                np.array(np.meshgrid(*zip(low, high, strict=True))).reshape(3, -1).T
            )
            self.points[link.name] = found[0][:: max(1, len(found[0]) // MAX_REACH_POINTS)]

    def contacts(self, poses: dict, moving: set[str]) -> set[tuple[str, str]]:
        """(moving link, fixed link) pairs whose triangles intersect at `poses`."""
        fcl = self.fcl
        names = list(self.objects)
        pose = np.stack([poses[n] for n in names])
        corners = np.einsum(
            "lij,lkj->lki", pose[:, :3, :3], np.stack([self.boxes[n] for n in names])
        )
        corners += pose[:, None, :3, 3]
        low, high = corners.min(axis=1), corners.max(axis=1)
        mask = np.array([n in moving for n in names])
        a, b = np.flatnonzero(mask), np.flatnonzero(~mask)
        # the world boxes that overlap, every moving against every fixed link at once
        overlap = np.all((high[a, None] >= low[None, b]) & (high[None, b] >= low[a, None]), axis=2)
        request = fcl.CollisionRequest(num_max_contacts=1)
        found, placed = set(), set()
        for i, k in zip(*np.nonzero(overlap), strict=True):
            for name in (names[a[i]], names[b[k]]):
                if name not in placed:
                    placed.add(name)
                    p = poses[name]
                    self.objects[name].setTransform(fcl.Transform(p[:3, :3], p[:3, 3]))
            result = fcl.CollisionResult()
            if fcl.collide(self.objects[names[a[i]]], self.objects[names[b[k]]], request, result):
                found.add((names[a[i]], names[b[k]]))
        return found


def _reach(scene: _Scene, joint, frame: np.ndarray, moving: set[str], rest: dict) -> float:
    """Largest distance of the moving side's points from a rotating joint's axis at rest."""
    origin, axis = frame[:3, 3], frame[:3, :3] @ joint.axis
    reach = 0.0
    for name in moving & set(scene.points):
        points = scene.points[name] @ rest[name][:3, :3].T + rest[name][:3, 3] - origin
        radial = points - np.outer(points @ axis, axis)
        reach = max(reach, float(np.linalg.norm(radial, axis=1).max()))
    return reach


def run(ctx: Context) -> list[CheckResult]:
    obj = ctx.reread
    scene = _Scene(obj, ctx.notes.get("meshes", {}))
    rest = ctx.rest_poses
    depth = max(DEPTH_FRACTION * (ctx.notes.get("extent") or 0.0), DEPTH_MIN)
    frames = obj.joint_frames()
    flagged, judged, skipped = [], 0, 0
    for joint in obj.moving_joints:
        values = joint_values(joint)
        if joint.mimic is not None:
            continue  # moves with its driver
        if values is None:
            skipped += 1
            continue
        configurations = [
            (q, obj.link_poses(obj.resolve_configuration({joint.name: q}))) for q in values
        ]
        names = list(rest)
        rest_stack = np.stack([rest[n] for n in names])
        moved = [np.stack([p[n] for n in names]) != rest_stack for _, p in configurations]
        moving = {
            names[i] for differs in moved for i in np.flatnonzero(np.any(differs, axis=(1, 2)))
        }
        if not (moving & set(scene.objects)) or not (set(scene.objects) - moving):
            skipped += 1
            continue
        judged += 1
        at_rest = scene.contacts(rest, moving)
        # The coordinate change that moves the part by `depth` (rotations: at its reach).
        rotating = joint.type in ("revolute", "continuous", "helical")
        reach = _reach(scene, joint, frames[joint.name], moving, rest) if rotating else 1.0
        step = depth / reach if reach > 0 else math.inf
        new: dict[tuple[str, str], list[float]] = {}
        for q, poses in configurations:
            if abs(q) <= step:
                continue  # moved less than `depth` from rest: a graze at most
            found = scene.contacts(poses, moving) - at_rest
            if found:  # still intersecting `depth` less far along the motion?
                back = obj.resolve_configuration({joint.name: q - math.copysign(step, q)})
                found &= scene.contacts(obj.link_poses(back), moving)
            for pair in found:
                new.setdefault(pair, []).append(q)
        if new:
            flagged.append((joint, new))
    note = f"; {skipped} joint(s) not judged (free bodies or no shapes on one side)"
    if not flagged:
        return [
            single(
                "collision.range",
                "warning",
                True,
                f"{judged} joint(s): no moving part newly intersects the fixed side over its "
                f"range{note if skipped else ''}",
                value=0,
                threshold=0,
            )
        ]
    out = []
    for joint, new in flagged:
        pairs = sorted(new.items())
        shown = "; ".join(
            f"link {a} intersects link {b} at q = {', '.join(f'{q:.4g}' for q in qs)}"
            for (a, b), qs in pairs[:3]
        )
        more = f" (and {len(pairs) - 3} more pairs)" if len(pairs) > 3 else ""
        out.append(
            single(
                "collision.range",
                "warning",
                False,
                f"moving the joint makes parts pass through each other, not touching at rest: "
                f"{shown}{more}",
                value=len(pairs),
                threshold=0,
                element=f"joint {joint.name}",
            )
        )
    return out
