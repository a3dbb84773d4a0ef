"""Fidelity: the shipped object matches an independent reading of its source, and is plausible.

The other families prove that the written file moves like what our adapter read; they cannot see
an adapter that read the source wrong. These checks compare the object READ BACK FROM ITS FILE
with a second reader of the source:

- URDF and PartNet-Mobility: yourdfpy parses the source (from the bytes our hardened parser
  accepted) and its joints are composed here into link poses; meshes are loaded at yourdfpy's
  `scale`.
- MJCF: MuJoCo compiles the source and its own forward kinematics (`mj_kinematics`) places
  bodies and geoms; geometry is MuJoCo's compiled mesh vertices and primitive sizes, masses
  MuJoCo's body masses.
- SDF: Drake's parser (when the `drake` package is installed, the `sdf` extra) reads the source
  into a MultibodyPlant: link frames, limits and masses are compared, not shapes (the plant is
  built without a scene graph). Without it only the plausibility checks below run.

Both readings are compared in the canonical world frame, up to the one rigid placement of the
convention: the source is scaled by the source's scale factor, rotated by the placement's
rotation (the up axis, exact) and moved by the translation that best fits the rest pose (fitted,
so that an adapter error that shifts the bounding box is not taken for a placement). Joints are
matched by source name; a canonical coordinate q maps to the source's q0 + sign * q / s (the sign
from the world axes, q0 from the limits: the rest-pose re-anchoring and the axis-sign rule of the
convention), and the object is compared at rest and at CONFIG_FRACTIONS of every range.

- fidelity.link_poses (URDF readers): world pose of every link frame at every configuration.
- fidelity.geometry: per link, the world-space box of its shapes (visuals, else collisions) at
  every configuration: catches wrong mesh scales, dropped or misplaced shapes and wrong motion.
- fidelity.mass: per link, the mass against the source's declared masses of the links merged
  into it (only where every one declares one).

Plausibility, with no second reader (every format):

- fidelity.visual_collision: per link with both, the visual and collision boxes agree within a
  factor (an inch mesh next to a metre collision box differs by 39).
- fidelity.size: the largest extent lies in the size range the taxonomy gives the object's
  category (or supercategory).
- fidelity.density: total mass over the rest-pose box volume, when every link's mass is declared
  by the source, lies in DENSITY_RANGE.
- fidelity.computed_density: when the pipeline computed any link's mass from its shapes, the
  total mass over the rest-pose box volume lies in the category's plausible range (the
  taxonomy's `density`); outside it the object goes to review with the figures.

A failed fidelity check sends the object to review (`verify.report.REVIEW_CHECKS`); a gross one
refuses it (severity error): a reader disagreement over GROSS times its tolerance, a factor or
range check more than GROSS times outside its bound.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from lxml import etree
from scipy.spatial import ConvexHull, QhullError

from normalize.convention import link_shapes
from normalize.meshes import load_mesh
from normalize.paths import resolve_reference
from normalize.safe_xml import parse_xml
from normalize.transforms import axis_angle_matrix
from verify.checks import Context, single
from verify.report import CheckResult

GROSS = 10.0
POSE_TOLERANCE = 1e-4  # of the largest extent (m per m), plus ABSOLUTE
GEOMETRY_TOLERANCE = 0.01  # of the largest extent: primitives are sampled, capsules meshed
ABSOLUTE = 1e-6  # m
MASS_TOLERANCE = 1e-3  # relative
VISUAL_COLLISION_FACTOR = 3.0
DENSITY_RANGE = (0.1, 30_000.0)  # kg/m^3 of the rest-pose bounding box
CONFIG_FRACTIONS = (0.3, 0.8)
UNBOUNDED_VALUES = (0.7, -0.4)  # rad, for continuous joints
PRIMITIVE_SAMPLES = 24


# --------------------------------------------------------------------------- shapes as points
def _ring(radius: float, z: float, n: int = PRIMITIVE_SAMPLES) -> np.ndarray:
    angle = np.linspace(0.0, 2.0 * math.pi, n, endpoint=False)
    return np.column_stack([radius * np.cos(angle), radius * np.sin(angle), np.full(n, z)])


def _sphere(radius: float) -> np.ndarray:
    rings = [_ring(radius * math.sin(t), radius * math.cos(t)) for t in np.linspace(0, math.pi, 9)]
    return np.concatenate(rings)


def shape_points(kind: str, size) -> np.ndarray:
    """Points on a primitive in its own frame (sizes as in the canonical model: box full
    extents, sphere radius, cylinder and capsule radius and length, ellipsoid semi-axes)."""
    if kind == "box":
        half = np.asarray(size[:3], float) / 2.0
        corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)])
        return corners * half
    if kind == "sphere":
        return _sphere(size[0])
    if kind == "ellipsoid":
        return _sphere(1.0) * np.asarray(size[:3], float)
    radius, length = size[0], size[1]
    ends = np.concatenate([_ring(radius, -length / 2), _ring(radius, length / 2)])
    if kind == "capsule":
        cap = _sphere(radius)
        ends = np.concatenate([ends, cap + [0, 0, length / 2], cap - [0, 0, length / 2]])
    return ends


_HULLS: OrderedDict[str, np.ndarray] = OrderedDict()
MAX_HULLS = 4096
HULL_ABOVE = 64  # vertices: smaller point sets are used as they are


def hull_points(key: str, vertices: np.ndarray) -> np.ndarray:
    """The vertices of the convex hull of `vertices` (cached under `key`, e.g. a mesh's content
    hash): a rigid or linear map of them has the same bounding box as the whole set, at a
    fraction of the points. Flat or degenerate sets are kept whole."""
    if len(vertices) <= HULL_ABOVE:
        return vertices
    hull = _HULLS.get(key)
    if hull is None:
        try:
            hull = vertices[ConvexHull(vertices).vertices]
        except QhullError:  # flat: every point may be extreme
            hull = np.unique(vertices, axis=0)
        _HULLS[key] = hull
        while len(_HULLS) > MAX_HULLS:
            _HULLS.popitem(last=False)
    else:
        _HULLS.move_to_end(key)
    return hull


def mesh_points(mesh, scale) -> np.ndarray:
    """Hull points of a loaded mesh (`normalize.meshes.Mesh`) at a per-axis scale."""
    return hull_points(mesh.sha256, np.asarray(mesh.vertices, float)) * scale


def _moved(points: np.ndarray, pose: np.ndarray) -> np.ndarray:
    return points @ pose[:3, :3].T + pose[:3, 3]


def canonical_points(obj, meshes: dict) -> dict[str, np.ndarray]:
    """Per link of a read-back object, points of the shapes standing for it, in its frame."""
    out = {}
    for link in obj.links:
        parts = []
        for g in link_shapes(link):
            if g.kind == "mesh":
                mesh = meshes.get(g.filename)
                if mesh is None:
                    continue
                local = mesh_points(mesh, g.scale)
            else:
                local = shape_points(g.kind, g.size)
            parts.append(_moved(local, g.origin))
        if parts:
            out[link.name] = np.concatenate(parts)
    return out


def _box(points: np.ndarray) -> np.ndarray:
    return np.stack([points.min(axis=0), points.max(axis=0)])


# --------------------------------------------------------------------------- readings
@dataclass
class SourceJoint:
    type: str  # "rotational" or "prismatic"
    lower: float
    upper: float
    rest: float
    axis: np.ndarray  # world direction at rest, source frame


@dataclass
class Reading:
    """A second reader's view of the source (source frame and units)."""

    reader: str
    joints: dict[str, SourceJoint]
    visuals: dict[str, np.ndarray]  # link -> points of its visual shapes, in the link frame
    collisions: dict[str, np.ndarray]  # link -> points of its collision shapes
    masses: dict[str, float]
    poses: Callable[[dict[str, float]], dict[str, np.ndarray]]  # source q -> link poses
    frames_comparable: bool


