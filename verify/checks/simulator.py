"""Simulator checks on the shipped files exactly as written: the URDF (and the MJCF beside it)
load in MuJoCo, the URDF in PyBullet (its collision shapes), yourdfpy and SAPIEN, without a
printed warning, and every loader puts every link where we do.

Nothing is modified before loading: what MuJoCo needs (every link a body, inertials from the
file, mass bounds for massless frame links, collision meshes it can hull, flat visual meshes
with a volume) is in the written files themselves (normalize/urdf_writer.py). What a loader
prints while loading, from Python or from C (captured at the file-descriptor level), is quoted;
any of it fails `simulator.printed` for that loader. A loader that is not installed is reported
as skipped (`simulator.skipped`, info, not passed), never as passed.

Configurations (`configurations`): the rest pose, every driving joint (not a mimic follower) at
its lower limit, every one at its upper limit (all at once: each joint's transform is compared
at both its limits, and an error in one joint cannot hide behind another's but by exact
cancellation; one configuration per limit instead of two per joint, 8 instead of 237 on a
115-key keyboard), and five seeded random configurations within the limits; unbounded
rotations range over a few turns (+-UNBOUNDED_TURN rad), unbounded translations over +-1 m.
Mimic followers take the values their couplings give: MuJoCo and PyBullet are given every
joint's value, yourdfpy only the drivers (it applies the couplings itself). Helical joints are
compared as written, a rotational joint and a prismatic follower.
The poses compared are link frames in the world (the base frame): positions in metres and
rotation-matrix entries, within 1e-6 (`simulator.agreement`: yourdfpy, MuJoCo and PyBullet on
the URDF and MuJoCo on the MJCF; `simulator.kinematics`: MuJoCo on the URDF alone). The MJCF
holds its numbers exactly when MuJoCo's XML writer could write 17 significant digits
(normalize/mjcf_writer.py); a MuJoCo without that setting writes 6, and the MJCF is then held
to 1e-5 on its own (`simulator.mjcf_kinematics`) instead of joining the agreement.

SAPIEN runs in a child process (verify/sapien_process.py: a crash there cannot end a worker),
physics only when the machine has no render device (collision geometry only, said in
`simulator.load.sapien`); it is stepped 10 times (`simulator.step.sapien`) and its link
poses, in the base frame, are held to MuJoCo's on the URDF (ours when MuJoCo did not load)
within 1e-5 (`simulator.sapien_agreement`): PhysX computes in single precision.
"""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path

import numpy as np

from normalize.helical import split_helical
from normalize.mjcf_writer import FULL_DIGITS, MJCF_NAME, xml_digits
from normalize.mujoco_warnings import captured
from verify.checks import Context, single
from verify.printed import printed_output
from verify.report import CheckResult

FK_TOLERANCE = 1e-6
#: An MJCF written with MuJoCo's default 6 significant digits (a MuJoCo without the precision
#: setting) is held to this on its own (`simulator.mjcf_kinematics`).
MJCF_6_DIGITS_TOLERANCE = 1e-5
#: SAPIEN (PhysX, single precision) against MuJoCo (`simulator.sapien_agreement`)
SAPIEN_TOLERANCE = 1e-5
RANDOM_CONFIGURATIONS = 5
SEED = 0
UNBOUNDED_TURN = 4.0 * math.pi + 0.5  # rad: a few turns
UNBOUNDED_TRANSLATION = 1.0  # m


# --------------------------------------------------------------------------- configurations
def _range(joint) -> tuple[float, float]:
    if math.isfinite(joint.lower):
        return joint.lower, joint.upper
    span = UNBOUNDED_TRANSLATION if joint.type == "prismatic" else UNBOUNDED_TURN
    return -span, span


def configurations(obj) -> list[tuple[str, dict[str, float]]]:
    """(label, driver values) of every configuration compared (see the module docstring)."""
    drivers = [j for j in obj.joints if j.moving and j.mimic is None]
    out: list[tuple[str, dict[str, float]]] = [("rest", {})]
    if drivers:
        for side, label in ((0, "lower"), (1, "upper")):
            limits = {j.name: _range(j)[side] for j in drivers}
            out.append((f"every driving joint at its {label} limit", limits))
    rng = np.random.default_rng(SEED)
    for i in range(RANDOM_CONFIGURATIONS):
        q = {j.name: float(rng.uniform(*_range(j))) for j in drivers}
        out.append((f"random configuration {i}", q))
    return out


