"""Parts that pass through each other: `collision.range`.

For each moving joint, the joint alone is set to its lower and upper limit and half way between
(unbounded rotations to pi/2, pi and -pi/2), everything else at rest (mimic followers take
their coupled values). The moving side is every link that moves at one of those
configurations, the fixed side every other link. Each link is its collision shapes as the source
gives them (`object_source_collision.urdf` where the shipped collision meshes are their convex
hulls, whose surfaces would cross wherever a drawer leaves its carcass's hull; its visual shapes
when it has none), as one triangle mesh with a bounding-volume hierarchy (python-fcl, built
through `trimesh.collision`).

A pair (moving link, fixed link) whose triangles intersect at one of the configurations but
not at rest, and still intersect with the part moved back along its motion by the depth
tolerance (5 % of the object's largest extent, at least 5 mm; for a rotation, that arc length
at the moving side's largest distance from the axis), is a new interpenetration: a door whose
hinge axis is reversed swings into its cabinet, a drawer slides through the back wall.
Shallower contacts (a key pressed a few millimetres into its board) are not judged, nor are
intersections whose points (where triangles cross, from python-fcl's contacts) span less than
that tolerance: corners of two parts rubbing over a small patch, a caster's fork grazing its
chair leg as it swivels, rather than one part passing through another. A fixed link that is
a part on a joint of its own (a door in front of a crisper drawer) is judged with that joint at
each of its checked coordinates too: when one of them clears the way (the door opened first),
the pair is not flagged. For every flagged joint the message gives the largest span of its
intersections and how far the part moves on past where it first touches (bisection along the
motion), which bounds its depth of penetration from above.

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

from normalize.mechanism import UNBOUNDED_ANGLES
from normalize.meshes import load_mesh
from normalize.urdf import read_object
from normalize.urdf_writer import SOURCE_COLLISION_NAME
from verify.checks import Context, single
from verify.checks.attachment import _primitive
from verify.report import CheckResult

MAX_REACH_POINTS = 2048
#: How deep a part must go, along its own motion, before a new contact counts: this fraction of
#: the object's largest extent, at least DEPTH_MIN (the attachment check's tolerance).
DEPTH_FRACTION = 0.05
DEPTH_MIN = 0.005  # metres
FRACTIONS = (0.0, 0.5, 1.0)
MAX_CONTACTS = 10000  # triangle pairs gathered to measure where a flagged pair intersects
BISECTIONS = 12  # steps locating where a flagged pair first touches (1/4096 of the motion)


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
    """The links with shapes as triangle meshes; each one's fcl collision object (its BVH) is
    built the first time a pair with it passes the bounding-box test, so links that never come
    near another cost nothing."""

    def __init__(self, obj, meshes: dict):
        import fcl

        self.fcl = fcl
        self.meshes, self.boxes, self.points, self.built = {}, {}, {}, {}
        for link in obj.links:
            found = _link_mesh(link, meshes)
            if found is None:
                continue
            self.meshes[link.name] = found
            low, high = found[0].min(axis=0), found[0].max(axis=0)
            self.boxes[link.name] = (
                np.array(np.meshgrid(*zip(low, high, strict=True))).reshape(3, -1).T
            )
            self.points[link.name] = found[0][:: max(1, len(found[0]) // MAX_REACH_POINTS)]
        self.names = set(self.meshes)

    def _placed(self, name: str, pose: np.ndarray):
        fcl = self.fcl
        placed = self.built.get(name)
        if placed is None:
            import trimesh
            from trimesh.collision import mesh_to_BVH

            mesh = trimesh.Trimesh(*self.meshes[name], process=False)
            placed = self.built[name] = fcl.CollisionObject(mesh_to_BVH(mesh), fcl.Transform())
        placed.setTransform(fcl.Transform(pose[:3, :3], pose[:3, 3]))
        return placed

    def _collide(self, poses: dict, a: str, b: str, request):
        result = self.fcl.CollisionResult()
        hit = self.fcl.collide(
            self._placed(a, poses[a]), self._placed(b, poses[b]), request, result
        )
        return bool(hit), result

    def touch(self, poses: dict, a: str, b: str) -> bool:
        """Whether links `a` and `b` intersect at `poses`."""
        return self._collide(poses, a, b, self.fcl.CollisionRequest(num_max_contacts=1))[0]

    def crossings(self, poses: dict, a: str, b: str) -> np.ndarray:
        """The points (n x 3, world) where the triangles of links `a` and `b` intersect at
        `poses` (up to MAX_CONTACTS; none when they do not)."""
        request = self.fcl.CollisionRequest(num_max_contacts=MAX_CONTACTS, enable_contact=True)
        hit, result = self._collide(poses, a, b, request)
        if not hit:
            return np.zeros((0, 3))
        return np.array([contact.pos for contact in result.contacts])

    def span(self, poses: dict, a: str, b: str) -> float:
        """Largest side (m) of the box around the points where the triangles of links `a` and
        `b` intersect at `poses` (0 when they do not)."""
        points = self.crossings(poses, a, b)
        if len(points) == 0:
            return 0.0
        return float((points.max(axis=0) - points.min(axis=0)).max())

    def contacts(self, poses: dict, moving: set[str]) -> set[tuple[str, str]]:
        """(moving link, fixed link) pairs whose triangles intersect at `poses`."""
        names = sorted(self.names)
        if not names:
            return set()
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
        request = self.fcl.CollisionRequest(num_max_contacts=1)
        found = set()
        for i, k in zip(*np.nonzero(overlap), strict=True):
            pair = (names[a[i]], names[b[k]])
            if self._collide(poses, *pair, request)[0]:
                found.add(pair)
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


def _travel_past_contact(obj, scene: _Scene, name: str, q: float, pair, reach: float) -> float:
    """How far (m; rotations: arc length at `reach`) the part has moved from where `pair` first
    touches on the way from rest to `q` (bisection): at least its depth of penetration."""
    inside, outside = 1.0, 0.0
    for _ in range(BISECTIONS):
        middle = (inside + outside) / 2
        poses = obj.link_poses(obj.resolve_configuration({name: middle * q}))
        if scene.touch(poses, *pair):
            inside = middle
        else:
            outside = middle
    return (1.0 - inside) * abs(q) * reach


def _in_the_way(obj, scene: _Scene, motions: dict, name: str, q: float, pair) -> bool:
    """Whether the fixed link of `pair` is a part on a joint of its own that clears the moving
    link when it moves (a crisper drawer behind a closed door: the door opens first)."""
    a, b = pair
    moving = motions[name][2]
    for other, (values, _, moves) in motions.items():
        if other == name or b not in moves or a in moves:
            continue
        for value in values:
            poses = obj.link_poses(obj.resolve_configuration({name: q, other: value}))
            if pair not in scene.contacts(poses, moving):
                return True
    return False


def source_collision(ctx: Context):
    """(the object with the source's collision meshes, its meshes by file): the written
    `object_source_collision.urdf` read back, else the shipped object."""
    meshes = ctx.notes.get("meshes", {})
    path = ctx.folder / SOURCE_COLLISION_NAME
    if not path.is_file():
        return ctx.reread, meshes
    obj = read_object(path)
    meshes = dict(meshes)
    for link in obj.links:
        for g in link.collisions:
            if g.kind == "mesh" and g.filename not in meshes:
                element = f"file {g.filename}"
                meshes[g.filename] = load_mesh(
                    ctx.folder / g.filename, root=ctx.folder, element=element
                )
    return obj, meshes


def source_scene(ctx: Context):
    """(the object with the source's collision shapes, its `_Scene`), built once per object
    (the mechanism check measures how far the source moves its parts into each other in it)."""
    if "source_scene" not in ctx.notes:
        obj, meshes = source_collision(ctx)
        ctx.notes["source_scene"] = (obj, _Scene(obj, meshes))
    return ctx.notes["source_scene"]


def run(ctx: Context) -> list[CheckResult]:
    obj, scene = source_scene(ctx)
    rest = ctx.rest_poses
    depth = max(DEPTH_FRACTION * (ctx.notes.get("extent") or 0.0), DEPTH_MIN)
    frames = obj.joint_frames()
    # Every driving joint's checked coordinates, poses there and moving side.
    motions = {}
    for joint in obj.moving_joints:
        values = joint_values(joint)
        if joint.mimic is not None or values is None:
            continue  # a follower moves with its driver; a free body is not judged
        configurations = [
            (q, obj.link_poses(obj.resolve_configuration({joint.name: q}))) for q in values
        ]
        names = list(rest)
        rest_stack = np.stack([rest[n] for n in names])
        moved = [np.stack([p[n] for n in names]) != rest_stack for _, p in configurations]
        moving = {
            names[i] for differs in moved for i in np.flatnonzero(np.any(differs, axis=(1, 2)))
        }
        motions[joint.name] = (values, configurations, moving)
    flagged, judged, skipped = [], 0, 0
    for joint in obj.moving_joints:
        if joint.mimic is not None:
            continue
        if joint.name not in motions:
            skipped += 1
            continue
        values, configurations, moving = motions[joint.name]
        if not (moving & scene.names) or not (scene.names - moving):
            skipped += 1
            continue
        judged += 1
        at_rest = scene.contacts(rest, moving)
        # The coordinate change that moves the part by `depth` (rotations: at its reach).
        rotating = joint.type in ("revolute", "continuous", "helical")
        reach = _reach(scene, joint, frames[joint.name], moving, rest) if rotating else 1.0
        step = depth / reach if reach > 0 else math.inf
        new: dict[tuple[str, str], list[float]] = {}
        spans: dict[tuple[str, str], float] = {}
        for q, poses in configurations:
            if abs(q) <= step:
                continue  # moved less than `depth` from rest: a graze at most
            found = scene.contacts(poses, moving) - at_rest
            if found:  # still intersecting `depth` less far along the motion?
                back = obj.resolve_configuration({joint.name: q - math.copysign(step, q)})
                found &= scene.contacts(obj.link_poses(back), moving)
            for pair in found:
                span = scene.span(poses, *pair)
                if span < depth:
                    continue  # corners rubbing over a small patch: a graze, not a pass-through
                if not _in_the_way(obj, scene, motions, joint.name, q, pair):
                    new.setdefault(pair, []).append(q)
                    spans[pair] = max(spans.get(pair, 0.0), span)
        if new:
            travel = max(
                _travel_past_contact(obj, scene, joint.name, max(qs, key=abs), pair, reach)
                for pair, qs in new.items()
            )
            flagged.append((joint, new, travel, max(spans.values())))
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
    for joint, new, travel, span in flagged:
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
                f"{shown}{more}; the intersections span up to {1000 * span:.0f} mm and the part "
                f"moves up to {1000 * travel:.0f} mm on past first touching",
                value=len(pairs),
                threshold=0,
                element=f"joint {joint.name}",
            )
        )
    return out
