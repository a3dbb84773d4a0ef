"""MuJoCo itself: importing it, compiling a file (joint axes kept safe), the names of the
compiled bodies and joints, and the axes MuJoCo normalized."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from normalize.changes import Change
from normalize.errors import AssetError
from normalize.model import AXIS_UNIT_TOLERANCE, direction
from normalize.mujoco_warnings import captured


def _mj():
    import mujoco

    return mujoco


def mujoco_names(model) -> tuple[list[str], list[str]]:
    """Link names for MuJoCo bodies (body 0 is "world"; unnamed bodies "body<id>") and joint
    names for MuJoCo joints (unnamed: "<body>__joint<k>")."""
    taken = {model.body(i).name for i in range(model.nbody)}
    bodies = []
    for i in range(model.nbody):
        name = "world" if i == 0 else model.body(i).name
        if not name:
            name = f"body{i}"
            while name in taken:
                name += "_"
            taken.add(name)
        bodies.append(name)
    joints = []
    for j in range(model.njnt):
        name = model.joint(j).name
        if not name:
            body = int(model.jnt_bodyid[j])
            name = f"{bodies[body]}__joint{j - int(model.body_jntadr[body])}"
        joints.append(name)
    return bodies, joints


def compile_mjcf(path: Path, warnings: list[str] | None = None):
    """(spec, model): MuJoCo's parsed and compiled model of `path`; MuJoCo's errors become
    ``mjcf.compile``, its warnings are appended to `warnings`."""
    try:
        mujoco = _mj()
    except ImportError as exc:  # the mujoco package is an optional dependency
        raise AssetError(
            "the mujoco package is not installed (pip install '.[mjcf]')",
            code="mjcf.unavailable",
            stage="parse",
            path=str(path),
        ) from exc
    try:
        with captured(mujoco) as caught:
            spec = mujoco.MjSpec.from_file(str(path))
            model = _compile_with_safe_axes(spec)
    except ValueError as exc:
        raise AssetError(
            f"MuJoCo cannot compile the model: {exc}",
            code="mjcf.compile",
            stage="parse",
            path=str(path),
        ) from exc
    if warnings is not None:
        warnings.extend(caught)
    return spec, model


def _compile_with_safe_axes(spec):
    """`spec.compile()`, with every joint axis whose squared length would overflow (1e300 1e300
    0) or underflow in MuJoCo's normalization, which would leave the zero vector, given to it at
    unit length; the spec keeps the file's values (`_axis_changes` records them)."""
    scaled = []
    for joint in spec.joints:
        found = direction(np.array(joint.axis))
        if found is not None and not 1e-150 <= found[1] <= 1e150:
            scaled.append((joint, np.array(joint.axis)))
            joint.axis = found[0]
    model = spec.compile()
    for joint, axis in scaled:
        joint.axis = axis
    return model


def _axis_changes(spec, joint_names) -> list[Change]:
    """MuJoCo normalizes joint axes silently; record the ones the file gave at another length."""
    mj = _mj()
    no_axis = (mj.mjtJoint.mjJNT_FREE, mj.mjtJoint.mjJNT_BALL)
    changes = []
    for joint in spec.joints:
        found = direction(np.array(joint.axis))
        norm = 0.0 if found is None else found[1]
        if joint.type in no_axis or abs(norm - 1.0) <= AXIS_UNIT_TOLERANCE:
            continue
        name = joint_names[joint.id]
        changes.append(
            Change(
                "axis.normalized",
                f"joint {name} axis {list(map(float, joint.axis))} has length {norm:.12g}; "
                "normalized (as MuJoCo does)",
                element=f"joint {name}",
            )
        )
    return changes
