"""Write a normalized object as MJCF, `object.xml` beside its `object.urdf`, with MuJoCo's own
model editing API (`mujoco.MjSpec`, the `mjcf` extra): nothing here writes XML by hand.

The model is the written object (meshes already under `meshes/`, helical joints split as in the
URDF): one body per link named as the link, nested along the joints; a hinge (revolute,
continuous) or slide (prismatic) joint per moving joint with its axis and, when bounded, its
range; mimic couplings as joint equality constraints (follower = offset + multiplier * driver);
the link's inertial (massless links get mass 0, raised to the compiler's `boundmass` like the
URDF's); visual geoms (group 1, no contacts, no mass) and collision geoms (group 3, which
MuJoCo's viewer hides by default, as MuJoCo Menagerie's models have them) with the URDF's
names, meshes as mesh assets with paths relative to the file. The compiler settings match the
URDF's `<mujoco>` block (radians, inertias from the file, mass bounds).

Numbers: MuJoCo's XML writer prints 6 significant digits by default (5e-6 m on a coordinate
of a few metres, 5e-7 on every axis and quaternion entry). MuJoCo itself raises that to 17
(every double read back exactly) for its own tests through the setting its library exports,
`_mjPRIVATE__set_xml_precision` (xml_numeric_format.h: `FullFloatPrecision`); `to_xml` is
called with it raised (`xml_digits` says whether it could be, per thread as MuJoCo keeps it,
restored afterwards), so the MJCF holds the URDF's numbers exactly. Where a MuJoCo lacks the
setting the file has 6 digits, which can tip a flat plate's principal moments (A + B = C) past
the triangle inequality MuJoCo enforces: there, where A + B - C is below `INERTIA_MARGIN` of C,
the MJCF's tensor gets that fraction of C added on its diagonal (the URDF keeps the exact one).
A revolute joint with equal limits is written unlimited: MuJoCo has no zero-length range (it
ignores such a URDF limit too).

`write_mjcf(obj, folder)` writes the file (`MjSpec.to_xml`, which compiles the spec, so MuJoCo
has checked it; verification then loads the written file, `simulator.load.mujoco_mjcf`); it
returns None when MuJoCo is not installed, and for an object with a link named `world`
(MuJoCo's world body; canonical objects are named base / link_i, so no release object is).
"""

from __future__ import annotations

import contextlib
import ctypes
import math
from functools import cache
from pathlib import Path

import numpy as np

from normalize.helical import split_helical
from normalize.model import ArticulatedObject, Geometry

MJCF_NAME = "object.xml"
WORLD = "world"
#: geom groups: visuals are shown by MuJoCo's viewer by default (groups 0-2), collision geoms not
VISUAL_GROUP, COLLISION_GROUP = 1, 3
BOUND_MASS = 1e-9
BOUND_INERTIA = 1e-12
INERTIA_MARGIN = 1e-5
FULL_DIGITS = 17  # significant digits that read every double back exactly
DEFAULT_DIGITS = 6


@cache
def _precision_setting(library: str):
    """(get, set) of MuJoCo's XML writer precision in `library`, or None when that MuJoCo does
    not export the integer setting (older versions took a printf format instead)."""
    try:
        lib = ctypes.CDLL(library)
        get, put = lib._mjPRIVATE__get_xml_precision, lib._mjPRIVATE__set_xml_precision
    except (OSError, AttributeError):
        return None
    get.restype, get.argtypes = ctypes.c_int, []
    put.restype, put.argtypes = None, [ctypes.c_int]
    return (get, put) if 1 <= get() <= FULL_DIGITS else None


def _setting(mujoco):
    folder = Path(mujoco.__file__).parent
    libraries = sorted(folder.glob("libmujoco.so*")) + sorted(folder.glob("libmujoco*.dylib"))
    libraries += sorted(folder.glob("mujoco.dll"))
    return _precision_setting(str(libraries[0])) if libraries else None


def xml_digits(mujoco) -> int:
    """Significant digits `write_mjcf` writes numbers with under this MuJoCo: 17 or 6."""
    return FULL_DIGITS if _setting(mujoco) is not None else DEFAULT_DIGITS


@contextlib.contextmanager
def _full_precision(mujoco):
    """MuJoCo's XML writer at 17 significant digits in this thread inside the block."""
    setting = _setting(mujoco)
    if setting is None:
        yield
        return
    get, put = setting
    before = get()
    put(FULL_DIGITS)
    try:
        yield
    finally:
        put(before)


def _writable_inertia(inertia: np.ndarray, digits: int) -> np.ndarray:
    """`inertia`, or with 6 digits it plus a margin on the diagonal when its principal moments
    are too close to the triangle inequality to survive rounding (see the module docstring)."""
    if digits >= FULL_DIGITS:
        return inertia
    moments = np.linalg.eigvalsh(inertia)
    largest = float(moments[2])
    if largest > 0 and moments[0] + moments[1] - largest < INERTIA_MARGIN * largest:
        return inertia + INERTIA_MARGIN * largest * np.eye(3)
    return inertia


def rotation_quat(rotation: np.ndarray, mujoco) -> np.ndarray:
    """MuJoCo's quaternion of a 3x3 rotation matrix."""
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(rotation, dtype=float).ravel())
    return quat


