"""Finite material-motion discrepancy of a rigid link, the ground truth E_B linearizes.

The configuration discrepancy of a link between two placements g1, g2 is the RMS displacement
of its material points, d(g1, g2)^2 = (1/m) integral ||g1 x - g2 x||^2 dm(x). The integrand is
quadratic in x, so it depends on the mass only through (m, c, I):

    m d^2 = tr(dR M dR^T) + 2 m dt^T dR c + m ||dt||^2,   M = (tr(I)/2) Id - I + m c c^T,

with dR = R1 - R2, dt = t1 - t2, I the inertia about the centre of mass c. The joint version
exponentiates each endpoint twist to a finite displacement and takes the same swap minimum as E.
"""

from __future__ import annotations

import numpy as np

from metric.joint_distance import check_bounded
from metric.joints import Joints
from metric.norms import skew

#: Below this rotation angle the exponential uses its Taylor expansion.
_SMALL_ANGLE = 1e-4


def se3_exp(twist, theta=1.0):
    """Finite displacements exp(theta * xi) for twists (N, 6) (angular part first) and joint
    coordinates theta (N,) or scalar: (R (N, 3, 3), t (N, 3)) acting as x -> R x + t.
    Works for any twist, unit or not (Rodrigues with the left Jacobian for the translation)."""
    twist = np.asarray(twist, dtype=float).reshape(-1, 6)
    theta = np.broadcast_to(np.asarray(theta, dtype=float), (twist.shape[0],))
    if not (np.isfinite(twist).all() and np.isfinite(theta).all()):
        raise ValueError("se3_exp needs finite twists and joint coordinates")
    rot_vec = theta[:, None] * twist[:, :3]
    trans_vec = theta[:, None] * twist[:, 3:]
    angle = np.linalg.norm(rot_vec, axis=1)
    small = angle < _SMALL_ANGLE
    safe = np.where(small, 1.0, angle)
    a2 = angle * angle
    # sin(x)/x, (1 - cos x)/x^2, (x - sin x)/x^3 with their series near zero.
    sin_x = np.where(small, 1.0 - a2 / 6.0, np.sin(safe) / safe)
    cos_x = np.where(small, 0.5 - a2 / 24.0, (1.0 - np.cos(safe)) / (safe * safe))
    cub_x = np.where(small, 1.0 / 6.0 - a2 / 120.0, (safe - np.sin(safe)) / safe**3)
    k = skew(rot_vec)
    k2 = k @ k
    eye = np.eye(3)
    rotation = eye + sin_x[:, None, None] * k + cos_x[:, None, None] * k2
    jacobian = eye + cos_x[:, None, None] * k + cub_x[:, None, None] * k2
    return rotation, (jacobian @ trans_vec[:, :, None])[:, :, 0]


def _second_moment(mass, com, inertia) -> np.ndarray:
    """Raw second moment integral x x^T dm about the frame origin, from (m, c, I_com)."""
    trace = np.trace(inertia, axis1=-2, axis2=-1)
    return (
        0.5 * trace[..., None, None] * np.eye(3)
        - inertia
        + mass[..., None, None] * com[..., :, None] * com[..., None, :]
    )


def configuration_discrepancy(rot1, trans1, rot2, trans2, mass, com, inertia) -> np.ndarray:
    """(N,) RMS material displacement d(g1, g2) in metres between placements (R1, t1) and
    (R2, t2) of a link with mass moments (m, c, I about c) in the frame the placements act in.
    Moments are one link ((), (3,), (3, 3)) or one per pair ((N,), (N, 3), (N, 3, 3))."""
    mass = np.asarray(mass, dtype=float)
    com = np.asarray(com, dtype=float)
    inertia = np.asarray(inertia, dtype=float)
    if np.any(mass <= 0.0) or not np.isfinite(mass).all():
        raise ValueError("mass must be finite and > 0")
    d_rot = np.asarray(rot1, dtype=float) - np.asarray(rot2, dtype=float)
    d_trans = np.asarray(trans1, dtype=float) - np.asarray(trans2, dtype=float)
    n = d_rot.shape[0]
    second = np.broadcast_to(_second_moment(mass, com, inertia), (n, 3, 3))
    mass = np.broadcast_to(mass, (n,))
    com = np.broadcast_to(com, (n, 3))
    rotational = np.einsum("nij,njk,nik->n", d_rot, second, d_rot)
    coupling = 2.0 * mass * np.einsum("ni,nij,nj->n", d_trans, d_rot, com)
    translational = mass * np.einsum("ni,ni->n", d_trans, d_trans)
    total = rotational + coupling + translational
    return np.sqrt(np.maximum(total, 0.0) / mass)


def material_motion_distance(j1: Joints, j2: Joints, mass, com, inertia) -> np.ndarray:
    """(N,) finite-displacement counterpart of E_B: each endpoint twist exponentiated to a rigid
    displacement of the same child link, then D^2 = min over the endpoint swap of
    d(g1-, g2-)^2 + d(g1+, g2+)^2. Needs finite limits; moments as in
    `configuration_discrepancy` (world frame, the twists' frame)."""
    if len(j1) != len(j2):
        raise ValueError(f"joint batches differ in length: {len(j1)} and {len(j2)}")
    check_bounded(j1, "first joints")
    check_bounded(j2, "second joints")
    ends1 = [se3_exp(j1.twist, j1.lower), se3_exp(j1.twist, j1.upper)]
    ends2 = [se3_exp(j2.twist, j2.lower), se3_exp(j2.twist, j2.upper)]

    def d2(g, h):
        return configuration_discrepancy(*g, *h, mass, com, inertia) ** 2

    direct = d2(ends1[0], ends2[0]) + d2(ends1[1], ends2[1])
    swapped = d2(ends1[0], ends2[1]) + d2(ends1[1], ends2[0])
    return np.sqrt(np.minimum(direct, swapped))