def _scale_vector(scale) -> np.ndarray:
    if scale is None:
        return np.ones(3)
    values = np.atleast_1d(np.asarray(scale, float))
    return np.full(3, values[0]) if values.size == 1 else values[:3]


def _joint_motion(kind: str, axis: np.ndarray, q: float) -> np.ndarray:
    motion = np.eye(4)
    if kind == "rotational":
        motion[:3, :3] = axis_angle_matrix(axis, q)
    elif kind == "prismatic":
        motion[:3, 3] = axis * q
    return motion


def yourdfpy_reading(ctx: Context) -> Reading:
    """yourdfpy's reading of the source URDF (the entry file, or PartNet's mobility.urdf)."""
    import yourdfpy

    candidate, source = ctx.result.candidate, ctx.source
    path = candidate.path if candidate.path.is_file() else candidate.path / "mobility.urdf"
    # The hardened parser reads the XML (yourdfpy's own parser is not; it also logs what it
    # cannot parse); yourdfpy interprets every element (`URDF._parse_robot`, what `URDF.load`
    # runs on the parsed tree).
    xml = parse_xml(path, source.max_file_bytes)
    logging.getLogger("yourdfpy").setLevel(logging.CRITICAL)
    robot = yourdfpy.URDF._parse_robot(xml_element=xml)
    joints = {j.name: j for j in robot.joints}
    parent_of = {j.child: j for j in robot.joints}
    kinds = {"revolute": "rotational", "continuous": "rotational", "prismatic": "prismatic"}

    def axis_of(joint) -> np.ndarray:
        axis = np.asarray(joint.axis if joint.axis is not None else (1.0, 0.0, 0.0), float)
        norm = float(np.linalg.norm(axis))
        return axis / norm if norm > 0 else np.array([1.0, 0.0, 0.0])  # fixed joints: unused

    def origin_of(joint) -> np.ndarray:
        return np.eye(4) if joint.origin is None else np.asarray(joint.origin, float)

    def poses(q: dict[str, float]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}

        def value(joint) -> float:
            if joint.mimic is not None and joint.mimic.joint in joints:
                leader = joints[joint.mimic.joint]
                multiplier = 1.0 if joint.mimic.multiplier is None else joint.mimic.multiplier
                offset = 0.0 if joint.mimic.offset is None else joint.mimic.offset
                return multiplier * value(leader) + offset
            return q.get(joint.name, 0.0)

        def pose(link: str) -> np.ndarray:
            if link not in out:
                joint = parent_of.get(link)
                if joint is None:
                    out[link] = np.eye(4)
                else:
                    kind = kinds.get(joint.type, "fixed")
                    motion = _joint_motion(kind, axis_of(joint), value(joint))
                    out[link] = pose(joint.parent) @ origin_of(joint) @ motion
            return out[link]

        for link in robot.links:
            pose(link.name)
        return out

    rest = poses({})
    source_joints = {}
    for joint in robot.joints:
        kind = kinds.get(joint.type)
        if kind is None:
            continue
        limit = joint.limit
        if joint.type == "continuous" or limit is None or limit.lower is None:
            lower, upper = -math.inf, math.inf
        else:
            lower, upper = float(limit.lower), float(limit.upper or 0.0)
        frame = rest[joint.parent] @ origin_of(joint)
        lower, upper = min(lower, upper), max(lower, upper)  # reversed ones, when allowed
        source_joints[joint.name] = SourceJoint(
            kind, lower, upper, 0.0, frame[:3, :3] @ axis_of(joint)
        )

    visuals, collisions, masses = {}, {}, {}
    for link in robot.links:
        if link.inertial is not None and link.inertial.mass:
            masses[link.name] = float(link.inertial.mass)
        for shapes, store in ((link.visuals, visuals), (link.collisions, collisions)):
            parts = []
            for shape in shapes:
                local = _urdf_shape(shape.geometry, path, source)
                if local is None:  # remote, missing or unreadable: normalization said so
                    continue
                origin = np.eye(4) if shape.origin is None else np.asarray(shape.origin, float)
                parts.append(_moved(local, origin))
            if parts:
                store[link.name] = np.concatenate(parts)
    return Reading("yourdfpy", source_joints, visuals, collisions, masses, poses, True)


