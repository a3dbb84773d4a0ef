"""The shipped USD (`object.usda` and `object_meshes.usdc`, normalize/usd_writer.py) read back
with usd-core and compared with the URDF read back, and checked with usdchecker's rules.

Reading: the stage is opened with `pxr` and parsed with the UsdPhysics parser usd-core ships
for simulators (`UsdPhysicsLoadStageFromPrimRange`); whatever either prints is quoted
(`simulator.printed`, loader usd). Compared, with helical joints split as in the URDF: the link
set (rigid bodies), each link's mass, centre of mass and inertia tensor (rebuilt from its
principal moments and axes), its numbers of visual and collision shapes and the collision
meshes' convex-hull approximation (`simulator.usd.links`); the joint set, each joint's type,
parent and child, axis direction, origin, limits (degrees for revolute joints, none for
continuous and unbounded ones) and mimic coupling, the fixed root joint and the articulation
root (`simulator.usd.joints`); each link's rest pose, chained from the world through the USD
joint frames and as placed by its Xform (`simulator.usd.rest_pose`). UsdPhysics stores joint
frames, limits, masses and inertias as 32-bit floats: lengths are held to 1e-6 per metre of the
object's reach (1e-6 below 1 m), angles to 1e-6 rad, masses and inertias to 1e-6 relative.
usdchecker's rules are usd-core's registered validators but the usdz-package ones, as
`usdchecker` runs them (`simulator.usd.compliance`; its warnings: `.compliance_warning`).
Without usd-core every check here is reported skipped (`simulator.skipped`, loader usd).
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

from normalize.helical import split_helical
from normalize.mjcf_writer import BOUND_INERTIA, BOUND_MASS
from normalize.model import ArticulatedObject, Geometry, Inertial, Joint, Link
from normalize.transforms import invert, quaternion_matrix
from normalize.usd_writer import (
    JOINTS,
    MIMIC_JOINT,
    MIMIC_MULTIPLIER,
    MIMIC_OFFSET,
    ROOT_JOINT,
    USD_NAME,
    VISUALS,
    installed,
    link_colliders,
    write_usd,
)
from verify.checks import Context, aggregate, single
from verify.report import CheckResult

TOLERANCE = 1e-6
LOADER = "loader usd"
#: usdchecker leaves these out unless asked to check a usdz package for ARKit or its root layer
USDZ_KEYWORD = "UsdzValidators"
ROOT_PACKAGE_VALIDATOR = "usdUtilsValidators:RootPackageValidator"


@dataclass
class UsdBody:
    """A rigid body as read: its placed world pose (doubles), mass properties, shapes."""

    pose: np.ndarray
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    visuals: int = 0
    colliders: list[str | None] = field(default_factory=list)  # approximation per shape


@dataclass
class UsdJoint:
    """A joint as UsdPhysics parsed it; limits in radians or metres, None when unlimited."""

    type: str  # "revolute", "prismatic" or "fixed"
    body0: str | None
    body1: str | None
    axis: str | None
    local0: np.ndarray
    local1: np.ndarray
    limits: tuple[float, float] | None
    mimic: tuple[str | None, float | None, float | None] | None


@dataclass
class UsdObject:
    """What `read_usd` found: stage units, rigid bodies and joints by name, articulation roots."""

    units: dict[str, object]
    bodies: dict[str, UsdBody]
    joints: dict[str, UsdJoint]
    roots: list[str]  # what the articulation roots are (joint or body names)


def frame_pose(position, orientation) -> np.ndarray:
    """The 4x4 pose of a USD position and quaternion (Gf vectors and quaternions)."""
    pose = np.eye(4)
    pose[:3, :3] = quaternion_matrix(
        (orientation.GetReal(), *(float(v) for v in orientation.GetImaginary()))
    )
    pose[:3, 3] = [float(v) for v in position]
    return pose


def _name(path, root) -> str | None:
    if path is None or path.isEmpty:
        return None
    return path.name if path.GetParentPath() == root else str(path)


def mass_properties(prim) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass, centre of mass, inertia tensor) from a prim's MassAPI attributes."""
    from pxr import UsdPhysics

    api = UsdPhysics.MassAPI(prim)
    mass = float(api.GetMassAttr().Get() or 0.0)
    com = np.array(api.GetCenterOfMassAttr().Get() or (0.0, 0.0, 0.0), dtype=float)
    moments = np.array(api.GetDiagonalInertiaAttr().Get() or (0.0, 0.0, 0.0), dtype=float)
    axes = api.GetPrincipalAxesAttr().Get()
    rotation = np.eye(3)
    if axes is not None and axes.GetLength() > 0:
        rotation = quaternion_matrix((axes.GetReal(), *(float(v) for v in axes.GetImaginary())))
    return mass, com, rotation @ np.diag(moments) @ rotation.T


