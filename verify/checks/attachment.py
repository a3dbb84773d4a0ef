"""Attachment: every moving part stays near the rest of the object, at rest and over its range.

For each moving joint, the moving side is the child link with every link below it; the fixed
side is every other link. The joint alone is set to its lower limit, 0 and its upper limit
(unbounded rotations: 0, pi/2, pi, -pi/2), everything else at rest, and the gap is the smallest
distance between points sampled on the moving side and on any fixed-side link (SAMPLES_PER_LINK
points per link, area weighted, seeded, plus up to MAX_VERTICES mesh vertices). The parent link
is tried first; the other links only when the parent is too far (a part of a cut closed loop, like
folding-chair legs, may touch a sibling rather than its parent).

- attachment.rest (warning): the gap at q = 0: a part that floats at rest looks detached.
- attachment.range (warning): the largest gap over the joint's configurations: a drawer pulled
  out of its cabinet at its upper limit, a door swinging away from its frame.
- attachment.axis (warning, sends the object to review): for rotating joints (revolute,
  continuous, helical), the distance from the joint axis (the infinite line) to the moving side
  at rest: a hinge should touch what it turns, so a door whose hinge is a metre away is flagged.

Every check here is a heuristic, so a warning: real libraries hold parts that legitimately float
a little or leave their housing at a generous limit (URDFormer drawers, PartNet lids), and valid
models leave links out on purpose (a MuJoCo hand whose elbow is not modelled turns the forearm
about an axis far from it). An axis that misses its part is usually a broken joint placement, so
such an object goes to review (`verify.report.REVIEW_CHECKS`) rather than being refused.

Tolerance per joint: GAP_FRACTION of the object's largest extent (at least GAP_MIN) plus the
sampling spacing sqrt(area / samples) of both sides. Links are their visuals, else collisions.
Not measured (the message counts them): joints with no shape on one side, and free bodies, i.e.
unbounded prismatic joints (from floating or planar bases) and joints whose parent reaches the
nearest link with shapes only through such a joint.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import trimesh
from scipy.spatial import cKDTree

from normalize.convention import link_shapes
from verify.checks import Context, single
from verify.report import CheckResult

GAP_FRACTION = 0.05
GAP_MIN = 0.005  # metres
SAMPLES_PER_LINK = 512
MAX_VERTICES = 512
MAX_MOVING_POINTS = 1024
UNBOUNDED_ANGLES = (0.0, math.pi / 2, math.pi, -math.pi / 2)
SEVERITY = {
    "attachment.rest": "warning",
    "attachment.range": "warning",
    "attachment.axis": "warning",
}
MAX_CACHED_PRIMITIVES = 4096


@dataclass(frozen=True)
class Cloud:
    """Points on a surface and their typical spacing."""

    points: np.ndarray
    spacing: float


@functools.lru_cache(maxsize=MAX_CACHED_PRIMITIVES)  # sizes vary from object to object
def _primitive(kind: str, size: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    if kind == "box":
        mesh = trimesh.creation.box(extents=size[:3])
    elif kind == "ellipsoid":
        mesh = trimesh.creation.icosphere(subdivisions=2, radius=1.0)
        mesh.vertices = mesh.vertices * np.asarray(size[:3])
    elif kind == "sphere":
        mesh = trimesh.creation.icosphere(subdivisions=2, radius=size[0])
    elif kind == "cylinder":
        mesh = trimesh.creation.cylinder(radius=size[0], height=size[1], sections=24)
    else:
        mesh = trimesh.creation.capsule(height=size[1], radius=size[0], count=[12, 12])
    return np.asarray(mesh.vertices, float), np.asarray(mesh.faces, np.int64)


def link_cloud(link, meshes: dict) -> Cloud | None:
    """Surface points of a link's shapes in the link frame, or None when it has none."""
    triangles, vertices = [], []
    for g in link_shapes(link):
        if g.kind == "mesh":
            mesh = meshes.get(g.filename)
            if mesh is None:
                continue
            v, f = mesh.vertices * g.scale, mesh.faces
        else:
            v, f = _primitive(g.kind, g.size)
        v = v @ g.origin[:3, :3].T + g.origin[:3, 3]
        triangles.append(v[f])
        vertices.append(v)
    if not triangles:
        return None
    tri = np.concatenate(triangles)
    verts = np.concatenate(vertices)
    area = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    total = float(area.sum())
    rng = np.random.default_rng(0)
    if len(verts) > MAX_VERTICES:
        verts = verts[rng.choice(len(verts), MAX_VERTICES, replace=False)]
    if not total > 0:
        return Cloud(verts, 0.0)
    faces = rng.choice(len(tri), SAMPLES_PER_LINK, p=area / total)
    r1, r2 = rng.random(SAMPLES_PER_LINK), rng.random(SAMPLES_PER_LINK)
    flip = r1 + r2 > 1
    r1[flip], r2[flip] = 1 - r1[flip], 1 - r2[flip]
    t = tri[faces]
    samples = t[:, 0] + r1[:, None] * (t[:, 1] - t[:, 0]) + r2[:, None] * (t[:, 2] - t[:, 0])
    return Cloud(np.concatenate([samples, verts]), math.sqrt(total / SAMPLES_PER_LINK))