def _urdf_shape(geometry, path, source) -> np.ndarray | None:
    """Points of one yourdfpy geometry in its own frame; None when it has none we can load."""
    if geometry is None:
        return None
    if geometry.box is not None:
        return shape_points("box", geometry.box.size)
    if geometry.sphere is not None:
        return shape_points("sphere", (geometry.sphere.radius,))
    if geometry.cylinder is not None:
        return shape_points("cylinder", (geometry.cylinder.radius, geometry.cylinder.length))
    if geometry.mesh is None:
        return None
    try:
        target = resolve_reference(
            geometry.mesh.filename,
            referrer=path,
            root=source.path,
            package_roots=source.package_roots,
        )
        mesh = load_mesh(target, root=source.path)
    except Exception:  # remote, missing or unreadable: normalization reported it already
        return None
    return mesh_points(mesh, _scale_vector(geometry.mesh.scale))


def mujoco_reading(ctx: Context) -> Reading:
    """MuJoCo's compilation of the source MJCF and its forward kinematics."""
    import mujoco

    from normalize.adapters.mjcf import VISIBLE_GROUPS, compile_mjcf, mujoco_names

    _, model = compile_mjcf(ctx.result.candidate.path, [])
    data = mujoco.MjData(model)
    body_names, joint_names = mujoco_names(model)
    kinds = {
        int(mujoco.mjtJoint.mjJNT_HINGE): "rotational",
        int(mujoco.mjtJoint.mjJNT_SLIDE): "prismatic",
    }
    by_name = {}
    for j in range(model.njnt):
        kind = kinds.get(int(model.jnt_type[j]))
        if kind is not None:
            by_name[joint_names[j]] = (j, kind)

    def kinematics(q: dict[str, float]) -> None:
        data.qpos[:] = model.qpos0
        for name, value in q.items():
            if name in by_name:
                data.qpos[model.jnt_qposadr[by_name[name][0]]] = value
        mujoco.mj_kinematics(model, data)

    def body_poses() -> dict[str, np.ndarray]:
        out = {}
        for b in range(model.nbody):
            pose = np.eye(4)
            pose[:3, :3] = data.xmat[b].reshape(3, 3)
            pose[:3, 3] = data.xpos[b]
            out[body_names[b]] = pose
        return out

    def poses(q: dict[str, float]) -> dict[str, np.ndarray]:
        kinematics(q)
        return body_poses()

    kinematics({})
    rest = body_poses()
    source_joints = {}
    for name, (j, kind) in by_name.items():
        limited = bool(model.jnt_limited[j])
        lower, upper = model.jnt_range[j] if limited else (-math.inf, math.inf)
        rest_value = float(model.qpos0[model.jnt_qposadr[j]])
        source_joints[name] = SourceJoint(
            kind, float(lower), float(upper), rest_value, data.xaxis[j].copy()
        )

    skip = {
        int(mujoco.mjtGeom.mjGEOM_PLANE),
        int(mujoco.mjtGeom.mjGEOM_HFIELD),
        int(mujoco.mjtGeom.mjGEOM_SDF),
    }
    names = {
        int(mujoco.mjtGeom.mjGEOM_BOX): "box",
        int(mujoco.mjtGeom.mjGEOM_SPHERE): "sphere",
        int(mujoco.mjtGeom.mjGEOM_CYLINDER): "cylinder",
        int(mujoco.mjtGeom.mjGEOM_CAPSULE): "capsule",
        int(mujoco.mjtGeom.mjGEOM_ELLIPSOID): "ellipsoid",
    }
    visible, colliding = {}, {}
    for g in range(model.ngeom):
        gtype = int(model.geom_type[g])
        if gtype in skip:
            continue
        size = model.geom_size[g]
        if gtype == int(mujoco.mjtGeom.mjGEOM_MESH):
            mesh = int(model.geom_dataid[g])
            start, count = int(model.mesh_vertadr[mesh]), int(model.mesh_vertnum[mesh])
            vertices = np.asarray(model.mesh_vert[start : start + count], float)
            key = "mujoco:" + hashlib.sha256(vertices.tobytes()).hexdigest()
            local = hull_points(key, vertices)
        elif gtype in names:
            kind = names[gtype]
            if kind == "box":
                local = shape_points(kind, 2.0 * size)
            elif kind in ("sphere", "ellipsoid"):
                local = shape_points(kind, size)
            else:
                local = shape_points(kind, (size[0], 2.0 * size[1]))
        else:
            continue
        world = local @ data.geom_xmat[g].reshape(3, 3).T + data.geom_xpos[g]
        body = body_names[int(model.geom_bodyid[g])]
        in_body = _moved(world, np.linalg.inv(rest[body]))
        material = int(model.geom_matid[g])
        alpha = model.mat_rgba[material][3] if material >= 0 else model.geom_rgba[g][3]
        if int(model.geom_group[g]) in VISIBLE_GROUPS and alpha > 0:
            visible.setdefault(body, []).append(in_body)
        if model.geom_contype[g] or model.geom_conaffinity[g]:
            colliding.setdefault(body, []).append(in_body)
    visuals = {body: np.concatenate(parts) for body, parts in visible.items()}
    collisions = {body: np.concatenate(parts) for body, parts in colliding.items()}
    masses = {
        body_names[b]: float(model.body_mass[b])
        for b in range(model.nbody)
        if model.body_mass[b] > 0
    }
    return Reading("MuJoCo", source_joints, visuals, collisions, masses, poses, False)