# --------------------------------------------------------------------------- loaders
class MuJoCoPoses:
    """Link poses of a model MuJoCo loaded from a file (URDF or MJCF)."""

    def __init__(self, mujoco, model, links, joints):
        self.mujoco, self.model = mujoco, model
        self.data = mujoco.MjData(model)
        body, joint = mujoco.mjtObj.mjOBJ_BODY, mujoco.mjtObj.mjOBJ_JOINT
        self.bodies = {name: mujoco.mj_name2id(model, body, name) for name in links}
        ids = {name: mujoco.mj_name2id(model, joint, name) for name in joints}
        self.missing = [f"link {n}" for n, i in self.bodies.items() if i < 0]
        self.missing += [f"joint {n}" for n, i in ids.items() if i < 0]
        self.addresses = {n: model.jnt_qposadr[i] for n, i in ids.items() if i >= 0}

    def poses(self, coords: dict[str, float]) -> dict[str, np.ndarray]:
        self.data.qpos[:] = self.model.qpos0
        for name, address in self.addresses.items():
            self.data.qpos[address] = coords[name]
        self.mujoco.mj_kinematics(self.model, self.data)
        out = {}
        for name, body in self.bodies.items():
            pose = np.eye(4)
            pose[:3, :3] = self.data.xmat[body].reshape(3, 3)
            pose[:3, 3] = self.data.xpos[body]
            out[name] = pose
        return out


def _quat_pose(position, quaternion_xyzw) -> np.ndarray:
    x, y, z, w = quaternion_xyzw
    pose = np.eye(4)
    pose[:3, :3] = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ]
    pose[:3, 3] = position
    return pose


class BulletPoses:
    """Link frames of a URDF PyBullet loaded (`loadURDF`, fixed base at the origin)."""

    def __init__(self, pybullet, client: int, body: int, root: str):
        self.p, self.client, self.body, self.root = pybullet, client, body, root
        self.joints, self.links = {}, {}
        for index in range(pybullet.getNumJoints(body, physicsClientId=client)):
            info = pybullet.getJointInfo(body, index, physicsClientId=client)
            self.joints[info[1].decode()] = index
            self.links[info[12].decode()] = index
        dynamics = pybullet.getDynamicsInfo(body, -1, physicsClientId=client)
        self.base_inertial = _quat_pose(dynamics[3], dynamics[4])

    def poses(self, coords: dict[str, float]) -> dict[str, np.ndarray]:
        p, client = self.p, self.client
        for name, index in self.joints.items():
            p.resetJointState(self.body, index, coords.get(name, 0.0), physicsClientId=client)
        position, orientation = p.getBasePositionAndOrientation(self.body, physicsClientId=client)
        base = _quat_pose(position, orientation) @ np.linalg.inv(self.base_inertial)
        out = {self.root: base}
        for name, index in self.links.items():
            state = p.getLinkState(
                self.body, index, computeForwardKinematics=True, physicsClientId=client
            )
            out[name] = _quat_pose(state[4], state[5])
        return out


class YourdfpyPoses:
    """Link frames yourdfpy computes (drivers given, mimic followers from its couplings)."""

    def __init__(self, urdf):
        self.urdf = urdf

    def poses(self, coords: dict[str, float]) -> dict[str, np.ndarray]:
        names = self.urdf.actuated_joint_names
        self.urdf.update_cfg(np.array([coords[name] for name in names], dtype=float))
        base = self.urdf.base_link
        return {
            name: np.asarray(self.urdf.get_transform(name, base), dtype=float)
            for name in self.urdf.link_map
        }