def _moved(points: np.ndarray, transform: np.ndarray) -> np.ndarray:
    return points @ transform[:3, :3].T + transform[:3, 3]


def configurations(joint) -> tuple[float, ...]:
    """Coordinates a joint is checked at (rest first)."""
    if math.isfinite(joint.lower) and math.isfinite(joint.upper):
        return tuple(dict.fromkeys((0.0, joint.lower, joint.upper)))
    return UNBOUNDED_ANGLES


def _free(joint) -> bool:
    return joint.type == "prismatic" and not math.isfinite(joint.upper - joint.lower)


class _World:
    """The object's link clouds in the world frame at rest, with lazily built k-d trees."""

    def __init__(self, obj, meshes, poses):
        self.obj = obj
        self.poses = poses
        self.clouds: dict[str, Cloud] = {}
        for link in obj.links:
            cloud = link_cloud(link, meshes)
            if cloud is not None:
                self.clouds[link.name] = Cloud(
                    _moved(cloud.points, poses[link.name]), cloud.spacing
                )
        self._trees: dict[str, cKDTree] = {}
        self.below: dict[str, list[str]] = {}
        for joint in obj.joints:
            self.below.setdefault(joint.parent, []).append(joint.child)
        # the spatial index over links: each link's cloud as a bounding sphere
        self.names = list(self.clouds)
        self.order = {name: i for i, name in enumerate(self.names)}
        points = [self.clouds[n].points for n in self.names]
        low = np.array([p.min(axis=0) for p in points]).reshape(-1, 3)
        high = np.array([p.max(axis=0) for p in points]).reshape(-1, 3)
        self.centers = (low + high) / 2
        self.radii = np.array(
            [np.linalg.norm(p - c, axis=1).max() for p, c in zip(points, self.centers, strict=True)]
        )
        self.spacings = np.array([self.clouds[n].spacing for n in self.names])
        self.index = cKDTree(self.centers) if self.names else None

    def tree(self, link: str) -> cKDTree:
        if link not in self._trees:
            self._trees[link] = cKDTree(self.clouds[link].points)
        return self._trees[link]

    def subtree(self, link: str) -> list[str]:
        out, stack = [], [link]
        while stack:
            name = stack.pop()
            out.append(name)
            stack.extend(self.below.get(name, []))
        return out

    def anchor(self, joint) -> str | None:
        """The parent link, or its nearest ancestor with shapes; None when there is none or the
        way up crosses a free (unbounded prismatic) joint."""
        name = joint.parent
        while name not in self.clouds:
            above = self.obj.parent_joint.get(name)
            if above is None or _free(above):
                return None
            name = above.parent
        return name

    def moving_cloud(self, links: list[str]) -> Cloud | None:
        parts = [self.clouds[n] for n in links if n in self.clouds]
        if not parts:
            return None
        sizes = np.array([len(p.points) for p in parts])
        if sizes.sum() <= MAX_MOVING_POINTS:
            points = np.concatenate([p.points for p in parts])
        else:  # the sample of the concatenated points, without concatenating a deep subtree
            keep = np.random.default_rng(0).choice(sizes.sum(), MAX_MOVING_POINTS, replace=False)
            offsets = np.cumsum(sizes)
            part = np.searchsorted(offsets, keep, side="right")
            within = keep - (offsets - sizes)[part]
            points = np.array([parts[k].points[i] for k, i in zip(part, within, strict=True)])
        return Cloud(points, max(p.spacing for p in parts))

    def nearby(self, points: np.ndarray, skip: set[str]):
        """(link, lower bound on its distance to `points`, that bound before its own radius
        is taken off) of the links not in `skip`, nearest bounding sphere first: the index is
        queried in growing rounds, so a joint whose part is near some link costs a few
        queries, not one per link of the object."""
        middle = (points.min(axis=0) + points.max(axis=0)) / 2
        reach = float(np.linalg.norm(points - middle, axis=1).max())
        seen, k = 0, 8
        while seen < len(self.names):
            k = min(k, len(self.names))
            distances, found = self.index.query(middle, k=k)
            rounds = zip(np.atleast_1d(distances), np.atleast_1d(found), strict=True)
            for d, i in list(rounds)[seen:]:
                name = self.names[i]
                if name not in skip:
                    yield name, max(0.0, float(d) - reach - self.radii[i]), float(d) - reach
            seen, k = k, 4 * k


