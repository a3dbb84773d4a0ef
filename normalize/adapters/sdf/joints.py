"""Joints: axes and the frames they are expressed in, limits, actuation, screw pitch, multi-DOF
decomposition and mimics; the check that joints form a tree."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from normalize.adapters.sdf.elements import _child, _scoped, _text
from normalize.adapters.sdf.frames import MODEL_FRAME
from normalize.adapters.sdf.models import _JointSpec
from normalize.changes import Change
from normalize.errors import AssetError, ClosedLoopError
from normalize.model import Joint, Mimic, unit_axis
from normalize.multidof import decompose_joint

# SDFormat's default joint limits are +-1e16, meaning "no limit"; any bound this large or
# infinite is read as unbounded.
UNBOUNDED = 1e16
# The deprecated <thread_pitch> (rad/m) and <screw_thread_pitch> (m/rev) agree when they give
# the same pitch to this relative tolerance (files write a handful of digits of 2 pi).
PITCH_AGREEMENT = 1e-3


class _Joints:
    """The reader's joints (a base of `_SdfReader`)."""

    def axis(self, spec: _JointSpec, tag: str, element: str, required=True):
        """(unit axis in the joint frame, (lower, upper) with None for unbounded, axis node)."""
        node = _child(spec.node, tag)
        if node is None:
            if required:
                raise self.error(f"joint has no <{tag}>", "sdf.missing", element, spec.file)
            return None, (None, None), None
        xyz = _child(node, "xyz")
        vector = self.vector(
            xyz.text if xyz is not None else "0 0 1", 3, f"{tag} xyz", element, spec.file
        )
        vector = unit_axis(
            vector, what=tag, element=element, changes=self.changes, path=str(spec.file)
        )
        joint_frame = self.world_pose(spec.frame)
        expressed = self.axis_frame(spec, node, xyz, element)
        if expressed is not None:
            rotation = joint_frame[:3, :3].T @ self.world_pose(expressed)[:3, :3]
            vector = rotation @ vector
        limit = _child(node, "limit")
        bounds = (None, None)
        if limit is not None:
            bounds = tuple(
                self.bound(_text(limit, key), key, element, spec.file) for key in ("lower", "upper")
            )
        return vector, bounds, node

    def axis_frame(self, spec: _JointSpec, node, xyz, element) -> str | None:
        """The frame the axis is expressed in when it is not the joint frame."""
        model_frame = _scoped(spec.scope, MODEL_FRAME) if spec.scope else ""
        if spec.version < (1, 5):
            return model_frame
        if spec.version < (1, 7):
            flag = _text(node, "use_parent_model_frame", "false").lower()
            return model_frame if flag in ("true", "1") else None
        expressed = xyz.get("expressed_in") if xyz is not None else None
        if expressed:
            return self.frame_name(spec.scope, expressed, element, spec.file)
        return None

    def actuation(self, axis_node, element: str, file) -> dict[str, float | None]:
        """{'effort', 'velocity'} of the axis's `<limit>`: the value when positive, else None.
        SDFormat's default -1 means "no limit", which the model holds as None; an infinite
        value is no limit either."""
        limit = None if axis_node is None else _child(axis_node, "limit")
        out: dict[str, float | None] = {"effort": None, "velocity": None}
        for key in out:
            text = None if limit is None else _text(limit, key)
            if text is not None:
                value = self.number(text, f"limit {key}", element, file)
                out[key] = value if 0 < value < math.inf else None
        return out

    def bound(self, text, key, element, file) -> float | None:
        if text is None:
            return None
        value = self.number(text, f"limit {key}", element, file)
        return None if abs(value) >= UNBOUNDED else value

    def limits(self, bounds, kind, spec, element) -> tuple[float, float] | None:
        """(lower, upper) when bounded both ways, None when unbounded; one-sided limits and
        reversed ones (unless allowed) are refused."""
        lower, upper = bounds
        if lower is None and upper is None:
            return None
        if lower is None or upper is None:
            raise self.error(
                f"{kind} joint is limited on one side only ({lower}, {upper})",
                "limits.one_sided",
                element,
                spec.file,
            )
        if lower > upper:
            allowance = self.source.allowance("limits.reversed", self.source_id)
            if allowance is None:
                raise self.error(
                    f"lower limit {lower!r} exceeds upper limit {upper!r}",
                    "limits.reversed",
                    element,
                    spec.file,
                )
            self.changes.append(
                Change(
                    "limits.swapped",
                    f"lower limit {lower!r} exceeds upper limit {upper!r}; swapped (allowed by "
                    "the source's limits.reversed allowance)",
                    element,
                )
            )
            lower, upper = upper, lower
        return lower, upper

    def screw_pitch(self, spec: _JointSpec, element: str) -> float:
        """Pitch in metres per radian (positive: right-handed) from <screw_thread_pitch>
        (m/rev, positive right-handed) or the deprecated <thread_pitch> (rad/m, positive
        left-handed, so pitch = -1 / thread_pitch)."""
        current = _text(spec.node, "screw_thread_pitch")
        old = _text(spec.node, "thread_pitch")
        if current is None and old is None:
            raise self.error(
                "screw joint has neither <screw_thread_pitch> nor <thread_pitch>; its pitch is "
                "not guessed",
                "joint.screw_pitch_missing",
                element,
                spec.file,
                stage="model",
            )
        pitch = None
        if current is not None:
            pitch = self.number(current, "screw_thread_pitch", element, spec.file) / (2 * math.pi)
        if old is not None:
            value = self.number(old, "thread_pitch", element, spec.file)
            if value == 0:
                raise self.error(
                    "thread_pitch is 0 (an infinite pitch)",
                    "joint.screw_pitch_invalid",
                    element,
                    spec.file,
                )
            from_old = -1.0 / value
            if pitch is None:
                pitch = from_old
            elif not math.isclose(pitch, from_old, rel_tol=PITCH_AGREEMENT):
                self.changes.append(
                    Change(
                        "sdf.thread_pitch_conflict",
                        f"<screw_thread_pitch> gives {pitch:.12g} m/rad but the deprecated "
                        f"<thread_pitch> {value:g} rad/m gives {from_old:.12g} m/rad; "
                        "<screw_thread_pitch> takes precedence, as in SDFormat",
                        element,
                    )
                )
        return pitch

    def joint(self, spec: _JointSpec, origin: np.ndarray):
        """(extra links, joints, mimic node or None) for one SDF joint."""
        element = f"joint {spec.name}"
        kind = spec.node.get("type", "")
        common = {"name": spec.name, "parent": spec.parent, "child": spec.child, "origin": origin}
        if kind == "fixed":
            return [], [Joint(type="fixed", **common)], None
        if kind in ("revolute", "continuous", "prismatic", "screw"):
            axis, bounds, axis_node = self.axis(spec, "axis", element)
            limits = None if kind == "continuous" else self.limits(bounds, kind, spec, element)
            lower, upper = limits or (-math.inf, math.inf)
            pitch = 0.0
            if kind == "revolute" and limits is None:
                kind = "continuous"
                self.changes.append(
                    Change(
                        "sdf.revolute_unbounded",
                        f"revolute joint without finite limits (none, or |limit| >= "
                        f"{UNBOUNDED:g}) read as continuous",
                        element,
                    )
                )
            elif kind == "screw":
                kind, pitch = "helical", self.screw_pitch(spec, element)
            joint = Joint(
                type=kind,
                axis=axis,
                lower=lower,
                upper=upper,
                pitch=pitch,
                **self.actuation(axis_node, element, spec.file),
                **common,
            )
            return [], [joint], _child(axis_node, "mimic")
        if kind in ("universal", "revolute2"):
            first, first_bounds, _ = self.axis(spec, "axis", element)
            second, second_bounds, _ = self.axis(spec, "axis2", element)
            limits = [self.limits(b, kind, spec, element) for b in (first_bounds, second_bounds)]
            links, joints, change = decompose_joint(
                kind, axes=(first, second), limits=limits, **common
            )
            self.changes.append(change)
            return links, joints, None
        if kind == "ball":
            links, joints, change = decompose_joint("ball", **common)
            self.changes.append(change)
            return links, joints, None
        raise self.error(
            f"joint type {kind!r} is not supported",
            "joint.unsupported",
            element,
            spec.file,
            stage="model",
        )

    def mimic(self, node, follower: Joint, joints: dict[str, Joint], scope, file) -> None:
        """SDFormat 1.11 <mimic>: follower = multiplier (leader - reference) + offset."""
        element = f"joint {follower.name}"
        leader = _scoped(scope, node.get("joint", ""))
        if leader not in joints or node.get("axis", "axis") != "axis":
            self.changes.append(
                Change(
                    "sdf.mimic_ignored",
                    f"mimics {node.get('joint')!r} {node.get('axis', 'axis')}, which is not a "
                    "one-DOF joint of this model",
                    element,
                )
            )
            return
        multiplier = self.scalar(node, "multiplier", 1.0, element, file)
        offset = self.scalar(node, "offset", 0.0, element, file)
        reference = self.scalar(node, "reference", 0.0, element, file)
        joints[follower.name] = replace(
            follower, mimic=Mimic(leader, multiplier, offset - multiplier * reference)
        )


def check_tree(specs: list[_JointSpec], path: Path) -> None:
    """Refuse joints that close a kinematic loop (the model cannot hold them, and cutting one
    would change the mechanism's mobility) and joints whose child is the world."""
    group: dict[str, str] = {}

    def find(x: str) -> str:
        while group.get(x, x) != x:
            x = group[x]
        return x

    for spec in specs:
        if spec.child == "world":
            raise AssetError(
                "the world cannot be a joint's child",
                code="model.root",
                stage="model",
                path=str(path),
                element=f"joint {spec.name}",
            )
        a, b = find(spec.parent), find(spec.child)
        if a == b:
            raise ClosedLoopError(
                f"joint {spec.name} ({spec.parent} -> {spec.child}) closes a kinematic loop; "
                "closed loops are refused, not cut",
                element=f"joint {spec.name}",
                path=str(path),
            )
        group[a] = b