def _mimic(prim):
    relationship = prim.GetRelationship(MIMIC_JOINT)
    if not relationship:
        return None
    targets = relationship.GetTargets()
    multiplier, offset = prim.GetAttribute(MIMIC_MULTIPLIER), prim.GetAttribute(MIMIC_OFFSET)
    return (
        targets[0].name if len(targets) == 1 else None,
        multiplier.Get() if multiplier else None,
        offset.Get() if offset else None,
    )


def read_usd(path: Path) -> UsdObject:
    """What a UsdPhysics reader finds in `path` (raises ValueError when it cannot be read)."""
    from pxr import Usd, UsdGeom, UsdPhysics

    stage = Usd.Stage.Open(str(path))
    if stage is None or not stage.GetDefaultPrim():
        raise ValueError("no stage with a default prim")
    root = stage.GetDefaultPrim().GetPath()
    units = {
        "metersPerUnit": UsdGeom.GetStageMetersPerUnit(stage),
        "kilogramsPerUnit": UsdPhysics.GetStageKilogramsPerUnit(stage),
        "upAxis": str(UsdGeom.GetStageUpAxis(stage)),
    }
    parsed = UsdPhysics.UsdPhysicsLoadStageFromPrimRange(stage, [root])
    kinds = UsdPhysics.ObjectType
    bodies: dict[str, UsdBody] = {}
    for body_path in parsed.get(kinds.RigidBody, ([], []))[0]:
        prim = stage.GetPrimAtPath(body_path)
        pose = UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
        visuals = prim.GetChild(VISUALS)
        shapes = [p for p in visuals.GetChildren() if p.IsA(UsdGeom.Gprim)] if visuals else []
        bodies[_name(body_path, root)] = UsdBody(
            np.array(pose, dtype=float).T, *mass_properties(prim), visuals=len(shapes)
        )
    for kind, (_, descs) in parsed.items():
        if not kind.name.endswith("Shape"):
            continue
        for desc in descs:
            body = bodies.get(_name(desc.rigidBody, root))
            if body is not None:
                body.colliders.append(getattr(desc, "approximation", None))
    joints: dict[str, UsdJoint] = {}
    types = {
        kinds.RevoluteJoint: "revolute",
        kinds.PrismaticJoint: "prismatic",
        kinds.FixedJoint: "fixed",
    }
    for kind, (paths, descs) in parsed.items():
        if not kind.name.endswith("Joint"):
            continue
        for joint_path, desc in zip(paths, descs, strict=True):
            joint_type = types.get(kind, kind.name)
            limits = None
            if joint_type != "fixed" and kind in types and desc.limit.enabled:
                limits = (desc.limit.lower, desc.limit.upper)
                if joint_type == "revolute":
                    limits = (math.radians(limits[0]), math.radians(limits[1]))
            joints[_name(joint_path, root.AppendChild(JOINTS))] = UsdJoint(
                type=joint_type,
                body0=_name(desc.body0, root),
                body1=_name(desc.body1, root),
                axis=desc.axis.name if hasattr(desc, "axis") else None,
                local0=frame_pose(desc.localPose0Position, desc.localPose0Orientation),
                local1=frame_pose(desc.localPose1Position, desc.localPose1Orientation),
                limits=limits,
                mimic=_mimic(stage.GetPrimAtPath(joint_path)),
            )
    roots = []
    for desc in parsed.get(kinds.Articulation, ([], []))[1]:
        roots += [p.name for p in desc.rootPrims]
    return UsdObject(units, bodies, joints, roots)