class SapienPoses:
    """Link frames SAPIEN computes in its child process (verify/sapien_process.py). failure:
    why the child stopped answering (its poses are then missing)."""

    def __init__(self, process, loaded, links: list[str], joints: list[str]):
        self.process, self.loaded, self.failure = process, loaded, None
        self.missing = [f"link {n}" for n in links if n not in loaded.links]
        self.missing += [f"joint {n}" for n in joints if n not in loaded.joints]

    def poses(self, coords: dict[str, float]) -> dict[str, np.ndarray]:
        from verify.sapien_process import SapienFailed

        if self.failure is not None:
            return {}
        try:
            return self.process.poses(coords)
        except SapienFailed as exc:
            self.failure = str(exc)
            return {}


_BULLET: dict[str, int] = {}


def _bullet_client(pybullet) -> int:
    """One PyBullet client per process, reset for each load. Its file cache is off: it keeps
    every mesh file it ever loaded (about 3 MB per realistic object, never given back). Loads
    skip visual shapes (they serve PyBullet's renderer only; MuJoCo and yourdfpy read the
    visual meshes): 38 instead of 65 ms per realistic object without the cache."""
    client = _BULLET.get("client")
    if client is None or not pybullet.isConnected(client):
        client = pybullet.connect(pybullet.DIRECT)
        _BULLET["client"] = client
    pybullet.resetSimulation(physicsClientId=client)
    pybullet.setPhysicsEngineParameter(enableFileCaching=0, physicsClientId=client)
    return client


def forget_loaded_assets() -> None:
    """Empty MuJoCo's process-wide asset cache (up to 500 MB by default): one object's loads
    and previews share it; the next object has other meshes."""
    mujoco = sys.modules.get("mujoco")
    if mujoco is not None:
        mujoco.mj_clearCache(mujoco.mj_getCache())


def _load(loader: str, path: Path, obj):
    """(poses object or None, error message or None, printed text) of one loader."""
    import importlib

    if loader == "sapien":
        return _load_sapien(path, obj)
    printed: list[str] = []
    with printed_output():  # PyBullet prints its build time on import: not about the file
        module = importlib.import_module(LOADERS[loader][1])
    try:
        with printed_output() as printed:
            if loader in ("mujoco", "mujoco_mjcf"):
                mujoco = module
                with captured(mujoco) as warned:
                    model = mujoco.MjModel.from_xml_path(str(path))
                printed.extend(warned)
                joints = [j.name for j in obj.joints if j.moving]
                poses = MuJoCoPoses(mujoco, model, [link.name for link in obj.links], joints)
            elif loader == "pybullet":
                pybullet = module
                client = _bullet_client(pybullet)
                body = pybullet.loadURDF(
                    str(path),
                    useFixedBase=True,
                    flags=pybullet.URDF_IGNORE_VISUAL_SHAPES,
                    physicsClientId=client,
                )
                poses = BulletPoses(pybullet, client, body, obj.root)
            else:
                yourdfpy = module
                with warnings.catch_warnings(record=True) as raised:
                    warnings.simplefilter("always")
                    warnings.filterwarnings("ignore", category=DeprecationWarning)
                    urdf = yourdfpy.URDF.load(str(path), load_meshes=False)
                printed.extend(str(w.message) for w in raised)
                poses = YourdfpyPoses(urdf)
    except Exception as exc:  # a loader refusing the file is the finding
        return None, f"{type(exc).__name__}: {str(exc).strip()}", "\n".join(printed)
    return poses, None, "\n".join(printed)


def _load_sapien(path: Path, obj):
    """`_load` for SAPIEN: its package is imported in the child process only."""
    from verify.sapien_process import SapienFailed, shared

    process = shared()
    try:
        loaded = process.load(path)
    except SapienFailed as exc:
        return None, str(exc), ""
    if loaded.error is not None:
        return None, loaded.error, loaded.printed
    links = [link.name for link in obj.links]
    joints = [j.name for j in obj.joints if j.moving]
    return SapienPoses(process, loaded, links, joints), None, loaded.printed


