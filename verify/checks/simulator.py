"""Simulator load: the normalized URDF compiles in MuJoCo (the `mjcf` extra) and MuJoCo's forward
kinematics of every link matches ours at the lower and at the upper limits within 1e-6.

The file is compiled from a copy of its text (nothing is written) with a `<mujoco><compiler>`
block keeping every link a body (`fusestatic="false"`), visuals kept, mesh paths as written
(`strippath="false"`, `meshdir` = the object folder), inertias from the file only
(`inertiafromgeom="false"`) and tiny mass bounds so that massless moving links (reported by
`inertia.missing`) do not stop the kinematic comparison. Geometry names are removed from the copy
(MuJoCo prints a warning for each repeated name) and equal lower and upper limits are removed
(MuJoCo ignores them with a printed warning; `metric.motion` reports such joints), geoms do not
collide (MuJoCo cannot build the collision hull of a flat mesh, common in PartNet), and meshes
with fewer than 4 vertices, which MuJoCo refuses and `geometry.mesh_degenerate` reports, are
left out. Mesh inertia is computed as a shell (MuJoCo refuses the volume of an open or flat
mesh; the file's own inertials are the ones used). MuJoCo's warnings (e.g. OBJ texture
coordinates it discards) are quoted in the message.

Configurations: every joint that is not a mimic follower at its lower limit, then at its upper
limit (unbounded joints at -1 and +1); followers take the values their couplings give; helical
joints are compared as written, a rotational joint and a prismatic mimic follower.
"""

from __future__ import annotations

import math

import numpy as np
from lxml import etree

from normalize.helical import split_helical
from normalize.mujoco_warnings import captured
from normalize.safe_xml import parse_xml
from verify.checks import Context, single
from verify.report import CheckResult

FK_TOLERANCE = 1e-6
UNBOUNDED_VALUE = 1.0
COMPILER = {
    "fusestatic": "false",
    "discardvisual": "false",
    "strippath": "false",
    "inertiafromgeom": "false",
    "boundmass": "1e-9",
    "boundinertia": "1e-12",
}


def mujoco_text(urdf_path, folder, skip_meshes: set[str]) -> bytes:
    """The URDF text MuJoCo compiles (see the module docstring)."""
    root = parse_xml(urdf_path)
    for limit in root.iter("limit"):
        if limit.get("lower") is not None and limit.get("lower") == limit.get("upper"):
            del limit.attrib["lower"], limit.attrib["upper"]  # MuJoCo ignores them, noisily
    for node in root.iter("visual", "collision"):
        node.attrib.pop("name", None)
        mesh = node.find("geometry/mesh")
        if mesh is not None and mesh.get("filename") in skip_meshes:
            node.getparent().remove(node)
    block = root.find("mujoco")  # the writer's own hint, if any: extend it (MuJoCo takes one)
    if block is None:
        block = etree.SubElement(root, "mujoco")
    compiler = block.find("compiler")
    if compiler is None:
        compiler = etree.SubElement(block, "compiler")
    compiler.attrib.update({"meshdir": f"{folder}/", **COMPILER})
    return etree.tostring(root)


def configurations(obj) -> dict[str, dict[str, float]]:
    """{'lower': q, 'upper': q} over the joints that are not mimic followers."""
    out = {}
    for label, sign in (("lower", -1.0), ("upper", 1.0)):
        q = {}
        for joint in obj.joints:
            if not joint.moving or joint.mimic is not None:
                continue
            value = joint.lower if sign < 0 else joint.upper
            q[joint.name] = value if math.isfinite(value) else sign * UNBOUNDED_VALUE
        out[label] = q
    return out


def run(ctx: Context) -> list[CheckResult]:
    try:
        import mujoco
    except ImportError:
        return [
            single(
                "simulator.available",
                "info",
                True,
                "MuJoCo (the `mjcf` extra) is not installed: simulator checks skipped",
            )
        ]
    skip = ctx.notes.get("few_vertices", set())
    text = mujoco_text(ctx.result.urdf_path, ctx.folder, skip)
    try:
        with captured(mujoco) as caught:
            spec = mujoco.MjSpec.from_string(text.decode("utf-8"))
            for mesh in spec.meshes:
                mesh.inertia = mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL
            for geom in spec.geoms:
                geom.contype = 0
                geom.conaffinity = 0
            model = spec.compile()
    except Exception as exc:  # MuJoCo reports every compile problem as an exception
        return [
            single(
                "simulator.compile",
                "error",
                False,
                f"MuJoCo cannot compile the normalized URDF: {str(exc).strip()}",
                element=f"file {ctx.result.urdf_path.name}",
            )
        ]
    note = f"; left out {len(skip)} mesh(es) with fewer than 4 vertices" if skip else ""
    if caught:
        shown = "; ".join(caught[:3])
        more = f" (and {len(caught) - 3} more)" if len(caught) > 3 else ""
        note += f"; MuJoCo warned: {shown}{more}"
    out = [
        single(
            "simulator.compile",
            "error",
            True,
            f"MuJoCo compiles it: {model.nbody - 1} bodies, {model.njnt} joints{note}",
            value=model.njnt,
        )
    ]
    out.append(_kinematics(mujoco, model, split_helical(ctx.reread)))
    return out


def _kinematics(mujoco, model, obj) -> CheckResult:
    check_id = "simulator.kinematics"
    data = mujoco.MjData(model)
    body, joint = mujoco.mjtObj.mjOBJ_BODY, mujoco.mjtObj.mjOBJ_JOINT
    bodies = {link.name: mujoco.mj_name2id(model, body, link.name) for link in obj.links}
    joints = {j.name: mujoco.mj_name2id(model, joint, j.name) for j in obj.moving_joints}
    for kind, ids, message in (
        ("link", bodies, "MuJoCo has no body for this link"),
        ("joint", joints, "MuJoCo has no joint of this name"),
    ):
        absent = next((name for name, index in ids.items() if index < 0), None)
        if absent is not None:
            return single(check_id, "error", False, message, element=f"{kind} {absent}")
    addresses = {name: model.jnt_qposadr[index] for name, index in joints.items()}
    worst, where = 0.0, None
    for label, q in configurations(obj).items():
        coords = obj.resolve_configuration(q)
        data.qpos[:] = model.qpos0
        for name, address in addresses.items():
            data.qpos[address] = coords[name]
        mujoco.mj_kinematics(model, data)
        ours = obj.link_poses(coords)
        for name, body in bodies.items():
            position = float(np.abs(data.xpos[body] - ours[name][:3, 3]).max())
            rotation = float(np.abs(data.xmat[body].reshape(3, 3) - ours[name][:3, :3]).max())
            error = max(position, rotation)
            if error > worst:
                worst, where = error, (label, name)
    passed = worst <= FK_TOLERANCE
    at = f" (worst: link {where[1]} at the {where[0]} limits)" if where else ""
    return single(
        check_id,
        "error",
        passed,
        f"largest difference between MuJoCo's and our link poses over the lower and upper "
        f"limits: {worst:.3g} (metres, and rotation-matrix entries){at}",
        value=worst,
        threshold=FK_TOLERANCE,
        element=f"link {where[1]}" if where and not passed else None,
    )
