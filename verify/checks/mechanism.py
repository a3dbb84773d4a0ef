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
penetration depth of a contact is minus its distance.

Tolerance: DEPTH_TOLERANCE (1 mm). Allowance where the source itself is built overlapping (a
hinge pin inside its frame, a key pressed into its board, links of a robot arm nested at their
joints), measured at each configuration where the penetration exceeds the tolerance and added to
it, the largest of three measures:

- how deep the moving side's visual shapes (the source's geometry) lie inside the parent side's:
  the deepest of the vertices and of points sampled on the faces of one visual shape inside
  another that is watertight, by signed distance;
- where a visual shape of either link is open (no inside to measure in), how far the source
  moves the part into its parent: where the two links' shapes as the source gives them (those
  `collision.range` sweeps) intersect at that configuration but not at rest, how far the part
  moves on past where they first touch (bisection along the motion; for a rotation, that arc
  length at the farthest point from the axis where the shapes cross): a bucket whose handle
  swings through its wall, a lid that opens past its back wall;
- where both geoms in contact are shapes the source made for collision (not hulls or parts we
  made of a visual mesh: `geom_origins`), how deep the source builds them into each other at
  rest: for their deepest contact there, how far the moving link's visual triangles near it must
  move along the contact's normal to stop crossing the parent's (`SourceShapes.built`), allowed
  over the whole range: a robot's links built into each other at their joint.

