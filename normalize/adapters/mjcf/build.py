"""What converting a compiled model accumulates (`_Build`), and poses from MuJoCo's positions
and quaternions."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from normalize.changes import Change, shape_dropped
from normalize.model import Joint, Link
from normalize.transforms import from_rotation_translation, quaternion_matrix


def _pose(pos, quat) -> np.ndarray:
    return from_rotation_translation(quaternion_matrix(quat), np.asarray(pos, dtype=float))


def _translation(p) -> np.ndarray:
    return from_rotation_translation(None, np.asarray(p, dtype=float))


@dataclass
class _Build:
    """What the conversion accumulates."""

    links: list[Link] = field(default_factory=list)
    joints: list[Joint] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    # Pose of each MuJoCo body frame in its link frame (identity unless the body's last joint
    # has an anchor off the body origin).
    body_frames: dict[str, np.ndarray] = field(default_factory=dict)
    # Shapes with a surface that could not be converted (`normalize.changes.shape_dropped`).
    dropped: list[dict] = field(default_factory=list)

    def drop(self, kind: str, element: str, why: str, extent=None) -> None:
        change, record = shape_dropped(kind, element, why, extent)
        self.changes.append(change)
        self.dropped.append(record)