class ReaderCannotRead(Exception):
    """The second reader does not read this kind of file by design (not a finding)."""


DRAKE_JOINT_SUFFIX = "__arena_joint"


def _sdf_version(ctx: Context) -> tuple[int, ...]:
    root = parse_xml(ctx.result.candidate.path, ctx.source.max_file_bytes)
    try:
        return tuple(int(v) for v in root.get("version", "").split("."))
    except ValueError:
        return ()


def _drake_plant(ctx: Context):
    """(finalized MultibodyPlant of the source, {name Drake was given: joint name in the file})."""
    from pydrake.multibody.parsing import Parser
    from pydrake.multibody.plant import MultibodyPlant

    candidate = ctx.result.candidate
    plant = MultibodyPlant(0.0)
    renamed: dict[str, str] = {}
    try:
        Parser(plant).AddModels(str(candidate.path))
    except RuntimeError as exc:
        if "Non-unique name" in str(exc) and _sdf_version(ctx) < (1, 7):
            # SDFormat before 1.7 let a joint share its name with a link; Drake does not, so it
            # reads the file with the joints renamed (it loads no geometry: nothing else moves)
            root = parse_xml(candidate.path, ctx.source.max_file_bytes)
            for joint in root.iter("joint"):
                name = joint.get("name", "")
                renamed[name + DRAKE_JOINT_SUFFIX] = name
                joint.set("name", name + DRAKE_JOINT_SUFFIX)
            plant = MultibodyPlant(0.0)
            Parser(plant).AddModelsFromString(etree.tostring(root, encoding="unicode"), "sdf")
        elif "lower limit must be lower" in str(exc) and ctx.source.allowance(
            "limits.reversed", candidate.source_id
        ):
            raise ReaderCannotRead(
                "Drake refuses the reversed limits that the source's limits.reversed allowance "
                "accepts: not compared"
            ) from exc
        else:
            raise
    plant.Finalize()
    return plant, renamed