The joint's value is its penetration where it exceeds the source's own overlap the most,
reported with the configuration and the two geoms (where each comes from: `geom_origins`) and a
hint on what to mend (`_hint`); the threshold and message record the
overlap allowed and which measure gave it. So collision geometry that fills what the source
leaves empty (a carcass's convex hull around its drawer) fails, and a part the source itself
moves into its parent is left to `collision.range`. The allowances of `verify/allowances.py`
waive the check per source or object as any other.

The check is a warning (the object goes to review): normalization splits the hulls that keep a
mechanism from moving into convex parts (`normalize.collision_parts`), within its limits; what
it leaves is judged here. Objects with more than MAX_JOINTS judged joints are skipped
(`mechanism.skipped`, info), as are objects MuJoCo did not compile (the simulator checks say
why).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from normalize.collision_parts import (
    COLLISION_PART,
    MAX_FEW_ROUNDS,
    MAX_OBJECT_PARTS,
    MAX_PARTS,
    MAX_ROUNDS,
)
from normalize.mechanism import (
    DEPTH_TOLERANCE,
    joint_values,
    judged_joints,
    side_contacts,
    sides,
)
from verify.checks import Context, single
from verify.checks.attachment import _primitive
from verify.checks.collision import _travel_past_contact, source_scene
from verify.report import CheckResult

MAX_JOINTS = 256
#: Vertices of a visual shape, and as many points sampled on its faces, tested against
#: another's inside (the source-built overlap)
OVERLAP_POINTS = 4096
DEEPEST_CANDIDATES = 16  # inside points whose exact depth is computed
#: How far beyond the boxes around two geoms in contact their links' visual triangles are taken
#: to measure how deep the source builds them into each other
BOX_MARGIN = DEPTH_TOLERANCE
BUILT_BISECTIONS = 10  # steps of that measure (1/1024 of the contact's depth)


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
        joints = (self.model.joint(i) for i in range(self.model.njnt))
        self.address = {j.name: int(self.model.jnt_qposadr[j.id]) for j in joints}

    def bodies(self, links: set[str]) -> set[int]:
        return {self.body[name] for name in links if name in self.body}

    def contacts(self, coords: dict[str, float], moving: set[int], fixed: set[int]) -> dict:
        """(moving link, parent-side link) -> the deepest `_Contact` between the two at
        `coords`."""
        mujoco, model, data = self.mujoco, self.model, self.data
        geoms, depth, away = side_contacts(mujoco, model, data, coords, self.address, moving, fixed)
        geoms = geoms[:, ::-1]  # moving side first
        bodies = model.geom_bodyid[geoms]
        deepest: dict[tuple[int, int], int] = {}  # (moving body, fixed body) -> contact
        for k, pair in enumerate(map(tuple, bodies.tolist())):
            if pair not in deepest or depth[k] > depth[deepest[pair]]:
                deepest[pair] = k
        found = {}
        for (b1, b2), k in deepest.items():
            g1, g2 = int(geoms[k, 0]), int(geoms[k, 1])
            found[model.body(b1).name, model.body(b2).name] = _Contact(
                float(depth[k]),
                (model.geom(g1).name, model.geom(g2).name),
                np.array(away[k]),
                (self._box(g1), self._box(g2)),
            )
        return found

    def _box(self, geom: int) -> tuple[np.ndarray, np.ndarray]:
        """(low, high) corners of the world box around one geom as posed now."""
        center, half = self.model.geom_aabb[geom][:3], self.model.geom_aabb[geom][3:]
        rotation = self.data.geom_xmat[geom].reshape(3, 3)
        middle = self.data.geom_xpos[geom] + rotation @ center
        reach = np.abs(rotation) @ half
        return middle - reach, middle + reach


@dataclass
class _Contact:
    """The deepest contact of a (moving link, parent-side link) pair: its depth (m), the two
    geoms, the direction (world) that moves the moving geom out of the other, and the world
    boxes around the two geoms."""

    depth: float
    geoms: tuple[str, str]
    away: np.ndarray
    boxes: tuple


class SourceShapes:
    """The visual shapes of each link (the source's geometry), as trimeshes in the link frame,
    built once per link; `overlap` measures how deep the source's own parts lie in each other."""

    def __init__(self, obj, meshes: dict):
        self.obj, self.meshes, self.parts = obj, meshes, {}

    def _of(self, link: str) -> list:
        parts = self.parts.get(link)
        if parts is None:
            import trimesh
            from scipy.spatial import cKDTree

            parts = self.parts[link] = []
            for g in self.obj.link_map[link].visuals:
                if g.kind == "mesh":
                    mesh = self.meshes.get(g.filename)
                    if mesh is None:
                        continue
                    v, f = np.asarray(mesh.vertices) * g.scale, np.asarray(mesh.faces)
                else:
                    v, f = _primitive(g.kind, g.size)
                v = v @ g.origin[:3, :3].T + g.origin[:3, 3]
                part = trimesh.Trimesh(v, f, process=False)
                points = v[:: max(1, len(v) // OVERLAP_POINTS)]
                if part.area > 0:  # faces sampled too: a box's face dipping into a cylinder
                    sampled, _ = trimesh.sample.sample_surface(part, OVERLAP_POINTS, seed=0)
                    points = np.concatenate([points, sampled])
                parts.append(_Part(part, part.is_watertight, points, cKDTree(points)))
        return parts

    def closed(self, links: set[str]) -> bool:
        """Whether every visual shape of `links` is closed (has an inside to measure in)."""
        return all(part.closed for link in links for part in self._of(link))

    def overlap(self, moving: set[str], fixed: set[str], poses: dict) -> float:
        """How deep (m) the moving side's visual shapes lie inside the parent side's at `poses`:
        the deepest surface point of either inside the other, where that one is watertight."""
        depth = 0.0
        for a in moving:
            for b in fixed:
                relative = np.linalg.inv(poses[b]) @ poses[a]  # frame a in frame b
                back = np.linalg.inv(relative)
                for one in self._of(a):
                    for other in self._of(b):
                        if other.closed:
                            inside = one.points @ relative[:3, :3].T + relative[:3, 3]
                            depth = max(depth, _inside_depth(inside, other))
                        if one.closed:
                            inside = other.points @ back[:3, :3].T + back[:3, 3]
                            depth = max(depth, _inside_depth(inside, one))
        return depth

    def built(self, moving: str, fixed: str, poses: dict, contact: _Contact) -> float:
        """How deep (m, at most the contact's depth) the two links' visual shapes are built into
        each other where `contact` is: their triangles inside the boxes around its two geoms
        cross, and part after moving the moving ones this far along the contact's normal
        (bisection). 0 when they do not cross there: what overlaps is collision geometry that
        fills what the source leaves empty."""
        import fcl

        placed = []
        for link, (low, high) in zip((moving, fixed), contact.boxes, strict=True):
            found = _triangles_in_box(
                self._of(link), poses[link], low - BOX_MARGIN, high + BOX_MARGIN
            )
            if found is None:
                return 0.0
            model = fcl.BVHModel()
            model.beginModel(len(found[0]), len(found[1]))
            model.addSubModel(*found)
            model.endModel()
            placed.append(fcl.CollisionObject(model, fcl.Transform()))

        def cross(shift: float) -> bool:
            placed[0].setTranslation(shift * contact.away)
            request, result = fcl.CollisionRequest(num_max_contacts=1), fcl.CollisionResult()
            return bool(fcl.collide(placed[0], placed[1], request, result))

        if not cross(0.0):
            return 0.0
        if cross(contact.depth):
            return contact.depth
        apart, crossing = contact.depth, 0.0
        for _ in range(BUILT_BISECTIONS):
            middle = (apart + crossing) / 2
            if cross(middle):
                crossing = middle
            else:
                apart = middle
        return apart


def _triangles_in_box(parts: list, pose: np.ndarray, low, high):
    """(vertices, faces) (world) of the triangles of `parts` (link frame, placed at `pose`) with
    a vertex inside the box (low, high); None when there is none."""
    vertices, faces, count = [], [], 0
    for part in parts:
        v = np.asarray(part.mesh.vertices) @ pose[:3, :3].T + pose[:3, 3]
        f = np.asarray(part.mesh.faces)
        inside = np.all((v >= low) & (v <= high), axis=1)
        f = f[inside[f].any(axis=1)]
        if len(f) == 0:
            continue
        used, f = np.unique(f, return_inverse=True)
        vertices.append(v[used])
        faces.append(f.reshape(-1, 3) + count)
        count += len(used)
    if not faces:
        return None
    return np.concatenate(vertices), np.concatenate(faces)


class SourceMotion:
    """How far the source moves one part into another: the links' shapes as the source gives
    them (`collision.range`'s scene), touching at a configuration but not at rest."""

    def __init__(self, obj, scene):
        self.obj, self.scene = obj, scene
        self.rest = obj.link_poses()
        self.frames = obj.joint_frames()

    def travel(self, joint, q: float, pair: tuple[str, str]) -> float:
        """How far (m) the moving link of `pair` has moved past first touching the fixed one on
        the way from rest to `q`; for a rotation, the arc length at the farthest point from the
        axis where their shapes cross at `q`. 0 when they touch at rest or do not touch at `q`."""
        obj, scene = self.obj, self.scene
        if not set(pair) <= scene.names or q == 0.0:
            return 0.0
        poses = obj.link_poses(obj.resolve_configuration({joint.name: q}))
        if scene.touch(self.rest, *pair):
            return 0.0
        crossings = scene.crossings(poses, *pair)
        if len(crossings) == 0:
            return 0.0
        radius = 1.0
        if joint.type in ("revolute", "continuous"):
            frame = self.frames[joint.name]  # the axis stays where it is at rest
            axis = frame[:3, :3] @ joint.axis
            offsets = crossings - frame[:3, 3]
            radial = offsets - np.outer(offsets @ axis, axis)
            radius = float(np.linalg.norm(radial, axis=1).max())
        return _travel_past_contact(obj, scene, joint.name, q, pair, radius)


@dataclass
class _Part:
    """One visual shape: its mesh (link frame), whether it is closed, its surface points
    (vertices and points sampled on its faces) and their k-d tree."""

    mesh: object
    closed: bool
    points: np.ndarray
    tree: object  # scipy.spatial.cKDTree


def _inside_depth(points: np.ndarray, part: _Part) -> float:
    """Deepest of `points` inside the closed `part` (0 when none is). Exact distances to its
    surface for the DEEPEST_CANDIDATES points farthest from its surface points, the rest
    ranked by those distances only (a k-d tree query instead of a closest-point search each)."""
    import trimesh

    low, high = part.mesh.bounds
    points = points[np.all((points > low) & (points < high), axis=1)]
    if len(points) == 0:
        return 0.0
    points = points[part.mesh.contains(points)]
    if len(points) == 0:
        return 0.0
    rough, _ = part.tree.query(points)
    candidates = points[np.argsort(rough)[-DEEPEST_CANDIDATES:]]
    _, distance, _ = trimesh.proximity.closest_point(part.mesh, candidates)
    return float(distance.max())


def _label(joint, q: float) -> str:
    if q == 0.0:
        return "rest"
    if math.isfinite(joint.lower) and joint.upper > joint.lower:
        fraction = (q - joint.lower) / (joint.upper - joint.lower)
        return f"q = {q:.4g} ({fraction:.3g} of its range)"
    return f"q = {q:.4g}"


#: The measures of the source's own overlap, by the name `JointDepth.measure` gives them
OVERLAP = "overlap of the visual shapes"
MOTION = "motion into the parent"
BUILT = "built into each other at rest"


@dataclass
class JointDepth:
    """One judged joint where its penetration (m) exceeds the source's own overlap (m) the most:
    the geoms and coordinate, and the overlap allowed there on top of the tolerance (measured
    only where the penetration exceeds the tolerance) with the measure that gave it."""

    joint: object
    depth: float
    geoms: tuple[str, str] | None
    q: float
    overlap: float = 0.0
    measure: str = ""  # OVERLAP, MOTION or BUILT where `overlap` > 0

    @property
    def threshold(self) -> float:
        return DEPTH_TOLERANCE + self.overlap

    @property
    def excess(self) -> float:
        """Depth beyond what the source built in."""
        return self.depth - self.overlap


def measure(
    obj, model, meshes: dict, motion: SourceMotion, origins: dict[str, tuple[str, bool]]
) -> tuple[list[JointDepth], int]:
    """(the deepest penetration of every judged joint, how many joints have no collision
    geometry on one side) on a MuJoCo `model` of `obj`; `meshes`: the visual meshes by file;
    `motion`: the source's own shapes, for how far it moves parts into each other; `origins`:
    `geom_origins` of `obj`."""
    import mujoco

    collider = _Collider(mujoco, model)
    shapes = SourceShapes(obj, meshes)
    rest = obj.link_poses()
    measured, unjudged = [], 0
    for joint in judged_joints(obj):
        moving_links, fixed_links = sides(obj, joint)
        moving, fixed = collider.bodies(moving_links), collider.bodies(fixed_links)
        if not (moving & collider.colliding_bodies and fixed & collider.colliding_bodies):
            unjudged += 1
            continue
        # Every (configuration, pair of links) in contact, deepest first: the source's own
        # overlap is measured only where the penetration could still be the worst excess.
        found = [
            (contact.depth, q, pair, contact)
            for q in joint_values(joint)
            for pair, contact in collider.contacts(
                obj.resolve_configuration({joint.name: q}), moving, fixed
            ).items()
        ]
        # how deep the source builds each pair of links into each other, where they touch at
        # rest with shapes of the source's own (not hulls or parts normalization made)
        built = {
            pair: shapes.built(*pair, rest, contact)
            for depth, q, pair, contact in found
            if q == 0.0
            and depth > DEPTH_TOLERANCE
            and not any(origins.get(g, ("", True))[1] for g in contact.geoms)
        }
        worst = JointDepth(joint, 0.0, None, 0.0)
        for depth, q, (a, b), contact in sorted(found, key=_deepest_first):
            if worst.geoms is not None and depth <= worst.excess:
                break
            overlap, by = 0.0, ""
            if depth > DEPTH_TOLERANCE:  # how much of it the source built in
                poses = obj.link_poses(obj.resolve_configuration({joint.name: q}))
                measures = {OVERLAP: shapes.overlap({a}, {b}, poses), BUILT: built.get((a, b), 0.0)}
                if depth > DEPTH_TOLERANCE + max(measures.values()) and not shapes.closed({a, b}):
                    measures[MOTION] = motion.travel(joint, q, (a, b))
                by = max(measures, key=measures.get)
                overlap = measures[by]
                by = by if overlap > 0 else ""
            candidate = JointDepth(joint, depth, contact.geoms, q, overlap, by)
            if worst.geoms is None or candidate.excess > worst.excess:
                worst = candidate
        measured.append(worst)
    return measured, unjudged


def _collision_of_its_own(obj, source_obj) -> set[str]:
    """The links of `obj` whose collision shapes are the source's own: all but those where the
    source collides a visual mesh and normalization wrote its hull or parts instead (in
    `source_obj`, the object with the source's collision shapes)."""
    source_links = source_obj.link_map
    own = set()
    for link in obj.links:
        source = source_links.get(link.name, link)
        visual = {g.filename for g in source.visuals if g.kind == "mesh"}
        sourced = {g.filename for g in source.collisions if g.kind == "mesh"}
        written = {g.filename for g in link.collisions if g.kind == "mesh"}
        if written == sourced or not (sourced & visual):
            own.add(link.name)
    return own


def _deepest_first(item) -> float:
    return -item[0]


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
    count = len(judged_joints(ctx.reread))
    if count > MAX_JOINTS:
        return [
            single(
                "mechanism.skipped",
                "info",
                False,
                f"{count} joints to judge, more than {MAX_JOINTS}: the mechanism check was not run",
            )
        ]
    motion = SourceMotion(*source_scene(ctx))
    origins = geom_origins(ctx.reread, motion.obj)
    measured, unjudged = measure(ctx.reread, model, ctx.notes.get("meshes", {}), motion, origins)
    return _results(measured, unjudged, origins)


def geom_origins(obj, source_obj) -> dict[str, tuple[str, bool]]:
    """Collision geom name -> (where the shape comes from, for people; whether normalization
    made it: a hull or convex part of a visual mesh, which may fill what the source leaves
    empty, so that whatever it overlaps is not the source's doing). `source_obj`: the object
    with the source's collision shapes."""
    own = _collision_of_its_own(obj, source_obj)
    source_links = source_obj.link_map
    origins = {}
    for link in obj.links:
        source = source_links.get(link.name, link)
        sourced = {g.filename for g in source.collisions if g.kind == "mesh"}
        for g in link.collisions:
            file = Path(g.filename).name if g.kind == "mesh" else ""
            if g.kind != "mesh":
                origins[g.name] = (f"the source's {g.kind}", False)
            elif COLLISION_PART.search(file):
                origins[g.name] = (f"a convex part normalization cut, {file}", True)
            elif g.filename in sourced:
                origins[g.name] = (f"the source's mesh {file}, convex as it is", False)
            elif link.name in own:
                origins[g.name] = (f"the convex hull of the source's collision mesh, {file}", False)
            else:
                origins[g.name] = (f"the convex hull of a visual mesh, {file}", True)
    return origins


ALLOWANCE_HINT = "or waive the check with an allowance (arena-allowances.yaml)"


def _hint(ours: bool, at_rest: bool) -> str:
    """How to mend a penetration, by whether normalization made one of the two shapes."""
    if ours:
        return (
            f"the convex parts normalization cuts could not clear this contact (at most "
            f"{MAX_ROUNDS} rounds, {MAX_FEW_ROUNDS} where few contacts are left, {MAX_PARTS} "
            f"parts per mesh and {MAX_OBJECT_PARTS} per object; the object's "
            "collision.convex_parts change counts the contacts left): look for the source's "
            f"meshes overlapping here, {ALLOWANCE_HINT}"
        )
    if at_rest:
        return (
            f"the source's own collision shapes overlap at rest: fix them in the source, "
            f"{ALLOWANCE_HINT}"
        )
    return (
        "the source's own collision shapes run into each other over the joint's range: fix "
        f"them or the joint's limits in the source, {ALLOWANCE_HINT}"
    )


def _results(
    measured: list[JointDepth], unjudged: int, origins: dict[str, tuple[str, bool]]
) -> list[CheckResult]:
    out, allowed = [], []
    for m in measured:
        built = {
            MOTION: f"the source moves the part {1000 * m.overlap:.1f} mm on past touching its "
            "parent there (collision.range judges that)",
            OVERLAP: f"the source's visual shapes already overlap by {1000 * m.overlap:.1f} mm "
            "there",
            BUILT: f"the source builds the two links {1000 * m.overlap:.1f} mm into each other "
            "at rest (their visual shapes cross where they touch)",
        }.get(m.measure, "")
        source = f"; {built}, allowed up to {1000 * m.threshold:.1f} mm" if m.overlap > 0 else ""
        if m.depth <= m.threshold:
            if m.overlap > 0:
                allowed.append(f"joint {m.joint.name} {1000 * m.depth:.1f} mm{source}")
            continue
        described = [(name, *origins.get(name, ("", False))) for name in m.geoms]
        geoms = " and ".join(f"{name}: {what}" if what else name for name, what, _ in described)
        failed = single(
            "mechanism.penetration",
            "warning",
            False,
            f"the moving part's collision geometry penetrates its parent's by "
            f"{1000 * m.depth:.1f} mm at {_label(m.joint, m.q)} (geoms {geoms}){source}",
            value=m.depth,
            threshold=m.threshold,
            element=f"joint {m.joint.name}",
        )
        failed.hint = _hint(any(ours for _, _, ours in described), m.q == 0.0)
        out.append(failed)
    if out:
        return out
    note = f"; {unjudged} joint(s) without collision geometry on one side" if unjudged else ""
    note += "; " + "; ".join(allowed) if allowed else ""
    worst = max(measured, key=lambda m: m.excess, default=None)
    return [
        single(
            "mechanism.penetration",
            "warning",
            True,
            f"{len(measured)} joint(s): no moving part's collision geometry penetrates its "
            f"parent's by more than {1000 * DEPTH_TOLERANCE:g} mm over its range{note}",
            value=0.0 if worst is None else worst.depth,
            threshold=DEPTH_TOLERANCE if worst is None else worst.threshold,
        )
    ]
