"""The pose graph: frames and their poses (`<pose>`, `relative_to`), frame names resolved in a
scope, poses in the model frame, and the link a frame is attached to."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from normalize.adapters.sdf.elements import _child, _scoped
from normalize.transforms import from_rotation_translation, make_transform, quaternion_matrix

MODEL_FRAME = "__model__"


@dataclass
class _Frame:
    """A named frame of the pose graph: its pose relative to another frame."""

    pose: np.ndarray
    relative_to: str  # scoped name, or "" for the top model frame


def joint_key(scoped: str, version: tuple[int, int]) -> str:
    """The pose-graph key of a joint frame: its name from SDFormat 1.7 on, where every sibling
    has a unique name; before 1.7 names are unique per element type only (a link and a joint
    may share one), so joints get their own namespace."""
    return scoped if version >= (1, 7) else f"{scoped} (joint)"


class _Poses:
    """The reader's poses and frame lookups (a base of `_SdfReader`)."""

    def pose(self, node, element: str, path: Path) -> tuple[np.ndarray, str | None]:
        """(pose, relative_to attribute or None) of `node`'s <pose> child."""
        pose = _child(node, "pose")
        if pose is None:
            return np.eye(4), None
        if pose.get("frame"):
            raise self.error(
                f"<pose frame={pose.get('frame')!r}> (SDFormat 1.5-1.6 frame semantics) is not "
                "supported",
                "sdf.unsupported",
                element,
                path,
            )
        text = pose.text or "0 0 0 0 0 0"
        if pose.get("rotation_format", "euler_rpy") == "quat_xyzw":
            values = self.vector(text, 7, "pose", element, path)
            x, y, z, w = values[3:]
            norm = math.sqrt(w * w + x * x + y * y + z * z)
            if norm == 0:
                raise self.error("pose quaternion is zero", "parse.vector", element, path)
            rotation = quaternion_matrix((w / norm, x / norm, y / norm, z / norm))
            return from_rotation_translation(rotation, values[:3]), pose.get("relative_to")
        values = self.vector(text, 6, "pose", element, path)
        rpy = values[3:]
        if pose.get("degrees", "false").strip().lower() in ("true", "1"):
            rpy = np.radians(rpy)
        return make_transform(values[:3], rpy), pose.get("relative_to")

    def frame_name(self, scope: str, name: str, element: str, path: Path) -> str:
        """The scoped frame a name refers to inside `scope`."""
        if name == MODEL_FRAME:
            return _scoped(scope, MODEL_FRAME) if scope else ""
        if name == "world":
            return "world"
        scoped = _scoped(scope, name)
        if scoped not in self.model.frames and _scoped(scoped, MODEL_FRAME) in self.model.frames:
            return _scoped(scoped, MODEL_FRAME)  # a nested model's name is its model frame
        if scoped not in self.model.frames:
            raise self.error(f"frame {name!r} is not defined", "sdf.unknown_name", element, path)
        return scoped

    def world_pose(self, name: str) -> np.ndarray:
        """Pose of a scoped frame in the top model frame (memoized; cycles refused)."""
        if name in self.resolved:
            return self.resolved[name]
        chain, current = [], name
        while current not in self.resolved:
            if current in chain:
                raise self.error(
                    "pose frames refer to each other in a cycle: " + " -> ".join(chain),
                    "sdf.pose_cycle",
                    f"frame {name}",
                )
            chain.append(current)
            current = self.model.frames[current].relative_to
        for item in reversed(chain):
            frame = self.model.frames[item]
            self.resolved[item] = self.resolved[frame.relative_to] @ frame.pose
        return self.resolved[name]

    def attached_link(self, frame: str, links: set[str], element: str, path: Path) -> str:
        """The link (or `world`) a frame is attached to: a joint's parent or child may name a
        link, a `<frame>`, a joint or a model frame (SDFormat 1.8+); they move with it."""
        chain, current = [], frame
        while current not in links and current != "world":
            if current in chain or current not in self.model.attached:
                problem = (
                    "is attached to frames in a cycle: " + " -> ".join([*chain, current])
                    if current in chain
                    else f"is attached to {current or 'the model frame'!r}, which has no link"
                )
                code = "sdf.pose_cycle" if current in chain else "sdf.missing"
                raise self.error(f"frame {frame!r} {problem}", code, element, path)
            chain.append(current)
            current = self.model.attached[current]
        return current