# --------------------------------------------------------------------------- comparisons
def reach(obj: ArticulatedObject) -> float:
    """Metres the length tolerances scale with: the farthest link frame or joint offset, at
    least 1 (32-bit floats hold a length to about 6e-8 of itself)."""
    lengths = [np.linalg.norm(p[:3, 3]) for p in obj.link_poses().values()]
    lengths += [np.linalg.norm(j.origin[:3, 3]) for j in obj.joints]
    return max([1.0, *lengths])


def _numbers(value) -> str:
    """Numbers for a message: 9 significant digits, vectors and matrices as nested lists."""
    if np.ndim(value) == 0:
        return f"{float(value):.9g}"
    return "[" + ", ".join(_numbers(v) for v in value) + "]"


def _differs(where: str, what: str, found, expected) -> str:
    return f"{where}: {what} {_numbers(found)} in {USD_NAME}, {_numbers(expected)} in the URDF"


def _close(a: float, b: float, scale: float = 1.0) -> bool:
    return abs(a - b) <= TOLERANCE * max(scale, abs(b))


def _link_problems(obj: ArticulatedObject, read: UsdObject, length: float) -> list[str]:
    out = []
    names = {link.name for link in obj.links}
    out += [f"link {n}: not a rigid body in {USD_NAME}" for n in sorted(names - set(read.bodies))]
    out += [f"link {n}: a rigid body not in the URDF" for n in sorted(set(read.bodies) - names)]
    for link in obj.links:
        body = read.bodies.get(link.name)
        if body is None:
            continue
        inertial = link.inertial
        if inertial is None or inertial.mass <= 0.0:
            mass, com, inertia = BOUND_MASS, np.zeros(3), BOUND_INERTIA * np.eye(3)
        else:
            mass, com, inertia = inertial.mass, inertial.com, inertial.inertia
        where = f"link {link.name}"
        if not _close(body.mass, mass, 0.0):
            out.append(_differs(where, "mass (kg)", body.mass, mass))
        if np.abs(body.com - com).max() > TOLERANCE * length:
            out.append(_differs(where, "centre of mass", body.com, com))
        if np.abs(body.inertia - inertia).max() > TOLERANCE * np.abs(inertia).max():
            out.append(_differs(where, "inertia tensor", body.inertia, inertia))
        if body.visuals != len(link.visuals):
            out.append(f"{where}: {body.visuals} visual shapes, {len(link.visuals)} in the URDF")
        expected = sorted(c.approximation or "" for c in link_colliders(link))
        if sorted(a or "" for a in body.colliders) != expected:
            out.append(
                f"{where}: collision shapes {sorted(a or 'primitive' for a in body.colliders)}, "
                f"expected {[a or 'primitive' for a in expected]}"
            )
    return out


def _joint_problems(joint: Joint, found, length: float) -> list[str]:
    where = f"joint {joint.name}"
    if found is None:
        return [f"{where}: missing from {USD_NAME}"]
    out = []
    expected_type = {"continuous": "revolute"}.get(joint.type, joint.type)
    if found.type != expected_type:
        out.append(f"{where}: a {found.type} joint in {USD_NAME}, {joint.type} in the URDF")
    if (found.body0, found.body1) != (joint.parent, joint.child):
        out.append(
            f"{where}: joins {found.body0} to {found.body1}, the URDF {joint.parent} to "
            f"{joint.child}"
        )
    if np.abs(found.local0[:3, 3] - joint.origin[:3, 3]).max() > TOLERANCE * length:
        out.append(_differs(where, "origin", found.local0[:3, 3], joint.origin[:3, 3]))
    if joint.type != "fixed" and found.axis is not None:
        axis = found.local0[:3, :3] @ np.eye(3)["XYZ".index(found.axis)]
        expected = joint.origin[:3, :3] @ joint.axis
        if np.abs(axis - expected).max() > TOLERANCE:
            out.append(_differs(where, "axis in the parent frame", axis, expected))
    bounded = math.isfinite(joint.lower) and joint.type != "fixed"
    if bounded and found.limits is None:
        out.append(f"{where}: no limits, the URDF's are [{joint.lower:g}, {joint.upper:g}]")
    elif not bounded and found.limits is not None:
        out.append(f"{where}: limits {_numbers(found.limits)} in {USD_NAME}, none in the URDF")
    elif bounded:
        scale = length if joint.type == "prismatic" else 1.0
        if not (
            _close(found.limits[0], joint.lower, scale)
            and _close(found.limits[1], joint.upper, scale)
        ):
            unit = "m" if joint.type == "prismatic" else "rad"
            limits = (joint.lower, joint.upper)
            out.append(_differs(where, f"limits ({unit})", found.limits, limits))
    mimic = (
        None
        if joint.mimic is None
        else (joint.mimic.joint, joint.mimic.multiplier, joint.mimic.offset)
    )
    if found.mimic != mimic:
        out.append(f"{where}: mimic coupling {found.mimic} in {USD_NAME}, {mimic} in the URDF")
    return out


