"""Rigid transforms and number formatting for the sample generator.

Kept separate from `normalize.transforms` on purpose: the generated ground truth must not share
code with the pipeline it is meant to check. Transforms are 4x4 numpy arrays; URDF and SDFormat
roll-pitch-yaw is R = Rz(yaw) Ry(pitch) Rx(roll); MuJoCo quaternions are (w, x, y, z) and its
default `eulerseq="xyz"` is intrinsic, R = Rx(a) Ry(b) Rz(c).
"""

from __future__ import annotations

import math

import numpy as np

# Signed unit vectors by name, for readable shape builders.
AXES = {
    "x": (1.0, 0.0, 0.0),
    "y": (0.0, 1.0, 0.0),
    "z": (0.0, 0.0, 1.0),
    "-x": (-1.0, 0.0, 0.0),
    "-y": (0.0, -1.0, 0.0),
    "-z": (0.0, 0.0, -1.0),
}


def rot_x(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rot_z(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    return rot_z(yaw) @ rot_y(pitch) @ rot_x(roll)


def matrix_rpy(rotation: np.ndarray) -> tuple[float, float, float]:
    """Roll, pitch, yaw of a rotation matrix (pitch in [-pi/2, pi/2])."""
    r = rotation
    pitch = math.asin(max(-1.0, min(1.0, -r[2, 0])))
    if abs(r[2, 0]) > 1.0 - 1e-12:
        return 0.0, pitch, math.atan2(-r[0, 1], r[1, 1])
    return math.atan2(r[2, 1], r[2, 2]), pitch, math.atan2(r[1, 0], r[0, 0])


def matrix_euler_xyz(rotation: np.ndarray) -> tuple[float, float, float]:
    """Intrinsic x-y-z Euler angles (MuJoCo's default eulerseq), R = Rx(a) Ry(b) Rz(c)."""
    r = rotation
    b = math.asin(max(-1.0, min(1.0, r[0, 2])))
    if abs(r[0, 2]) > 1.0 - 1e-12:
        return math.atan2(r[2, 1], r[1, 1]), b, 0.0
    return math.atan2(-r[1, 2], r[2, 2]), b, math.atan2(-r[0, 1], r[0, 0])


def matrix_quat(rotation: np.ndarray) -> tuple[float, float, float, float]:
    """Unit quaternion (w, x, y, z) of a rotation matrix, with w >= 0."""
    r = rotation
    trace = r[0, 0] + r[1, 1] + r[2, 2]
    if trace > 0:
        s = 2.0 * math.sqrt(1.0 + trace)
        q = (0.25 * s, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s)
    elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2])
        q = ((r[2, 1] - r[1, 2]) / s, 0.25 * s, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s)
    elif r[1, 1] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2])
        q = ((r[0, 2] - r[2, 0]) / s, (r[0, 1] + r[1, 0]) / s, 0.25 * s, (r[1, 2] + r[2, 1]) / s)
    else:
        s = 2.0 * math.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1])
        q = ((r[1, 0] - r[0, 1]) / s, (r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, 0.25 * s)
    return q if q[0] >= 0 else tuple(-v for v in q)


def pose(rotation=None, translation=None) -> np.ndarray:
    t = np.eye(4)
    if rotation is not None:
        t[:3, :3] = rotation
    if translation is not None:
        t[:3, 3] = translation
    return t


def inverse(transform: np.ndarray) -> np.ndarray:
    r = transform[:3, :3]
    out = np.eye(4)
    out[:3, :3] = r.T
    out[:3, 3] = -r.T @ transform[:3, 3]
    return out


def rotation_to(axis) -> np.ndarray:
    """A rotation taking the local z axis onto the named or given unit axis (for cylinders)."""
    a = np.asarray(AXES[axis] if isinstance(axis, str) else axis, dtype=float)
    a = a / np.linalg.norm(a)
    z = np.array([0.0, 0.0, 1.0])
    v = np.cross(z, a)
    c = float(z @ a)
    if np.linalg.norm(v) < 1e-12:
        return np.eye(3) if c > 0 else rot_x(math.pi)
    k = np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])
    return np.eye(3) + k + k @ k * (1.0 / (1.0 + c))


def num(value: float) -> str:
    """A float as written into every generated file: 10 significant digits, no negative zero."""
    if abs(value) < 1e-12:
        return "0"
    return f"{value:.10g}"


def nums(values) -> str:
    return " ".join(num(float(v)) for v in values)