def drake_reading(ctx: Context) -> Reading:
    """Drake's parser (the `sdf` extra, `pip install drake`) reading the source SDF into a
    MultibodyPlant: its joints, limits, masses and link poses (no geometry: the plant is built
    without a scene graph, so it compares link frames and masses, not shapes)."""
    from pydrake.multibody.tree import BodyIndex, JointIndex, PrismaticJoint, RevoluteJoint

    plant, renamed = _drake_plant(ctx)
    context = plant.CreateDefaultContext()
    movable, child_frames = {}, {}
    for index in range(plant.num_joints()):
        joint = plant.get_joint(JointIndex(index))
        if isinstance(joint, (RevoluteJoint, PrismaticJoint)):
            movable[renamed.get(joint.name(), joint.name())] = joint
        child_frames[joint.child_body().name()] = joint.frame_on_child()
    world_body = plant.world_body().index()
    bodies = {
        plant.get_body(BodyIndex(i)).name(): plant.get_body(BodyIndex(i))
        for i in range(plant.num_bodies())
        if BodyIndex(i) != world_body
    }
    root = ctx.result.reference.root

    def poses(q: dict[str, float]) -> dict[str, np.ndarray]:
        for name, joint in movable.items():
            value = q.get(name, 0.0)
            if isinstance(joint, RevoluteJoint):
                joint.set_angle(context, value)
            else:
                joint.set_translation(context, value)
        # A link's frame in the model is its parent joint's frame (as in URDF), not the SDF link
        # frame: the frame of each body's joint on it, the root's own frame
        world = {
            n: (
                plant.CalcRelativeTransform(context, plant.world_frame(), child_frames[n])
                if n in child_frames
                else plant.EvalBodyPoseInWorld(context, b)
            ).GetAsMatrix4()
            for n, b in bodies.items()
        }
        base = np.linalg.inv(world[root]) if root in world else np.eye(4)
        return {name: base @ pose for name, pose in world.items()}

    poses({})
    source_joints = {}
    for name, joint in movable.items():
        kind = "rotational" if isinstance(joint, RevoluteJoint) else "prismatic"
        local = joint.revolute_axis() if kind == "rotational" else joint.translation_axis()
        frame = plant.CalcRelativeTransform(context, plant.world_frame(), joint.frame_on_child())
        lower, upper = joint.position_lower_limits()[0], joint.position_upper_limits()[0]
        source_joints[name] = SourceJoint(
            kind, float(lower), float(upper), 0.0, frame.rotation().matrix() @ np.asarray(local)
        )
    # Drake gives a link without <inertial> SDFormat's default 1 kg; the model computes that
    # link's mass from its shapes instead, so only declared masses are compared
    xml = parse_xml(ctx.result.candidate.path, ctx.source.max_file_bytes)
    declared = {
        link.get("name") for link in xml.iter("link") if link.find("inertial/mass") is not None
    }
    masses = {n: float(b.default_mass()) for n, b in bodies.items() if n in declared}
    return Reading("Drake", source_joints, {}, {}, masses, poses, True)


READERS = {
    "urdf": yourdfpy_reading,
    "partnet_mobility": yourdfpy_reading,
    "mjcf": mujoco_reading,
    "sdf": drake_reading,
}


# --------------------------------------------------------------------------- results
def graded(check_id: str, element, value: float, threshold: float, message: str) -> CheckResult:
    """A failed fidelity result: a warning (review), an error over GROSS times the threshold."""
    severity = "error" if value > GROSS * threshold else "warning"
    return single(
        check_id, severity, False, message, value=value, threshold=threshold, element=element
    )


def _factor_result(check_id, element, factor: float, bound: float, message: str) -> CheckResult:
    """A failed factor check: a warning, an error when the factor is over GROSS."""
    severity = "error" if factor > GROSS else "warning"
    return single(
        check_id, severity, False, message, value=factor, threshold=bound, element=element
    )


def _summary(check_id, rows, passed_message, describe) -> list[CheckResult]:
    """rows: (element, value, threshold). Failed rows graded; else one pass with the worst."""
    failed = [graded(check_id, e, v, t, describe(e, v, t)) for e, v, t in rows if v > t]
    if failed:
        return failed
    if not rows:
        return [single(check_id, "warning", True, passed_message)]
    element, value, threshold = max(rows, key=lambda r: r[1] / r[2])
    return [
        single(
            check_id,
            "warning",
            True,
            passed_message,
            value=value,
            threshold=threshold,
            element=element,
        )
    ]


# --------------------------------------------------------------------------- comparison
def _joint_map(ctx: Context, reading: Reading, rotation: np.ndarray, scale: float):
    """canonical joint -> (source joint, sign, q0, length scale) for the joints that match."""
    obj, memory = ctx.reread, ctx.result.object
    names = [memory.joint_map[j.name].source_name for j in obj.joints]
    frames = obj.joint_frames()
    out = {}
    for joint, name in zip(obj.joints, names, strict=True):
        found = reading.joints.get(name)
        if not joint.moving or found is None or names.count(name) != 1:
            continue
        prismatic = joint.type == "prismatic"
        if prismatic != (found.type == "prismatic") or joint.type == "helical":
            continue
        axis = frames[joint.name][:3, :3] @ joint.axis
        sign = 1.0 if float(axis @ (rotation @ found.axis)) >= 0 else -1.0
        length = scale if prismatic else 1.0
        if math.isfinite(found.lower) and math.isfinite(found.upper):
            q0 = (
                found.lower - joint.lower / length
                if sign > 0
                else found.upper + joint.lower / length
            )
        else:
            q0 = found.rest
        out[joint.name] = (name, sign, q0, length)
    return out


def _configurations(obj) -> list[dict[str, float]]:
    configs = [{}]
    for k, fraction in enumerate(CONFIG_FRACTIONS):
        q = {}
        for joint in obj.joints:
            if not joint.moving or joint.mimic is not None:
                continue
            if math.isfinite(joint.lower) and math.isfinite(joint.upper):
                q[joint.name] = joint.lower + fraction * (joint.upper - joint.lower)
            elif joint.type != "prismatic":
                q[joint.name] = UNBOUNDED_VALUES[k % len(UNBOUNDED_VALUES)]
        configs.append(q)
    return configs


