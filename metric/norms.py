"""Inner products on se(3) as 6x6 Gram matrices: one (6, 6) for all joints or one per joint
(N, 6, 6). A twist xi = (omega, v) has squared norm xi^T G xi.
"""

from __future__ import annotations

import numpy as np


def skew(vectors: np.ndarray) -> np.ndarray:
    """(..., 3, 3) cross-product matrices: skew(c) @ x == cross(c, x)."""
    out = np.zeros(vectors.shape[:-1] + (3, 3))
    x, y, z = vectors[..., 0], vectors[..., 1], vectors[..., 2]
    out[..., 0, 1], out[..., 0, 2] = -z, y
    out[..., 1, 0], out[..., 1, 2] = z, -x
    out[..., 2, 0], out[..., 2, 1] = -y, x
    return out


def _asymmetric(matrices: np.ndarray) -> np.ndarray:
    """(stack shape) True for each matrix that is not symmetric to a relative 1e-9."""
    scale = np.abs(matrices).max(axis=(-2, -1), keepdims=True)
    asym = np.abs(matrices - np.swapaxes(matrices, -1, -2)) > 1e-9 * scale + 1e-300
    return asym.any(axis=(-2, -1))


def _check_spd(matrices: np.ndarray, what: str) -> np.ndarray:
    """The Cholesky factors of a stack of matrices; ValueError unless every matrix is symmetric
    positive definite."""
    if not np.isfinite(matrices).all():
        raise ValueError(f"{what} contains NaN or infinite values")
    asym = _asymmetric(matrices)
    if asym.any():
        bad = np.flatnonzero(asym)
        raise ValueError(f"{what} is not symmetric (matrices {bad[:5].tolist()})")
    try:
        return np.linalg.cholesky(matrices)
    except np.linalg.LinAlgError:
        eig = np.linalg.eigvalsh(matrices.reshape((-1,) + matrices.shape[-2:]))
        bad = np.flatnonzero(eig[:, 0] <= 0.0)
        raise ValueError(
            f"{what} is not positive definite (matrices {bad[:5].tolist()}, smallest "
            f"eigenvalue {float(eig[:, 0].min()):.3g})"
        ) from None


def split_norm(alpha: float = 1.0) -> np.ndarray:
    """Gram matrix of ||omega||^2 + alpha^2 ||v||^2; `alpha` (> 0) is an inverse length."""
    alpha = float(alpha)
    if not (np.isfinite(alpha) and alpha > 0.0):
        raise ValueError(f"alpha must be finite and > 0, got {alpha}")
    return np.diag([1.0, 1.0, 1.0, alpha * alpha, alpha * alpha, alpha * alpha])


def kinetic_norm(mass, com, inertia) -> np.ndarray:
    """Gram matrix of (1/m) dw^T I dw + ||dv + dw x c||^2: the mass-weighted RMS speed of the
    moving link (the squared norm is in m^2, so distances are in metres).

    `mass` > 0, centre of mass `com` and inertia about the centre of mass `inertia` must be
    expressed in the frame of the twists (the world frame; see `transform_mass_moments`).
    Scalars (), (3,), (3, 3) give one (6, 6); arrays (N,), (N, 3), (N, 3, 3) give (N, 6, 6).
    """
    mass = np.asarray(mass, dtype=float)
    com = np.asarray(com, dtype=float)
    inertia = np.asarray(inertia, dtype=float)
    if com.shape != mass.shape + (3,) or inertia.shape != mass.shape + (3, 3):
        raise ValueError(
            "mass, com and inertia must have shapes (), (3,), (3, 3) or (N,), (N, 3), (N, 3, 3); "
            f"got {mass.shape}, {com.shape}, {inertia.shape}"
        )
    if not (np.isfinite(mass).all() and np.isfinite(com).all()):
        raise ValueError("mass or centre of mass contains NaN or infinite values")
    bad = np.atleast_1d(mass <= 0.0)
    if bad.any():
        raise ValueError(f"mass must be > 0 (links {np.flatnonzero(bad)[:5].tolist()})")
    _check_spd(inertia, "inertia tensor")
    return _kinetic_gram(mass, com, inertia)