def _structure_problems(obj: ArticulatedObject, read: UsdObject) -> list[str]:
    out = []
    units = {"metersPerUnit": 1.0, "kilogramsPerUnit": 1.0, "upAxis": "Z"}
    for key, value in units.items():
        if read.units[key] != value:
            out.append(f"stage: {key} is {read.units[key]!r}, not {value!r}")
    root = read.joints.get(ROOT_JOINT)
    if root is None or root.type != "fixed" or (root.body0, root.body1) != (None, obj.root):
        out.append(f"joint {ROOT_JOINT}: no fixed joint from the world to link {obj.root}")
    if read.roots != [ROOT_JOINT]:
        out.append(f"stage: articulation roots {read.roots}, expected [{ROOT_JOINT!r}]")
    names = {j.name for j in obj.joints} | {ROOT_JOINT}
    out += [f"joint {n}: a joint not in the URDF" for n in sorted(set(read.joints) - names)]
    return out


def _rest_errors(obj: ArticulatedObject, read: UsdObject) -> list[tuple[str, float]]:
    """(link, largest difference of its USD rest poses from ours) for every link: chained
    through the joint frames from the world, and as its Xform places it."""
    ours = obj.link_poses()
    chained: dict[str, np.ndarray] = {}
    root = read.joints.get(ROOT_JOINT)
    if root is not None:
        chained[obj.root] = root.local0 @ invert(root.local1)
    for joint in obj.joints_topological:
        found = read.joints.get(joint.name)
        if found is not None and joint.parent in chained:
            chained[joint.child] = chained[joint.parent] @ found.local0 @ invert(found.local1)
    out = []
    for link in obj.links:
        errors = [math.inf]
        if link.name in chained and link.name in read.bodies:
            pose = ours[link.name]
            errors = [
                float(np.abs(chained[link.name] - pose)[:3].max()),
                float(np.abs(read.bodies[link.name].pose - pose)[:3].max()),
            ]
        out.append((f"link {link.name}", max(errors)))
    return out


# --------------------------------------------------------------------------- the checks
def _site(error, stage) -> str:
    """The link or joint a validation error is about ("link base", "joint joint_0"), else the
    file."""
    root = stage.GetDefaultPrim().GetPath()
    for site in error.GetSites():
        path = site.GetPrim().GetPath() if site.IsPrim() else site.GetProperty().GetPrimPath()
        names = str(path.MakeRelativePath(root)).split("/") if path.HasPrefix(root) else []
        if len(names) >= 2 and names[0] == JOINTS:
            return f"joint {names[1]}"
        if names and names[0] not in (".", JOINTS):
            return f"link {names[0]}"
    return f"file {USD_NAME}"


def compliance_results(path: Path) -> list[CheckResult]:
    """`simulator.usd.compliance` and `.compliance_warning`: usdchecker's rules (see the module
    docstring), one failed result per error or warning, on the link or joint it names."""
    from pxr import Usd, UsdValidation

    registry = UsdValidation.ValidationRegistry()
    names = [
        m.name
        for m in registry.GetAllValidatorMetadata()
        if USDZ_KEYWORD not in m.GetKeywords() and m.name != ROOT_PACKAGE_VALIDATOR
    ]
    context = UsdValidation.ValidationContext(registry.GetOrLoadValidatorsByName(names))
    stage = Usd.Stage.Open(str(path))
    rules = f"usdchecker's {len(names)} rules"
    reported = context.Validate(stage)
    out = []
    for check_id, severity, kind in (
        ("simulator.usd.compliance", "error", UsdValidation.ValidationErrorType.Error),
        ("simulator.usd.compliance_warning", "warning", UsdValidation.ValidationErrorType.Warn),
    ):
        found = [e for e in reported if e.GetType() == kind]
        out += [
            single(
                check_id,
                severity,
                False,
                f"{_site(e, stage)}: {e.GetIdentifier()}: {e.GetMessage()}",
                element=_site(e, stage),
            )
            for e in found
        ] or [single(check_id, severity, True, f"{USD_NAME} passes {rules} ({severity}s)")]
    return out