def _gap(world: _World, points, anchor: str, members: set[str], base: float, spacing: float):
    """(gap, tolerance) to the fixed side: the anchor link when it is within its tolerance,
    else the first other fixed-side link found within its own, else the link with the smallest
    excess over its tolerance. Other links are visited nearest first through the spatial index
    and the search stops once no farther link can do better. Queries are bounded by the
    tolerance first (fast: distant points are pruned), exact only when nothing is within it."""
    far_radius = float(world.radii.max())
    far_tolerance = base + spacing + float(world.spacings.max())
    best = None

    def measure(name: str):
        cloud = world.clouds[name]
        tolerance = base + spacing + cloud.spacing
        near = world.tree(name).query(points, k=1, distance_upper_bound=tolerance)[0]
        distance = float(near.min())
        if distance <= tolerance:
            return distance, tolerance, True
        return float(world.tree(name).query(points, k=1)[0].min()), tolerance, False

    distance, tolerance, within = measure(anchor)
    if within:
        return distance, tolerance
    best = (distance, tolerance)
    for name, bound, center_bound in world.nearby(points, members | {anchor}):
        if center_bound - far_radius - far_tolerance >= best[0] - best[1]:
            break  # this link and every farther one: no better than the best
        if bound - (base + spacing + world.clouds[name].spacing) >= best[0] - best[1]:
            continue
        distance, tolerance, within = measure(name)
        if within:
            return distance, tolerance
        if distance - tolerance < best[0] - best[1]:
            best = (distance, tolerance)
    return best


def run(ctx: Context) -> list[CheckResult]:
    obj = ctx.reread
    extent = ctx.notes.get("extent")
    moving = [j for j in obj.joints if j.moving]
    if not moving:
        return []
    if extent is None:
        return [
            single(
                check_id,
                severity,
                True,
                "not measured: the object has no geometry with finite bounds",
            )
            for check_id, severity in SEVERITY.items()
        ]
    world = _World(obj, ctx.notes.get("meshes", {}), ctx.rest_poses)
    base = max(GAP_FRACTION * extent, GAP_MIN)
    rows = {"attachment.rest": [], "attachment.range": [], "attachment.axis": []}
    unmeasured = 0
    for joint in moving:
        inside = world.subtree(joint.child)
        anchor = world.anchor(joint)
        child = world.moving_cloud(inside)
        if _free(joint) or anchor is None or child is None:
            unmeasured += 1
            continue
        members = set(inside)
        element = f"joint {joint.name}"
        joint_world = world.poses[joint.parent] @ joint.origin
        to_rest = np.linalg.inv(world.poses[joint.child])
        worst = None
        for q in configurations(joint):
            transform = joint_world @ joint.motion(q) @ to_rest
            gap, tolerance = _gap(
                world, _moved(child.points, transform), anchor, members, base, child.spacing
            )
            if q == 0.0:
                rows["attachment.rest"].append((element, gap, tolerance, q))
            if worst is None or gap - tolerance > worst[1] - worst[2]:
                worst = (element, gap, tolerance, q)
        rows["attachment.range"].append(worst)
        if joint.type in ("revolute", "continuous", "helical"):
            direction = joint_world[:3, :3] @ joint.axis
            offset = child.points - joint_world[:3, 3]
            across = offset - np.outer(offset @ direction, direction)
            distance = float(np.sqrt((across**2).sum(axis=1)).min())
            tolerance = base + child.spacing
            rows["attachment.axis"].append((element, distance, tolerance, 0.0))

    note = f"; {unmeasured} joint(s) not measured (free body or no shapes)" if unmeasured else ""
    out = []
    for check_id, describe in (
        ("attachment.rest", "at rest its moving part is {v:.4g} m from the rest of the object"),
        (
            "attachment.range",
            "at q = {q:.4g} its moving part is {v:.4g} m from the rest of the object",
        ),
        (
            "attachment.axis",
            "its axis passes {v:.4g} m from the part it turns; if that is deliberate (a link "
            "left out of the model), an attachment.axis allowance waives it",
        ),
    ):
        severity = SEVERITY[check_id]
        found = rows[check_id]
        failed = [r for r in found if r[1] > r[2]]
        for element, value, tolerance, q in failed:
            text = describe.format(v=value, q=q)
            out.append(
                single(
                    check_id,
                    severity,
                    False,
                    f"{element}: {text} (tolerance {tolerance:.4g} m)",
                    value=value,
                    threshold=tolerance,
                    element=element,
                )
            )
        if failed:
            continue
        if not found:
            out.append(single(check_id, severity, True, f"no joint to measure{note}"))
            continue
        element, value, tolerance, _ = max(found, key=lambda r: r[1] - r[2])
        out.append(
            single(
                check_id,
                severity,
                True,
                f"every joint within its tolerance (value: the closest to it, {element}){note}",
                value=value,
                threshold=tolerance,
                element=element,
            )
        )
    return out