def add_body_tree(spec, obj: ArticulatedObject, mujoco) -> tuple[dict, dict]:
    """The bodies and joints of `obj` added to `spec`: a body per link named as the link, nested
    along the joints at their origins, and per moving joint a joint of its name and axis, a
    slide for a prismatic joint and a hinge for any other (split helical joints first to keep
    their pitch). (link name -> body, joint name -> joint); no inertials, geoms or limits."""
    bodies = {obj.root: spec.worldbody.add_body(name=obj.root)}
    joints = {}
    for joint in obj.joints_topological:
        body = bodies[joint.parent].add_body(name=joint.child)
        body.pos = joint.origin[:3, 3]
        body.quat = rotation_quat(joint.origin[:3, :3], mujoco)
        bodies[joint.child] = body
        if joint.moving:
            added = body.add_joint(name=joint.name, axis=joint.axis)
            slide = joint.type == "prismatic"
            added.type = mujoco.mjtJoint.mjJNT_SLIDE if slide else mujoco.mjtJoint.mjJNT_HINGE
            joints[joint.name] = added
    return bodies, joints


def _geom(body, g: Geometry, *, visual: bool, meshes: dict, spec, mujoco) -> None:
    kind = mujoco.mjtGeom
    geom = body.add_geom(name=g.name or "")
    geom.pos = g.origin[:3, 3]
    geom.quat = rotation_quat(g.origin[:3, :3], mujoco)
    if g.kind == "mesh":
        key = (g.filename, tuple(np.asarray(g.scale, dtype=float).tolist()))
        if key not in meshes:
            mesh = spec.add_mesh(name=f"mesh_{len(meshes)}", file=g.filename)
            mesh.scale = np.asarray(g.scale, dtype=float)
            meshes[key] = mesh.name
        geom.type = kind.mjGEOM_MESH
        geom.meshname = meshes[key]
    elif g.kind == "box":
        geom.type = kind.mjGEOM_BOX
        geom.size = np.asarray(g.size, dtype=float) / 2.0
    elif g.kind == "sphere":
        geom.type = kind.mjGEOM_SPHERE
        geom.size = [g.size[0], 0.0, 0.0]
    elif g.kind == "cylinder":
        geom.type = kind.mjGEOM_CYLINDER
        geom.size = [g.size[0], g.size[1] / 2.0, 0.0]
    else:
        raise ValueError(f"geometry kind {g.kind!r} must be a mesh before writing")
    if visual:
        geom.contype = 0
        geom.conaffinity = 0
        geom.group = VISUAL_GROUP
        geom.density = 0.0
    else:
        geom.group = COLLISION_GROUP


def object_spec(obj: ArticulatedObject, mujoco):
    """The MjSpec of a written object (see the module docstring)."""
    obj = split_helical(obj)
    spec = mujoco.MjSpec()
    spec.modelname = obj.name
    spec.compiler.degree = False
    spec.compiler.boundmass = BOUND_MASS
    spec.compiler.boundinertia = BOUND_INERTIA
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    bodies, joints = add_body_tree(spec, obj, mujoco)
    for joint in obj.moving_joints:  # their ranges and force limits
        added = joints[joint.name]
        bounded = math.isfinite(joint.lower) and joint.lower < joint.upper
        added.limited = mujoco.mjtLimited.mjLIMITED_TRUE if bounded else 0
        if bounded:
            added.range = [joint.lower, joint.upper]
        if joint.effort is not None:
            added.actfrclimited = mujoco.mjtLimited.mjLIMITED_TRUE
            added.actfrcrange = [-joint.effort, joint.effort]
    meshes: dict = {}
    for link in obj.links:
        body = bodies[link.name]
        body.explicitinertial = True
        inertial = link.inertial
        if inertial is not None:
            body.mass = inertial.mass
            body.ipos = inertial.com
            i = _writable_inertia(inertial.inertia, xml_digits(mujoco))
            body.fullinertia = [i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[0, 2], i[1, 2]]
        else:
            body.mass = 0.0
            body.inertia = [0.0, 0.0, 0.0]
        for g in link.visuals:
            _geom(body, g, visual=True, meshes=meshes, spec=spec, mujoco=mujoco)
        for g in link.collisions:
            _geom(body, g, visual=False, meshes=meshes, spec=spec, mujoco=mujoco)
    for joint in obj.joints:
        if joint.mimic is not None:
            coupling = spec.add_equality(name=f"{joint.name}__mimic")
            coupling.type = mujoco.mjtEq.mjEQ_JOINT
            coupling.objtype = mujoco.mjtObj.mjOBJ_JOINT
            coupling.name1 = joint.name
            coupling.name2 = joint.mimic.joint
            data = np.zeros(len(coupling.data))
            data[:2] = [joint.mimic.offset, joint.mimic.multiplier]
            coupling.data = data
    return spec


def write_mjcf(obj: ArticulatedObject, folder: Path) -> Path | None:
    """Write `folder/object.xml` for the written object `obj` (mesh filenames relative to
    `folder`); None when MuJoCo is not installed."""
    try:
        import mujoco
    except ImportError:
        return None
    if any(link.name == WORLD for link in obj.links):
        return None  # MuJoCo's name for its world body: only non-canonical objects use it
    folder = Path(folder)
    spec = object_spec(obj, mujoco)
    # to_xml compiles, reading the written meshes from their files: MuJoCo's asset cache then
    # holds them, processed, for the verification's loads of the same files.
    spec.modelfiledir = str(folder)
    path = folder / MJCF_NAME
    with _full_precision(mujoco):
        text = spec.to_xml()
    path.write_text(text, encoding="utf-8")
    return path