#: PyBullet's shared-memory state (MAX_DEGREE_OF_FREEDOM) holds fewer degrees of freedom: with
#: this many moving joints getBasePositionAndOrientation fails on any file
PYBULLET_MAX_JOINTS = 128
#: SAPIEN's PhysX articulations count links in 8 bits: stepping one of 256 links crashes the
#: process, and past that the degrees of freedom wrap (999 joints give 231)
SAPIEN_MAX_LINKS = 255
LOADERS = {
    "mujoco": ("MuJoCo (URDF)", "mujoco"),
    "mujoco_mjcf": ("MuJoCo (MJCF)", "mujoco"),
    "pybullet": ("PyBullet", "pybullet"),
    "yourdfpy": ("yourdfpy", "yourdfpy"),
    "sapien": ("SAPIEN", "sapien"),
}


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


# --------------------------------------------------------------------------- the checks
def run(ctx: Context) -> list[CheckResult]:
    urdf = Path(ctx.result.urdf_path)
    mjcf = urdf.parent / MJCF_NAME
    obj = split_helical(ctx.reread)
    out: list[CheckResult] = []
    noisy: list[CheckResult] = []
    loaded: dict[str, object] = {}
    for loader, (label, module) in LOADERS.items():
        if not _installed(module):
            out.append(
                single(
                    "simulator.skipped",
                    "info",
                    False,
                    f"{label}: the `{module}` package is not installed; its checks were not run",
                    element=f"loader {loader}",
                )
            )
            continue
        moving = sum(j.moving for j in obj.joints)
        if loader == "pybullet" and moving >= PYBULLET_MAX_JOINTS:
            out.append(
                single(
                    "simulator.skipped",
                    "info",
                    False,
                    f"{label}: {moving} moving joints, and PyBullet's state queries fail from "
                    f"{PYBULLET_MAX_JOINTS} on; its checks were not run",
                    element=f"loader {loader}",
                )
            )
            continue
        if loader == "sapien" and len(obj.links) > SAPIEN_MAX_LINKS:
            out.append(
                single(
                    "simulator.skipped",
                    "info",
                    False,
                    f"{label}: {len(obj.links)} links, and SAPIEN's articulations hold at most "
                    f"{SAPIEN_MAX_LINKS}; its checks were not run",
                    element=f"loader {loader}",
                )
            )
            continue
        path = mjcf if loader == "mujoco_mjcf" else urdf
        if loader == "mujoco_mjcf" and not path.is_file():
            continue  # structure checks report a missing MJCF
        poses, error, printed = _load(loader, path, obj)
        check_id = "simulator.compile" if loader == "mujoco" else f"simulator.load.{loader}"
        if error is not None:
            out.append(
                single(
                    check_id,
                    "error",
                    False,
                    f"{label} cannot load {path.name}: {error}",
                    element=f"file {path.name}",
                )
            )
            continue
        missing = getattr(poses, "missing", [])
        if missing:
            out.append(
                single(
                    check_id,
                    "error",
                    False,
                    f"{label} loaded {path.name} but has no {missing[0]}",
                    element=missing[0],
                )
            )
            continue
        if loader == "sapien":
            out += _sapien_loaded(path, poses.loaded)
        else:
            out.append(single(check_id, "error", True, f"{label} loads {path.name}"))
        if printed:
            noisy.append(printed_check(loader, label, path, printed))
        loaded[loader] = poses
        if loader == "mujoco":
            ctx.notes["mujoco_model"] = poses.model  # the mechanism checks collide it
    if loaded and not noisy:
        names = ", ".join(LOADERS[loader][0] for loader in loaded)
        noisy.append(
            single("simulator.printed", "warning", True, f"{names} printed nothing", value=0)
        )
    return out + noisy + _agreement(obj, loaded)


def _sapien_loaded(path: Path, loaded) -> list[CheckResult]:
    """`simulator.load.sapien` (the mode said; a collision shape SAPIEN skipped fails it) and
    `simulator.step.sapien`."""
    from verify.sapien_process import STEPS

    mode = " (physics only, no render device: collision geometry loaded)"
    mode = mode if loaded.physics_only else ""
    load = single("simulator.load.sapien", "error", True, f"SAPIEN loads {path.name}{mode}")
    if loaded.dropped:
        skipped = ", ".join(f"{count} of link {link}" for link, count in loaded.dropped.items())
        load = single(
            "simulator.load.sapien",
            "error",
            False,
            f"SAPIEN loads {path.name} but skips the collision shapes it could not cook: "
            f"{skipped}{mode}",
            element=f"link {next(iter(loaded.dropped))}",
        )
    unstable = loaded.unstable
    step = single(
        "simulator.step.sapien",
        "error",
        unstable is None,
        f"SAPIEN steps {path.name} {STEPS} times from rest: "
        + ("every link pose finite" if unstable is None else f"link {unstable} is not finite"),
        element=None if unstable is None else f"link {unstable}",
    )
    return [load, step]


