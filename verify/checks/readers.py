"""The second readers of the fidelity checks: each reads a SOURCE file independently of our
adapters and gives its joints, link poses for any configuration, shapes and masses
(`Reading`).

- URDF and PartNet-Mobility: yourdfpy parses the source (from the bytes our hardened parser
  accepted) and its joints are composed here into link poses; meshes are loaded at yourdfpy's
  `scale`.
- MJCF: MuJoCo compiles the source and its own forward kinematics (`mj_kinematics`) places
  bodies and geoms; geometry is MuJoCo's compiled mesh vertices and primitive sizes, masses
  MuJoCo's body masses.
- SDF: Drake's parser (the `drake` package, the `sdf` extra) builds a MultibodyPlant of the
  source without a scene graph: link frames, limits and masses, no shapes.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from lxml import etree

from normalize.meshes import load_mesh
from normalize.paths import resolve_reference
from normalize.safe_xml import parse_xml
from normalize.transforms import axis_angle_matrix
from verify.checks import Context
from verify.checks.shape_points import _moved, hull_points, mesh_points, shape_points


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


def _sdf_version(root) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in root.get("version", "").split("."))
    except ValueError:
        return ()


@contextlib.contextmanager
def _drake_warnings_unsaid():
    """Drake's parser warns on the terminal of elements it ignores (a joint's thread_pitch...):
    the comparison does not need them, and the build's output is not the place for them."""
    logger = logging.getLogger("drake")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _drake_plant(ctx: Context, root):
    """(finalized MultibodyPlant of the source, {name Drake was given: joint name in the file});
    `root`: the source parsed by our hardened parser (changed here only when joints are
    renamed)."""
    from pydrake.multibody.parsing import Parser
    from pydrake.multibody.plant import MultibodyPlant

    candidate = ctx.result.candidate
    plant = MultibodyPlant(0.0)
    renamed: dict[str, str] = {}
    try:
        with _drake_warnings_unsaid():
            Parser(plant).AddModels(str(candidate.path))
    except RuntimeError as exc:
        if "Non-unique name" in str(exc) and _sdf_version(root) < (1, 7):
            # SDFormat before 1.7 let a joint share its name with a link; Drake does not, so it
            # reads the file with the joints renamed (it loads no geometry: nothing else moves)
            for joint in root.iter("joint"):
                name = joint.get("name", "")
                renamed[name + DRAKE_JOINT_SUFFIX] = name
                joint.set("name", name + DRAKE_JOINT_SUFFIX)
            plant = MultibodyPlant(0.0)
            with _drake_warnings_unsaid():
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

    xml = parse_xml(ctx.result.candidate.path, ctx.source.max_file_bytes)  # read once
    plant, renamed = _drake_plant(ctx, xml)
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