def _by_element(check_id: str, problems: list[str], passed_message: str) -> list[CheckResult]:
    """One failed result per problem ("<element>: <what>"), or one passed result."""
    failed = [
        single(check_id, "error", False, problem, element=problem.split(": ", 1)[0])
        for problem in problems
    ]
    return failed or [single(check_id, "error", True, passed_message)]


@cache
def load_usd() -> None:
    """Load what writing and reading back a USD use (usd-core's libraries, plugins, schemas and
    validators) by writing and checking a two-link object in a temporary folder, once per
    process: about 1.1 GiB of address space, little of it resident, which the first object of a
    worker process would otherwise be charged under its memory limit (`limits.memory`); the
    build and `arena validate` call it before an object's limits apply."""
    if not installed():
        return
    box = Geometry("box", size=(0.1, 0.1, 0.1), name="base_collision_0")
    inertial = Inertial(1.0, np.zeros(3), np.eye(3))
    joint = Joint("joint_0", "revolute", "base", "link_0", lower=0.0, upper=1.0)
    obj = ArticulatedObject(
        "load_usd", (Link("base", collisions=(box,), inertial=inertial), Link("link_0")), (joint,)
    )
    with tempfile.TemporaryDirectory(prefix="arena-usd-") as folder:
        path = write_usd(obj, Path(folder))
        read_usd(path)
        compliance_results(path)


def run(ctx: Context) -> list[CheckResult]:
    from verify.checks.simulator import printed_check, printed_output

    if not installed():
        message = "USD: the `usd-core` package is not installed; its checks were not run"
        return [single("simulator.skipped", "info", False, message, element=LOADER)]
    path = ctx.folder / USD_NAME
    if not path.is_file():
        message = f"{USD_NAME} was not written"
        return [single("simulator.load.usd", "error", False, message, element=f"file {USD_NAME}")]
    obj = split_helical(ctx.reread)
    try:
        with printed_output() as printed:
            read = read_usd(path)
            compliance = compliance_results(path)
    except Exception as exc:  # a file the reader refuses is the finding
        message = f"usd-core cannot read {USD_NAME}: {type(exc).__name__}: {exc}"
        return [single("simulator.load.usd", "error", False, message, element=f"file {USD_NAME}")]
    out = [single("simulator.load.usd", "error", True, f"usd-core reads {USD_NAME}")]
    if printed:
        out.append(printed_check("usd", "usd-core", path, "\n".join(printed)))
    length = reach(obj)
    out += _by_element(
        "simulator.usd.links",
        _link_problems(obj, read, length),
        "every link is a rigid body with the URDF's mass, centre of mass, inertia and shapes",
    )
    joint_problems = _structure_problems(obj, read)
    for joint in obj.joints:
        joint_problems += _joint_problems(joint, read.joints.get(joint.name), length)
    out += _by_element(
        "simulator.usd.joints",
        joint_problems,
        "every joint has the URDF's type, links, origin, axis, limits and coupling",
    )
    tolerance = TOLERANCE * length
    out += aggregate(
        "simulator.usd.rest_pose",
        "error",
        _rest_errors(obj, read),
        tolerance,
        ok=lambda value, threshold: value <= threshold,
        describe=lambda element, value: (
            f"{element}: its rest pose in {USD_NAME} (through the joint frames, or as placed) "
            f"is {value:.3g} from the URDF's (metres and rotation-matrix entries)"
        ),
        passed_message=(
            f"every link's rest pose in {USD_NAME}, through the joint frames and as placed, is "
            "the URDF's (metres and rotation-matrix entries)"
        ),
    )
    return out + compliance
