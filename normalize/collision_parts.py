"""Convex collision parts that let an object's mechanisms move.

MuJoCo, PyBullet and SAPIEN collide each collision mesh as its convex hull, so a carcass modelled
as one mesh fills its own cavities: its drawers cannot close into it. Here the collision meshes
whose hulls we made (`normalize.meshes.convex_collision`) are split into convex parts where a
moving part needs the room, judged exactly as the `mechanism.penetration` check judges them:
every driving joint alone at rest and at the sampled points of its range
(`normalize.mechanism`), MuJoCo's collision pipeline on the object's collision shapes, parent
filtering off.

Each round, every contact deeper than DEPTH_TOLERANCE between the moving side and the parent
side splits one of its two shapes (deepest contacts first, each shape once per round):

- a shape of ours is cut by the box around the other shape, in the other's link frame, grown by
  nothing and shrunk by CLEARANCE: the part inside the box and up to six parts around it (the
  slabs of the box's complement, each a convex region, so each part's hull stays outside the
  box but for CLEARANCE). A drawer's box cuts its carcass into the walls around it. A flat
  shape's box, thinner than twice CLEARANCE, is grown by PART_THICKNESS along that side
  instead (the shape collides that thick): a rail inside a drawer's hull cuts it around itself.
- where neither shape's box separates anything (one lies inside the other's box), the larger
  shape is cut in two across the middle of its longest side, if it is ours and has room for
  parts (the smaller is not: its halves stay inside the larger's box);
- a cut's part holding up to MAX_APART pieces that share no point (the corners of a tube
  around a button's box) is split into them, each hull smaller than theirs together; not where
  one is flat (thickened towards its shape's centre, it would reach into the room the cut made);
- a piece of ours wholly inside a shape the source gives (which is never cut: a solid panel
  where a drawer front sits) is not cut at all: no cut of it clears that contact.

Rounds stop when no contact is deeper than DEPTH_TOLERANCE, after MAX_ROUNDS (MAX_FEW_ROUNDS
while the contacts left are between at most FEW_PAIRS pairs of pieces: a lid and its rim cut in
turn, each cut taking off a millimetre or so), or when a shape would have more than MAX_PARTS
parts; no cut takes the object's shapes of ours beyond
MAX_OBJECT_PARTS parts in all. What is left is the source's own overlap (parts built
into each other or touching at rest, which no decomposition separates) or beyond those limits;
the check judges it. Shapes as the source gives them (primitives, meshes convex already) are
never cut; the links whose meshes among them still hold a part of ours are named
(`Cleared.holding`: the writer may then collide them as their visual meshes). Each part is
written as its convex hull; a part thinner than MIN_COLLISION_THICKNESS is thickened towards
its shape's centre, as flat collision meshes are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from normalize.mechanism import DEPTH_TOLERANCE, joint_values, judged_joints, side_contacts, sides
from normalize.meshes.collision import MIN_COLLISION_THICKNESS, hull_width, thinnest_move
from normalize.meshes.distinct import distinct_rows, distinct_rows_inverse, used_vertices
from normalize.mjcf_writer import add_body_tree, rotation_quat

MAX_ROUNDS = 4
MAX_FEW_ROUNDS = 8
FEW_PAIRS = 16
MAX_PARTS = 32  # per collision mesh
#: per object, hulls of ours counted whole: an object of many meshes may otherwise take up to
#: MAX_PARTS for each
MAX_OBJECT_PARTS = 384
CLEARANCE = DEPTH_TOLERANCE / 2  # m: how far inside a box a part around it may reach
#: A cut's part holding at most this many pieces that do not touch is split into them
MAX_APART = 8
#: How much a flat part is thickened: a hair more than normalization requires, so that it is no
#: thinner after it is moved from its link's frame into its mesh's
PART_THICKNESS = MIN_COLLISION_THICKNESS * (1.0 + 1e-6)
#: The file names of the parts (`meshes/<name>_part<k>_collision.obj`, as the writer names
#: them): made for one object's mechanisms, so no evidence that two objects share a mesh
COLLISION_PART = re.compile(r"_part\d+_collision(?:_\d+)?\.obj$")


def parts_method() -> dict:
    """How the parts are made: the release records it (release.json `collision_parts`)."""
    from importlib.metadata import version

    from normalize.meshes import MIN_COLLISION_THICKNESS

    return {
        "method": (
            "convex hulls split by the boxes of the shapes they touch at the mechanism "
            "configurations (docs/convention.md, Files)"
        ),
        "contacts": f"mujoco {version('mujoco')}",
        "hulls": f"scipy {version('scipy')} (qhull)",
        "parameters": {
            "depth_tolerance_m": DEPTH_TOLERANCE,
            "clearance_m": CLEARANCE,
            "max_rounds": MAX_ROUNDS,
            "max_rounds_few_contacts": MAX_FEW_ROUNDS,
            "few_contact_pairs": FEW_PAIRS,
            "max_pieces_apart": MAX_APART,
            "max_parts_per_mesh": MAX_PARTS,
            "max_parts_per_object": MAX_OBJECT_PARTS,
            "min_thickness_m": MIN_COLLISION_THICKNESS,
        },
    }


def _box_corners(half: np.ndarray) -> np.ndarray:
    return np.array(np.meshgrid(*zip(-half, half, strict=True))).reshape(3, -1).T


#: The corners of the box around each primitive URDF keeps (its own frame)
PRIMITIVE_CORNERS = {
    "box": lambda size: _box_corners(np.asarray(size, dtype=float) / 2.0),
    "sphere": lambda size: _box_corners(np.full(3, float(size[0]))),
    "cylinder": lambda size: _box_corners(np.array([size[0], size[0], size[1] / 2.0])),
}


@dataclass
class Shape:
    """One collision shape of a link, in the link frame: its points (a primitive's box corners),
    and, for a mesh whose hull we made, its triangles split into parts (`parts`: (vertices,
    faces) each, the whole mesh at first)."""

    link: str
    points: np.ndarray
    parts: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    primitive: tuple[str, tuple, np.ndarray] | None = None  # (kind, size, origin)

    @property
    def ours(self) -> bool:
        return bool(self.parts)

    @cached_property
    def hull_planes(self) -> np.ndarray | None:
        """(n x 4) outward planes of the hull of `points` (a shape the source gives keeps its
        points), None where qhull refuses them."""
        from scipy.spatial import ConvexHull, QhullError

        try:
            return ConvexHull(self.points).equations
        except (QhullError, ValueError):
            return None


@dataclass
class Cleared:
    """What the splitting did: per shape key where it split it, its parts' points as the last
    model collided them (link frame, thickened where flat: `_hull_points`); the rounds run, the
    contacts deeper than DEPTH_TOLERANCE left after them and the deepest of those."""

    parts: dict[object, list[np.ndarray]]
    rounds: int
    contacts_left: int
    deepest_left: float
    #: the links whose meshes as the source gives them (never cut) a part of ours still enters
    #: deeper than DEPTH_TOLERANCE
    holding: frozenset[str]


def clear_mechanisms(obj, shapes: dict[object, Shape]) -> Cleared | None:
    """Split the shapes of ours (`shapes`: every collision shape of `obj` by a key) until no
    moving part penetrates its parent's deeper than DEPTH_TOLERANCE, within the limits above.
    None when MuJoCo is not installed or `obj` has no joint to judge."""
    try:
        import mujoco
    except ImportError:
        return None
    joints = judged_joints(obj)
    if not joints or not any(s.ours for s in shapes.values()):
        return None
    split: set[object] = set()
    hulls = _Hulls(shapes)
    rounds, contacts = 0, []
    while True:
        pieces = [(key, k) for key, s in shapes.items() for k in range(max(1, len(s.parts)))]
        judged = {link for joint in joints for side in sides(obj, joint) for link in side}
        model = _model(mujoco, obj, shapes, pieces, hulls, judged)
        contacts = _contacts(mujoco, model, obj, joints)
        if not contacts or rounds >= _last_round(contacts):
            break
        rounds += 1
        if not _split_round(shapes, contacts, pieces, split):
            break
        # a part's hull lies inside the hull it was cut from: only joints in contact can be
        joints = [j for j in joints if any(c.joint == j.name for c in contacts)]
    parts = {
        key: [hulls[key, k] for k in range(len(shapes[key].parts))]
        for key in split
        if len(shapes[key].parts) > 1
    }
    holding = set()
    for contact in contacts:
        a, b = (shapes[pieces[index][0]] for index in (contact.fixed, contact.moving))
        for held, ours in ((a, b), (b, a)):
            if ours.ours and not held.ours and held.primitive is None:
                holding.add(held.link)
    deepest = max((c.depth for c in contacts), default=0.0)
    return Cleared(parts, rounds, len(contacts), float(deepest), frozenset(holding))


def _last_round(contacts: list) -> int:
    """MAX_FEW_ROUNDS where `contacts` are between at most FEW_PAIRS pairs of pieces, else
    MAX_ROUNDS."""
    pairs = {(c.fixed, c.moving) for c in contacts}
    return MAX_FEW_ROUNDS if len(pairs) <= FEW_PAIRS else MAX_ROUNDS


class _Hulls:
    """The points each piece of ours collides as (`_hull_points`), computed once per part: a
    part keeps its triangles, and so its points, from the round that cut it to the end."""

    def __init__(self, shapes: dict[object, Shape]):
        self.shapes = shapes
        self.known: dict[int, tuple[tuple, np.ndarray]] = {}  # id(part) -> (part, points)

    def __getitem__(self, piece: tuple) -> np.ndarray:
        key, k = piece
        shape = self.shapes[key]
        part = shape.parts[k]
        if id(part) not in self.known:  # the part is kept in `known`, so its id stays its own
            self.known[id(part)] = (part, _hull_points(*part, shape.points.mean(axis=0)))
        return self.known[id(part)][1]


def _points(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    return vertices[used_vertices(faces)]


def _hull_points(vertices: np.ndarray, faces: np.ndarray, toward: np.ndarray) -> np.ndarray:
    """The points of one part, with moved copies added while they are thinner than
    PART_THICKNESS (`hull_width` of their hull's corners, as normalization measures a collision
    mesh): PART_THICKNESS across their thinnest direction, towards `toward` (`thinnest_move`).
    MuJoCo refuses a flat convex mesh, and normalizing the written part again then leaves it
    alone."""
    points = distinct_rows(_points(vertices, faces))
    for _ in range(3):  # a plate needs one copy, a needle two
        if len(points) < 3 or hull_width(_corners(points)) >= PART_THICKNESS:
            break
        move = thinnest_move(points, 1.0, toward, PART_THICKNESS)
        points = distinct_rows(np.concatenate([points, points + move]))
    return points


def _corners(points: np.ndarray) -> np.ndarray:
    """The corners of the convex hull of `points` (the points themselves when qhull refuses
    them): what the written part holds, whose width normalization measures."""
    from normalize.meshes.convex import _convex_hull

    triangles = _convex_hull(points)
    return points if triangles is None else distinct_rows(triangles.reshape(-1, 3))


def _model(mujoco, obj, shapes: dict, pieces: list, hulls: _Hulls, links: set[str]):
    """A MuJoCo model of `obj` (the MJCF's body tree, `add_body_tree`) with every piece on
    `links` (the sides of the joints judged: no other piece can be in their contacts) as a geom
    named by its index in `pieces`; a piece of ours collides as its points in `hulls`."""
    spec = mujoco.MjSpec()
    spec.compiler.degree = False
    bodies = add_body_tree(spec, obj, mujoco)[0]
    for body in bodies.values():
        body.mass, body.inertia, body.explicitinertial = 1.0, [1.0, 1.0, 1.0], True
    geom_types = {
        "box": mujoco.mjtGeom.mjGEOM_BOX,
        "sphere": mujoco.mjtGeom.mjGEOM_SPHERE,
        "cylinder": mujoco.mjtGeom.mjGEOM_CYLINDER,
    }
    for index, (key, k) in enumerate(pieces):
        shape = shapes[key]
        if shape.link not in links:
            continue
        body = bodies[shape.link]
        if shape.primitive is not None:
            kind, size, origin = shape.primitive
            geom = body.add_geom(name=str(index), type=geom_types[kind])
            geom.size = _mujoco_size(kind, size)
            geom.pos = origin[:3, 3]
            geom.quat = rotation_quat(origin[:3, :3], mujoco)
            continue
        points = hulls[key, k] if shape.ours else shape.points
        mesh = spec.add_mesh(name=f"m{index}")
        mesh.uservert = points.ravel()
        mesh.inertia = mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL
        body.add_geom(name=str(index), type=mujoco.mjtGeom.mjGEOM_MESH, meshname=mesh.name)
    model = spec.compile()
    model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_FILTERPARENT)
    return model


def _mujoco_size(kind: str, size: tuple) -> list[float]:
    if kind == "box":
        return [s / 2.0 for s in size]
    if kind == "sphere":
        return [size[0], 0.0, 0.0]
    return [size[0], size[1] / 2.0, 0.0]  # cylinder: radius, half length


@dataclass
class _Contact:
    """A contact deeper than DEPTH_TOLERANCE at one of a joint's configurations: the fixed and
    the moving piece (indices into the pieces), the transform from the fixed piece's link frame
    to the moving one's, the depth."""

    joint: str
    fixed: int
    moving: int
    transform: np.ndarray
    depth: float


def _contacts(mujoco, model, obj, joints) -> list[_Contact]:
    data = mujoco.MjData(model)
    body = {model.body(i).name: i for i in range(model.nbody)}
    address = {model.joint(i).name: int(model.jnt_qposadr[i]) for i in range(model.njnt)}
    piece = np.array([int(model.geom(g).name) for g in range(model.ngeom)])
    found = []
    for joint in joints:
        moving_links, fixed_links = sides(obj, joint)
        moving, fixed = (
            [body[n] for n in side if n in body] for side in (moving_links, fixed_links)
        )
        for q in joint_values(joint):
            coords = obj.resolve_configuration({joint.name: q})
            geoms, depths, _ = side_contacts(mujoco, model, data, coords, address, moving, fixed)
            for (g1, g2), depth in zip(geoms.tolist(), depths.tolist(), strict=True):
                if depth <= DEPTH_TOLERANCE:
                    continue
                b1, b2 = int(model.geom_bodyid[g1]), int(model.geom_bodyid[g2])
                transform = np.linalg.inv(_pose(data, b2)) @ _pose(data, b1)
                found.append(_Contact(joint.name, int(piece[g1]), int(piece[g2]), transform, depth))
    return found


def _pose(data, body: int) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, :3] = data.xmat[body].reshape(3, 3)
    pose[:3, 3] = data.xpos[body]
    return pose


def _split_round(shapes: dict, contacts: list[_Contact], pieces: list, split: set) -> bool:
    """Split, deepest contact first, one of the two pieces of each contact (each piece once);
    whether anything was split."""
    replaced: dict[tuple, list] = {}  # (key, part index) -> its parts
    counts = {key: len(shape.parts) for key, shape in shapes.items()}  # after this round's cuts
    total = sum(counts.values())
    for contact in sorted(contacts, key=lambda c: -c.depth):
        a, b = pieces[contact.fixed], pieces[contact.moving]
        if a in replaced or b in replaced:
            continue
        found = _split_pair(shapes, counts, a, b, contact.transform)
        if found is not None and total + len(found[1]) - 1 <= MAX_OBJECT_PARTS:
            replaced[found[0]] = found[1]
            counts[found[0][0]] += len(found[1]) - 1
            total += len(found[1]) - 1
    for key in {key for key, _ in replaced}:
        shape = shapes[key]
        shape.parts = [
            part for k, whole in enumerate(shape.parts) for part in replaced.get((key, k), [whole])
        ]
        split.add(key)
    return bool(replaced)


def _split_pair(shapes: dict, counts: dict, a: tuple, b: tuple, transform: np.ndarray):
    """((key, part index), its parts) for the piece of `a` (fixed) or `b` (moving) that one
    cut splits, or None; a shape keeps at most MAX_PARTS parts (`counts`: each shape's parts
    after the cuts taken so far). `transform` maps `a`'s link frame to `b`'s."""
    candidates = ((a, b, transform), (b, a, np.linalg.inv(transform)))
    if any(_inside_the_sources(shapes, *candidate) for candidate in candidates):
        return None
    for (key, k), (other_key, other_k), to_other in candidates:
        if not shapes[key].ours or counts[key] >= MAX_PARTS:
            continue
        box = _piece_points(shapes[other_key], other_k)
        regions = _cut_by_box(*shapes[key].parts[k], to_other, box.min(axis=0), box.max(axis=0))
        parts = _fitting(regions, MAX_PARTS - counts[key] + 1)
        if parts is not None:
            return (key, k), parts
    # the larger piece only: halving the smaller, inside the larger's box, leaves the larger's
    # hull where it was (a laptop's keys halved round after round under its lid)
    extent, (key, k) = max(
        (
            (float(np.ptp(_piece_points(shapes[key], k), axis=0).max()), (key, k))
            for key, k in (a, b)
        ),
        key=lambda item: item[0],
    )
    if not shapes[key].ours or counts[key] >= MAX_PARTS or extent <= 4 * DEPTH_TOLERANCE:
        return None
    parts = _fitting(_halves(*shapes[key].parts[k]), MAX_PARTS - counts[key] + 1)
    return None if parts is None else ((key, k), parts)


def _fitting(parts: list, room: int) -> list | None:
    """A cut's parts, each split into its pieces apart (`_apart`) where they all fit in `room`,
    else as they are; None when the cut leaves one part or they do not fit."""
    apart = [piece for part in parts for piece in _apart(*part)]
    for found in (apart, parts):
        if 1 < len(found) <= room:
            return found
    return None


def _apart(vertices, faces) -> list:
    """The triangles as their pieces that share no point (the two ends of a handle cut through
    its middle, the corners of a ring around a box): each piece's hull is smaller than the
    hull of them all. Whole where that is one piece, more than MAX_APART, or where a piece
    is flat: a flat part is thickened towards its shape's centre, into the room the cut made."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    _, same = distinct_rows_inverse(np.round(vertices, 9))  # a cut's new points, to a nanometre
    corners = same[faces]
    edges = np.concatenate([corners[:, :2], corners[:, 1:]])
    size = int(same.max()) + 1
    graph = coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(size, size))
    count, label = connected_components(graph, directed=False)
    if count == 1 or count > MAX_APART:
        return [(vertices, faces)]
    of_face = label[corners[:, 0]]
    pieces = [_compact(vertices, faces[of_face == c]) for c in range(count)]
    if any(
        not _has_area(*piece) or hull_width(_corners(_points(*piece))) < PART_THICKNESS
        for piece in pieces
    ):
        return [(vertices, faces)]
    return pieces


def _inside_the_sources(shapes: dict, piece: tuple, other: tuple, to_other: np.ndarray) -> bool:
    """Whether `piece`, of ours, lies inside `other`, a mesh or box as the source gives it (never
    cut; `to_other` maps the piece's link frame to the other's): no cut of ours clears that
    contact, which only more parts would keep."""
    (key, k), shape = piece, shapes[other[0]]
    exact = shape.primitive is None or shape.primitive[0] == "box"  # its points span it
    if not shapes[key].ours or shape.ours or not exact or shape.hull_planes is None:
        return False
    planes = shape.hull_planes
    points = _piece_points(shapes[key], k) @ to_other[:3, :3].T + to_other[:3, 3]
    return bool((points @ planes[:, :3].T + planes[:, 3]).max() <= CLEARANCE)


def _piece_points(shape: Shape, k: int) -> np.ndarray:
    return _points(*shape.parts[k]) if shape.ours else shape.points


def _clip(vertices, faces, normal, origin):
    """The triangles on the side of `normal` of the plane through `origin`."""
    from trimesh.intersections import slice_faces_plane

    if len(faces) == 0:
        return vertices, faces
    return slice_faces_plane(vertices, faces, normal, origin)[:2]


def _has_area(vertices, faces) -> bool:
    """Whether the triangles span at least a triangle (slivers left by a cut do not)."""
    if len(faces) == 0:
        return False
    corners = vertices[faces]
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    return bool(np.linalg.norm(normals, axis=1).max() > 1e-12)


def _compact(vertices, faces) -> tuple[np.ndarray, np.ndarray]:
    used = used_vertices(faces)
    index = np.full(len(vertices), -1)
    index[used] = np.arange(len(used))
    return vertices[used], index[faces]


def _cut_by_box(vertices, faces, to_box: np.ndarray, low, high) -> list:
    """The triangles split into the box [low, high] (in the frame `to_box` maps to, shrunk by
    CLEARANCE) and the six slabs around it, each with triangles; in the triangles' frame. Along
    a side thinner than twice CLEARANCE (a flat piece's box: the piece collides thickened by
    PART_THICKNESS) the box is grown by PART_THICKNESS instead."""
    inside_low, inside_high = low + CLEARANCE, high - CLEARANCE
    thin = inside_low >= inside_high
    inside_low = np.where(thin, low - PART_THICKNESS, inside_low)
    inside_high = np.where(thin, high + PART_THICKNESS, inside_high)
    moved = vertices @ to_box[:3, :3].T + to_box[:3, 3]
    axes = np.eye(3)
    regions = []
    for a in range(3):  # beyond the box along axis a, within it along the axes before
        within = [(axes[b], inside_low) for b in range(a)] + [
            (-axes[b], inside_high) for b in range(a)
        ]
        regions.append([(axes[a], inside_high), *within])
        regions.append([(-axes[a], inside_low), *within])
    regions.append(
        [(axes[b], inside_low) for b in range(3)] + [(-axes[b], inside_high) for b in range(3)]
    )
    back = np.linalg.inv(to_box)
    parts = []
    for planes in regions:
        v, f = moved, faces
        for normal, corner in planes:
            v, f = _clip(v, f, normal, corner * np.abs(normal))
            if len(f) == 0:
                break
        if _has_area(v, f):
            v, f = _compact(v, f)
            parts.append((v @ back[:3, :3].T + back[:3, 3], f))
    return parts


def _halves(vertices, faces) -> list:
    """The triangles cut in two across the middle of their longest side."""
    points = _points(vertices, faces)
    axis = int(np.argmax(np.ptp(points, axis=0)))
    normal = np.eye(3)[axis]
    middle = normal * (points[:, axis].min() + points[:, axis].max()) / 2.0
    parts = []
    for side in (normal, -normal):
        v, f = _clip(vertices, faces, side, middle)
        if _has_area(v, f):
            parts.append(_compact(v, f))
    return parts