def compare(ctx: Context, reading: Reading) -> list[CheckResult]:
    obj, memory = ctx.reread, ctx.result.object
    extent = ctx.notes.get("extent") or 1.0
    rotation = np.asarray(ctx.result.placement, float)[:3, :3]
    scale = float(ctx.result.scale)
    similarity = np.eye(4)
    similarity[:3, :3] = scale * rotation
    ours = canonical_points(obj, ctx.notes.get("meshes", {}))
    joints = _joint_map(ctx, reading, rotation, scale)

    def source_configuration(q: dict[str, float]) -> dict[str, float]:
        """The source coordinates of canonical coordinates `q` (mimic couplings applied)."""
        resolved = obj.resolve_configuration(q)
        return {
            source_name: q0 + sign * resolved[name] / length
            for name, (source_name, sign, q0, length) in joints.items()
        }

    rest_source = reading.poses(source_configuration({}))  # re-anchored rest poses included
    members = {
        link.name: [n for n in memory.link_map[link.name].source_names if n in rest_source]
        for link in obj.links
    }

    def source_points(link: str, poses) -> np.ndarray | None:
        """World points of the source links merged into `link`: their visuals, else (when none
        of them has any) their collisions, as the convention represents a link."""
        names = members[link]
        shapes = reading.visuals if any(m in reading.visuals for m in names) else reading.collisions
        parts = [_moved(shapes[m], poses[m]) for m in names if m in shapes]
        return _moved(np.concatenate(parts), similarity) if parts else None

    # The placement's translation, fitted at rest.
    ours_rest = obj.link_poses()
    offsets = []
    for link in obj.links:
        theirs = source_points(link.name, rest_source)
        if theirs is not None and link.name in ours:
            offsets.append(
                _box(_moved(ours[link.name], ours_rest[link.name])).mean(axis=0)
                - _box(theirs).mean(axis=0)
            )
        if reading.frames_comparable and link.name != obj.root and members[link.name]:
            source_frame = similarity @ rest_source[members[link.name][0]]
            offsets.append(ours_rest[link.name][:3, 3] - source_frame[:3, 3])
    shift = np.mean(offsets, axis=0) if offsets else np.zeros(3)
    similarity[:3, 3] = shift

    pose_rows: dict[str, tuple] = {}
    geometry_rows: dict[str, tuple] = {}
    pose_threshold = POSE_TOLERANCE * extent + ABSOLUTE
    geometry_threshold = GEOMETRY_TOLERANCE * extent + ABSOLUTE
    for q in _configurations(obj):
        q = {name: value for name, value in q.items() if name in joints}
        theirs_poses = reading.poses(source_configuration(q))
        our_poses = obj.link_poses(q)
        label = (
            "rest"
            if not q
            else "q = " + ", ".join(f"{k} {v:.4g}" for k, v in sorted(q.items())[:3])
        )
        for link in obj.links:
            element = f"link {link.name}"
            if reading.frames_comparable and link.name != obj.root and members[link.name]:
                source_frame = similarity @ theirs_poses[members[link.name][0]]
                error = float(np.linalg.norm(our_poses[link.name][:3, 3] - source_frame[:3, 3]))
                turned = source_frame[:3, :3] / scale
                error += extent * float(np.abs(our_poses[link.name][:3, :3] - turned).max())
                if element not in pose_rows or error > pose_rows[element][1]:
                    pose_rows[element] = (element, error, pose_threshold, label)
            theirs = source_points(link.name, theirs_poses)
            if theirs is None:
                continue
            if link.name in ours:
                error = float(
                    np.abs(_box(_moved(ours[link.name], our_poses[link.name])) - _box(theirs)).max()
                )
            else:  # the source has shapes here, the shipped object none
                error = float(np.linalg.norm(np.ptp(theirs, axis=0))) + geometry_threshold
            if element not in geometry_rows or error > geometry_rows[element][1]:
                geometry_rows[element] = (element, error, geometry_threshold, label)

    who = reading.reader
    unmatched = sum(1 for j in obj.joints if j.moving and j.mimic is None and j.name not in joints)
    note = f"; {unmatched} moving joint(s) without a {who} match kept at rest" if unmatched else ""
    out = []
    if reading.frames_comparable:
        out += _summary(
            "fidelity.link_poses",
            [r[:3] for r in pose_rows.values()],
            f"every link frame where {who} puts it, at rest and over the ranges{note}",
            lambda e, v, t: (
                f"{e}: {v:.4g} m from where {who} reading the source puts it at "
                f"{pose_rows[e][3]} (position error plus extent times rotation error; "
                f"tolerance {t:.3g} m)"
            ),
        )
    if not (reading.visuals or reading.collisions):  # a reader without shapes (Drake's plant)
        return out + _mass_rows(ctx, members, reading, scale)
    out += _summary(
        "fidelity.geometry",
        [r[:3] for r in geometry_rows.values()],
        f"every link's shapes where {who} puts them, at rest and over the ranges{note}",
        lambda e, v, t: (
            f"{e}: its shapes' box is {v:.4g} m off {who}'s reading of the source at "
            f"{geometry_rows[e][3]} (tolerance {t:.3g} m)"
        ),
    )
    out += _mass_rows(ctx, members, reading, scale)
    return out