def printed_check(loader: str, label: str, path: Path, printed: str) -> CheckResult:
    lines = [line for line in printed.splitlines() if line.strip()]
    shown = "; ".join(lines[:3]) + (f" (and {len(lines) - 3} more lines)" if len(lines) > 3 else "")
    return single(
        "simulator.printed",
        "warning",
        False,
        f"{label} printed while loading {path.name}: {shown}",
        value=len(lines),
        threshold=0,
        element=f"loader {loader}",
    )


def _agreement(obj, loaded: dict[str, object]) -> list[CheckResult]:
    """`simulator.kinematics` (MuJoCo, URDF), `simulator.agreement` (every loader but SAPIEN)
    and `simulator.sapien_agreement` (SAPIEN against MuJoCo on the URDF, else against ours)."""
    if not loaded:
        return []
    worst = {loader: (0.0, None) for loader in loaded}
    for label, q in configurations(obj):
        coords = obj.resolve_configuration(q)
        ours = obj.link_poses(coords)
        seen = {}
        for loader, poses in loaded.items():  # MuJoCo before SAPIEN (LOADERS' order)
            theirs = seen[loader] = poses.poses(coords)
            reference = seen.get("mujoco", ours) if loader == "sapien" else ours
            for link in obj.links:
                pose = theirs.get(link.name)
                if pose is None:
                    worst[loader] = (math.inf, (label, link.name))
                    continue
                error = float(np.abs(pose - reference[link.name])[:3, :].max())
                if error > worst[loader][0]:
                    worst[loader] = (error, (label, link.name))
    out = []
    if "mujoco" in worst:
        error, where = worst["mujoco"]
        out.append(_pose_result("simulator.kinematics", "MuJoCo (URDF)", error, where))
    if "mujoco_mjcf" in worst and xml_digits(loaded["mujoco_mjcf"].mujoco) < FULL_DIGITS:
        error, where = worst.pop("mujoco_mjcf")
        out.append(
            _pose_result(
                "simulator.mjcf_kinematics",
                "MuJoCo (MJCF, 6 significant digits)",
                error,
                where,
                tolerance=MJCF_6_DIGITS_TOLERANCE,
            )
        )
    sapien = worst.pop("sapien", None)
    if worst:
        error, where, who = max(((e, w, name) for name, (e, w) in worst.items()), key=_first)
        names = ", ".join(LOADERS[loader][0] for loader in worst)
        out.append(_pose_result("simulator.agreement", names, error, where, who))
    if sapien is not None:
        error, where = sapien
        against = "MuJoCo's (URDF)" if "mujoco" in loaded else "ours"
        result = _pose_result(
            "simulator.sapien_agreement",
            "SAPIEN",
            error,
            where,
            tolerance=SAPIEN_TOLERANCE,
            against=against,
        )
        if loaded["sapien"].failure is not None:
            result.message += f"; SAPIEN stopped: {loaded['sapien'].failure}"
        out.append(result)
    return out


def _first(item):
    return item[0]


def _pose_result(
    check_id, names, error, where, who=None, tolerance=FK_TOLERANCE, against="ours"
) -> CheckResult:
    passed = error <= tolerance
    at = ""
    if where is not None:
        by = f" ({LOADERS[who][0]})" if who else ""
        at = f"; worst: link {where[1]} with {where[0]}{by}"
    return single(
        check_id,
        "error",
        passed,
        f"largest difference between the link poses of {names} and {against} over the rest "
        f"pose, every driving joint's limits and random configurations: {error:.3g} (metres "
        f"and rotation-matrix entries){at}",
        value=error,
        threshold=tolerance,
        element=None if passed or where is None else f"link {where[1]}",
    )
