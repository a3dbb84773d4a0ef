"""Joints of the compiled bodies: chains through massless links for several joints per body,
ball decomposition, and free joints of top-level bodies fixed or excluded."""

from __future__ import annotations

import math

import numpy as np

from normalize.adapters.mjcf.build import _Build, _translation
from normalize.adapters.mjcf.compile import _mj
from normalize.changes import Change
from normalize.errors import AssetError
from normalize.model import Joint, Link
from normalize.multidof import decompose_joint


def _subtree(model, body: int) -> list[int]:
    return [i for i in range(model.nbody) if _is_descendant(model, i, body)]


def _is_descendant(model, i: int, ancestor: int) -> bool:
    while i != ancestor and i != 0:
        i = int(model.body_parentid[i])
    return i == ancestor


def _has_geometry(model, bodies) -> bool:
    plane = _mj().mjtGeom.mjGEOM_PLANE
    return any(
        int(model.geom_type[g]) != plane
        for b in bodies
        for g in range(model.body_geomadr[b], model.body_geomadr[b] + model.body_geomnum[b])
    )


def _body_joints(model, body, parent_link, base, link_name, joint_names, build: _Build):
    """Joints from `parent_link` to the link of `body` (a chain through massless links when
    the body has several joints); returns the body's anchor (the point of the body frame where
    its link frame sits)."""
    mj = _mj()
    start, count = int(model.body_jntadr[body]), int(model.body_jntnum[body])
    if count == 0:
        build.joints.append(Joint(f"{link_name}__fixed", "fixed", parent_link, link_name, base))
        return np.zeros(3)
    anchor = np.zeros(3)
    previous = parent_link
    for k, j in enumerate(range(start, start + count)):
        name = joint_names[j]
        jtype = int(model.jnt_type[j])
        child = link_name if k == count - 1 else f"{link_name}__{name}"
        point = anchor if jtype == mj.mjtJoint.mjJNT_SLIDE else np.array(model.jnt_pos[j])
        origin = (base if k == 0 else np.eye(4)) @ _translation(point - anchor)
        anchor = point
        axis = np.array(model.jnt_axis[j], dtype=float)
        limited = bool(model.jnt_limited[j])
        if jtype == mj.mjtJoint.mjJNT_BALL:
            if limited:
                raise AssetError(
                    f"ball joint {name} has a cone limit ({math.degrees(model.jnt_range[j][1]):g}"
                    " degrees), which has no exact equivalent as three one-DOF joints",
                    code="joint.unsupported",
                    stage="model",
                    element=f"joint {name}",
                )
            links, joints, change = decompose_joint(
                "ball", name=name, parent=previous, child=child, origin=origin
            )
            build.links.extend(links)
            build.joints.extend(joints)
            build.changes.append(change)
        elif jtype in (mj.mjtJoint.mjJNT_HINGE, mj.mjtJoint.mjJNT_SLIDE):
            ref = float(model.qpos0[model.jnt_qposadr[j]])
            revolute = jtype == mj.mjtJoint.mjJNT_HINGE
            if limited:
                lower, upper = (float(v) - ref for v in model.jnt_range[j])
                kind = "revolute" if revolute else "prismatic"
            else:
                lower, upper = -math.inf, math.inf
                kind = "continuous" if revolute else "prismatic"
            if ref != 0.0:
                build.changes.append(
                    Change(
                        "mjcf.joint_ref",
                        f"joint {name} has ref {ref:.12g}: its coordinate is measured from the "
                        "reference configuration (qpos - ref), limits shifted accordingly",
                        element=f"joint {name}",
                    )
                )
            build.joints.append(
                Joint(name, kind, previous, child, origin, axis, lower=lower, upper=upper)
            )
        else:
            raise AssetError(
                f"free joint {name} in body {link_name}, which is not a top-level body: it sets "
                "the body's world pose directly and has no tree equivalent",
                code="joint.unsupported",
                stage="model",
                element=f"joint {name}",
            )
        if child != link_name:
            build.links.append(Link(child))
        previous = child
    return anchor


def _free_bodies(model, body_names, build: _Build) -> tuple[set[int], set[int]]:
    """(top-level bodies whose free joint becomes a fixed joint, bodies excluded)."""
    mj = _mj()
    fixed, excluded = set(), set()
    for body in range(1, model.nbody):
        start, count = int(model.body_jntadr[body]), int(model.body_jntnum[body])
        if count == 0 or int(model.jnt_type[start]) != mj.mjtJoint.mjJNT_FREE:
            continue
        if int(model.body_parentid[body]) != 0:
            continue  # refused in _body_joints
        name = body_names[body]
        if count > 1:
            raise AssetError(
                f"body {name} has a free joint and {count - 1} more joints",
                code="joint.unsupported",
                stage="model",
                element=f"body {name}",
            )
        subtree = _subtree(model, body)
        if not _has_geometry(model, subtree):
            excluded.update(subtree)
            build.changes.append(
                Change(
                    "mjcf.body_excluded",
                    f"free-floating body {name} carries no geometry (e.g. a camera rig next to "
                    f"the object); excluded with its {len(subtree) - 1} descendants",
                    element=f"body {name}",
                )
            )
        else:
            fixed.add(body)
            build.changes.append(
                Change(
                    "mjcf.free_joint_fixed",
                    f"free joint of top-level body {name} dropped: the body is fixed to the world "
                    "at its initial pose (qpos0)",
                    element=f"body {name}",
                )
            )
    return fixed, excluded