def _mass_rows(ctx: Context, members, reading: Reading, scale: float) -> list[CheckResult]:
    """Masses against the declared ones. A link whose inertial the adapter read and
    normalization recomputed (an invalid source inertia, recorded as a change and in
    inertia.origin) is only reviewed: the repair is known, the lost mass still worth a look.
    A declared mass the adapter did not read at all is graded like any disagreement."""
    obj, memory, reference = ctx.reread, ctx.result.object, ctx.result.reference
    rows, details = [], {}
    for link in obj.links:
        names = members[link.name]
        if not names or not all(n in reading.masses for n in names):
            continue
        expected = scale**3 * sum(reading.masses[n] for n in names)
        mass = link.inertial.mass if link.inertial is not None else 0.0
        kept = memory.link_map[link.name].inertial
        read = [reference.link_map[n].inertial for n in names if n in reference.link_map]
        repaired = (  # the adapter read an inertial, normalization replaced it (recorded)
            kept is not None
            and not set(kept.method.split("+")) <= {"source", "merged"}
            and all(inertial is not None for inertial in read)
        )
        element = f"link {link.name}"
        rows.append((element, abs(mass - expected) / expected, MASS_TOLERANCE))
        details[element] = (mass, expected, repaired)
    out = []
    for element, value, threshold in rows:
        if value <= threshold:
            continue
        mass, expected, repaired = details[element]
        message = (
            f"{element}: mass {mass:.6g} kg, the source declares {expected:.6g} kg "
            f"({reading.reader}; relative difference {value:.3g}, tolerance {threshold:g})"
        )
        if repaired:
            message += "; normalization recomputed this inertial (see inertia.origin)"
            out.append(
                single(
                    "fidelity.mass",
                    "warning",
                    False,
                    message,
                    value=value,
                    threshold=threshold,
                    element=element,
                )
            )
        else:
            out.append(graded("fidelity.mass", element, value, threshold, message))
    if out:
        return out
    return _summary(
        "fidelity.mass", rows, f"every mass the source declares is kept ({reading.reader})", None
    )


# --------------------------------------------------------------------------- plausibility
def _link_box(link, shapes, meshes) -> np.ndarray | None:
    parts = []
    for g in shapes:
        if g.kind == "mesh":
            mesh = meshes.get(g.filename)
            if mesh is None:
                continue
            local = mesh_points(mesh, g.scale)
        else:
            local = shape_points(g.kind, g.size)
        parts.append(_moved(local, g.origin))
    return _box(np.concatenate(parts)) if parts else None


def visual_collision(ctx: Context) -> list[CheckResult]:
    meshes = ctx.notes.get("meshes", {})
    rows, out = [], []
    for link in ctx.reread.links:
        if not link.visuals or not link.collisions:
            continue
        visual = _link_box(link, link.visuals, meshes)
        collision = _link_box(link, link.collisions, meshes)
        if visual is None or collision is None:
            continue
        a, b = (
            float(np.linalg.norm(np.ptp(visual, axis=0))),
            float(np.linalg.norm(np.ptp(collision, axis=0))),
        )
        if min(a, b) <= 0:
            continue
        factor = max(a, b) / min(a, b)
        rows.append((f"link {link.name}", factor, a, b))
    for element, factor, a, b in rows:
        if factor > VISUAL_COLLISION_FACTOR:
            out.append(
                _factor_result(
                    "fidelity.visual_collision",
                    element,
                    factor,
                    VISUAL_COLLISION_FACTOR,
                    f"{element}: its visual box (diagonal {a:.4g} m) and collision box ({b:.4g} m) "
                    f"differ by a factor {factor:.3g} (a unit error? tolerance "
                    f"{VISUAL_COLLISION_FACTOR:g}, refused over {GROSS:g})",
                )
            )
    if out:
        return out
    worst = max(rows, key=lambda r: r[1], default=None)
    return [
        single(
            "fidelity.visual_collision",
            "warning",
            True,
            f"{len(rows)} link(s) with both visuals and collisions, their boxes within a factor "
            f"{VISUAL_COLLISION_FACTOR:g}",
            value=None if worst is None else worst[1],
            threshold=VISUAL_COLLISION_FACTOR,
            element=None if worst is None else worst[0],
        )
    ]


def _category(ctx: Context):
    """The caller's assignment, else the object categorized here (`arena validate`)."""
    if ctx.assignment is not None:
        return ctx.assignment
    import taxonomy

    candidate = ctx.result.candidate
    return taxonomy.categorize(
        ctx.result.object,
        object_id=candidate.object_id,
        source_id=candidate.source_id,
        source_overrides=ctx.source.overrides,
    )


