"""Small rigid-transform helpers shared by the adapters, the model and the URDF writer.

Transforms are 4x4 homogeneous numpy arrays. Euler angles follow URDF: roll-pitch-yaw about the
fixed x, y, z axes, i.e. R = Rz(yaw) @ Ry(pitch) @ Rx(roll).
"""

from __future__ import annotations

import math

import numpy as np


def rpy_to_matrix(rpy) -> np.ndarray:
    roll, pitch, yaw = (float(v) for v in rpy)
    cr, sr = np.cos(roll), np.sin(roll)
    cp, sp = np.cos(pitch), np.sin(pitch)
    cy, sy = np.cos(yaw), np.sin(yaw)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def matrix_to_rpy(rotation: np.ndarray) -> np.ndarray:
    """Roll, pitch, yaw of a rotation (inverse of :func:`rpy_to_matrix`), accurate to rounding
    even at pitch = +-pi/2: pitch and yaw come from the first column, and roll from the rotation
    that Rz(yaw) Ry(pitch) leaves, so an ill-conditioned yaw is absorbed by the roll."""
    r = np.asarray(rotation, dtype=float)
    cos_pitch = math.hypot(r[0, 0], r[1, 0])
    pitch = math.atan2(-r[2, 0], cos_pitch)
    yaw = math.atan2(r[1, 0], r[0, 0]) if cos_pitch > 0.0 else 0.0
    rest = rpy_to_matrix((0.0, pitch, yaw)).T @ r
    return np.array([math.atan2(rest[2, 1], rest[1, 1]), pitch, yaw])


def make_transform(xyz=(0.0, 0.0, 0.0), rpy=(0.0, 0.0, 0.0)) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3] = rpy_to_matrix(rpy)
    t[:3, 3] = np.asarray(xyz, dtype=float)
    return t


def from_rotation_translation(rotation=None, translation=None) -> np.ndarray:
    t = np.eye(4)
    if rotation is not None:
        t[:3, :3] = rotation
    if translation is not None:
        t[:3, 3] = translation
    return t


def quaternion_matrix(quaternion) -> np.ndarray:
    """Rotation matrix of the quaternion (w, x, y, z), of any non-zero length."""
    w, x, y, z = (float(v) for v in quaternion)
    s = 2.0 / (w * w + x * x + y * y + z * z)
    return np.array(
        [
            [1 - s * (y * y + z * z), s * (x * y - z * w), s * (x * z + y * w)],
            [s * (x * y + z * w), 1 - s * (x * x + z * z), s * (y * z - x * w)],
            [s * (x * z - y * w), s * (y * z + x * w), 1 - s * (x * x + y * y)],
        ]
    )


def invert(transform: np.ndarray) -> np.ndarray:
    r = transform[:3, :3]
    out = np.eye(4)
    out[:3, :3] = r.T
    out[:3, 3] = -r.T @ transform[:3, 3]
    return out


def axis_angle_matrix(axis, angle: float) -> np.ndarray:
    """Rotation by `angle` about the unit vector `axis` (Rodrigues)."""
    a = np.asarray(axis, dtype=float)
    k = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def matrix_quaternion(rotation) -> np.ndarray:
    """The unit quaternion (w, x, y, z), w >= 0, of a rotation matrix (inverse of
    :func:`quaternion_matrix`), computed from its largest component for accuracy."""
    r = np.asarray(rotation, dtype=float)
    trace = r[0, 0] + r[1, 1] + r[2, 2]
    diagonal = (r[0, 0], r[1, 1], r[2, 2])
    if trace >= max(diagonal):
        w = math.sqrt(1.0 + trace) / 2.0
        q = [w, (r[2, 1] - r[1, 2]) / (4 * w), (r[0, 2] - r[2, 0]) / (4 * w)]
        q.append((r[1, 0] - r[0, 1]) / (4 * w))
    else:
        i = int(np.argmax(diagonal))
        j, k = (i + 1) % 3, (i + 2) % 3
        v = math.sqrt(max(1.0 + r[i, i] - r[j, j] - r[k, k], 0.0)) / 2.0
        q = [0.0, 0.0, 0.0, 0.0]
        q[0] = (r[k, j] - r[j, k]) / (4 * v)
        q[1 + i] = v
        q[1 + j] = (r[j, i] + r[i, j]) / (4 * v)
        q[1 + k] = (r[k, i] + r[i, k]) / (4 * v)
    out = np.array(q) / np.linalg.norm(q)
    return -out if out[0] < 0 else out