def _kinetic_gram(mass: np.ndarray, com: np.ndarray, inertia: np.ndarray) -> np.ndarray:
    """`kinetic_norm` of mass moments already checked."""
    c = skew(com)
    gram = np.zeros(mass.shape + (6, 6))
    gram[..., :3, :3] = inertia / mass[..., None, None] + np.swapaxes(c, -1, -2) @ c
    gram[..., :3, 3:] = np.swapaxes(c, -1, -2) * -1.0
    gram[..., 3:, :3] = -c
    gram[..., 3:, 3:] = np.eye(3)
    return gram


def kinetic_norms(mass, com, inertia) -> tuple[np.ndarray, np.ndarray]:
    """(grams (N, 6, 6), valid (N,)) for N links (N,), (N, 3), (N, 3, 3): `kinetic_norm` of
    each link that it accepts (`valid`: finite mass > 0, finite centre of mass, finite symmetric
    positive definite inertia, by the same tests) and the identity for the others, so links
    without a usable mass distribution can be left out instead of failing the batch."""
    mass = np.asarray(mass, dtype=float).reshape(-1)
    n = len(mass)
    com = np.asarray(com, dtype=float).reshape(n, 3)
    inertia = np.asarray(inertia, dtype=float).reshape(n, 3, 3)
    valid = (mass > 0.0) & np.isfinite(mass) & np.isfinite(com).all(axis=1)
    valid &= np.isfinite(inertia).all(axis=(1, 2))
    valid[valid] = ~_asymmetric(inertia[valid])
    try:
        np.linalg.cholesky(inertia[valid])
    except np.linalg.LinAlgError:  # find the failing ones (rare): one factorization each
        valid[valid] = [_positive_definite(m) for m in inertia[valid]]
    grams = np.broadcast_to(np.eye(6), (n, 6, 6)).copy()
    grams[valid] = _kinetic_gram(mass[valid], com[valid], inertia[valid])
    return grams, valid


def _positive_definite(matrix: np.ndarray) -> bool:
    try:
        np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError:
        return False
    return True


def transform_mass_moments(mass, com, inertia, rotation, translation):
    """Mass moments moved from a link frame to the world frame by the link pose (R, t):
    (m, R c + t, R I R^T). Works on one link or on stacks (N,), (N, 3), (N, 3, 3), (N, 3, 3),
    (N, 3)."""
    mass = np.asarray(mass, dtype=float)
    com = np.asarray(com, dtype=float)
    inertia = np.asarray(inertia, dtype=float)
    rotation = np.asarray(rotation, dtype=float)
    translation = np.asarray(translation, dtype=float)
    world_com = (rotation @ com[..., None])[..., 0] + translation
    world_inertia = rotation @ inertia @ np.swapaxes(rotation, -1, -2)
    return mass.copy(), world_com, world_inertia


def riemannian_norm(gram) -> np.ndarray:
    """A general inner product: any symmetric positive definite (6, 6) or (N, 6, 6) matrix
    (checked; returned symmetrized)."""
    gram = np.asarray(gram, dtype=float)
    if gram.shape[-2:] != (6, 6) or gram.ndim not in (2, 3):
        raise ValueError(f"a Gram matrix must have shape (6, 6) or (N, 6, 6), got {gram.shape}")
    _check_spd(gram, "Gram matrix")
    return 0.5 * (gram + np.swapaxes(gram, -1, -2))


def gram_factor(norm, n: int | None = None, what: str = "norm"):
    """(G, L): the validated Gram array of `norm`, (6, 6) or (n, 6, 6) when per joint, and its
    Cholesky factor (G = L L^T, so ||x||_G = ||x @ L||)."""
    gram = np.asarray(norm, dtype=float)
    per_joint = gram.ndim == 3 and gram.shape[1:] == (6, 6)
    if gram.shape != (6, 6) and not per_joint:
        raise ValueError(
            f"{what} must be a (6, 6) or (N, 6, 6) Gram matrix, got shape {gram.shape}"
        )
    if per_joint and n is not None and gram.shape[0] != n:
        raise ValueError(f"{what} has {gram.shape[0]} per-joint Gram matrices for {n} joints")
    return gram, _check_spd(gram, what)