def size_and_density(ctx: Context) -> list[CheckResult]:
    import taxonomy

    extent = ctx.notes.get("extent")
    if extent is None:
        return [single("fidelity.size", "warning", True, "not measured: no finite geometry")]
    assignment = _category(ctx)
    tax = taxonomy.load_taxonomy()
    size = tax.size_range(assignment.category)
    out = []
    if size is None:
        out.append(
            single(
                "fidelity.size",
                "warning",
                True,
                f"no size range for category {assignment.category}",
                value=extent,
            )
        )
    else:
        low, high = size
        factor = max(low / extent, extent / high)
        message = (
            f"largest extent {extent:.4g} m for category {assignment.category} "
            f"({assignment.supercategory}), whose size range is [{low:g}, {high:g}] m"
        )
        if factor > 1.0:
            out.append(
                _factor_result(
                    "fidelity.size",
                    f"robot {ctx.reread.name}",
                    factor,
                    1.0,
                    f"{message}: {factor:.3g} times outside it (refused over {GROSS:g})",
                )
            )
        else:
            out.append(
                single("fidelity.size", "warning", True, message, value=factor, threshold=1.0)
            )
    out.append(_density(ctx))
    out.append(_computed_density(ctx, assignment, tax))
    return out


def _mass_computed(inertial) -> bool:
    """Whether the pipeline computed this inertial's mass from shapes (it did not for a source
    inertial, nor for a declared mass with a computed tensor, `source_mass+...`)."""
    method = inertial.method or ""
    return not method.startswith("source_mass+") and any(
        part != "source" for part in method.split("+")
    )


def _computed_density(ctx: Context, assignment, tax) -> CheckResult:
    """The computed masses against the category's plausible effective density: outside it, the
    object goes to review with the figures (never refused: the mass is ours, not the source's)."""
    computed = [
        link
        for link in ctx.result.object.links
        if link.inertial is not None and _mass_computed(link.inertial)
    ]
    low, high = ctx.notes.get("box", (None, None))
    plausible = tax.density_range(assignment.category)
    if not computed or low is None or plausible is None:
        why = "no mass was computed from shapes" if not computed else "no box or no range"
        return single("fidelity.computed_density", "warning", True, f"not measured: {why}")
    volume = float(np.prod(np.maximum(high - low, 1e-3)))
    mass = sum(link.inertial.mass for link in ctx.reread.links if link.inertial is not None)
    density = mass / volume
    lo, hi = plausible
    models = ", ".join(sorted({link.inertial.method for link in computed}))
    message = (
        f"{len(computed)} computed link mass(es) ({models}): {mass:.4g} kg in a {volume:.4g} m^3 "
        f"rest-pose box, {density:.4g} kg/m^3, for {assignment.category} "
        f"({assignment.supercategory}) plausible [{lo:g}, {hi:g}]"
    )
    factor = max(lo / density, density / hi) if density > 0 else math.inf
    if factor > 1.0:
        return single(
            "fidelity.computed_density",
            "warning",
            False,
            f"{message}: {factor:.3g} times outside it",
            value=factor,
            threshold=1.0,
            element=f"robot {ctx.reread.name}",
        )
    return single(
        "fidelity.computed_density", "warning", True, message, value=factor, threshold=1.0
    )


def _density(ctx: Context) -> CheckResult:
    memory = ctx.result.object
    declared = [
        link.inertial is not None and link.inertial.method == "source" for link in memory.links
    ]
    low, high = ctx.notes.get("box", (None, None))
    if not all(declared) or low is None:
        return single(
            "fidelity.density",
            "warning",
            True,
            "not measured: not every link's mass is declared by the source",
        )
    volume = float(np.prod(np.maximum(high - low, 1e-3)))
    mass = sum(link.inertial.mass for link in ctx.reread.links if link.inertial is not None)
    density = mass / volume
    lo, hi = DENSITY_RANGE
    factor = max(lo / density, density / hi) if density > 0 else math.inf
    message = (
        f"total mass {mass:.4g} kg in a {volume:.4g} m^3 rest-pose box: {density:.4g} kg/m^3 "
        f"(plausible: [{lo:g}, {hi:g}])"
    )
    if factor > 1.0:
        return _factor_result(
            "fidelity.density",
            f"robot {ctx.reread.name}",
            factor,
            1.0,
            f"{message}, {factor:.3g} times outside (refused over {GROSS:g})",
        )
    return single("fidelity.density", "warning", True, message, value=density)


# --------------------------------------------------------------------------- family
def run(ctx: Context) -> list[CheckResult]:
    out = visual_collision(ctx) + size_and_density(ctx)
    reader = READERS.get(ctx.source.format)
    if reader is None:
        out.append(
            single(
                "fidelity.reader",
                "info",
                True,
                f"no independent reader of {ctx.source.format} is installed: plausibility only",
            )
        )
        return out
    try:
        reading = reader(ctx)
    except ImportError as exc:
        return out + [single("fidelity.reader", "info", True, f"reader not installed: {exc}")]
    except ReaderCannotRead as exc:
        return out + [single("fidelity.reader", "info", True, str(exc))]
    except Exception as exc:  # the second reader refusing what ours accepted is a finding
        return out + [
            single(
                "fidelity.reader",
                "warning",
                False,
                f"the independent reader cannot read the source: {type(exc).__name__}: {exc}",
            )
        ]
    out.append(single("fidelity.reader", "info", True, f"compared with {reading.reader}"))
    return out + compare(ctx, reading)
