"""The joint metric E and its compactified form E^phi.

Each endpoint of a joint is a multiple of its twist, z = s v: without compactification v = xi
and s = the limit; under the radial compactification phi(z) = tanh(||z|| / kappa) z / ||z||
(E^phi) v = xi / ||xi|| and s = sign(l) tanh(|l| ||xi|| / kappa), with s = +-1 for an infinite
limit (the boundary point) and phi(0) = 0, all norms in the same inner product. Over the
endpoint pairs {a1, b1}, {a2, b2}

    E(J1, J2)^2 = min(||a1 - a2||^2 + ||b1 - b2||^2, ||a1 - b2||^2 + ||b1 - a2||^2).

With the invariants p = ||v1||^2, q = ||v2||^2, r = <v1, v2> this is
(s1-^2 + s1+^2) p + (s2-^2 + s2+^2) q - 2 max(r (s1- s2- + s1+ s2+), r (s1- s2+ + s1+ s2-)),
which is cheap on whole batches; where it cancels (E^2 small against the terms) the distance is
recomputed from the endpoint differences, so E(J, J) is exactly 0.
"""

from __future__ import annotations

import numpy as np

from metric.joints import Joints
from metric.norms import gram_factor

#: Recompute from endpoint differences where E^2 <= this fraction of the summed endpoint norms.
_CANCELLATION = 1e-4
#: Endpoint norms (||l xi||) E accepts without compactification: its squares stay normal floats.
_SMALLEST, _LARGEST = 1e-150, 1e150
#: Pairs per chunk in `joint_distance` (keeps temporaries in cache) and `joint_distance_matrix`.
_PAIR_CHUNK = 1 << 15
_MATRIX_CHUNK = 1 << 18


def check_kappa(kappa) -> float | None:
    """kappa as a float (None stays None); ValueError unless finite and > 0."""
    if kappa is None:
        return None
    kappa = float(kappa)
    if not (np.isfinite(kappa) and kappa > 0.0):
        raise ValueError(f"kappa must be finite and > 0, got {kappa}")
    return kappa


def check_bounded(joints: Joints, what: str) -> None:
    """ValueError naming how many joints have an infinite limit (E needs kappa for them)."""
    unbounded = ~joints.bounded
    if unbounded.any():
        raise ValueError(
            f"{what}: {int(unbounded.sum())} joints have infinite limits "
            f"(first: {np.flatnonzero(unbounded)[:5].tolist()}); E is defined on finite limits "
            "only, pass kappa to use the compactified distance E^phi"
        )


def check_pair(j1: Joints, j2: Joints, norm, kappa):
    """(kappa, Cholesky factor(s)) for comparing two equal-length batches pair by pair, after the
    checks: equal lengths, valid kappa, finite limits unless kappa is given, a valid norm."""
    if len(j1) != len(j2):
        raise ValueError(f"joint batches differ in length: {len(j1)} and {len(j2)}")
    kappa = check_kappa(kappa)
    if kappa is None:
        check_bounded(j1, "first joints")
        check_bounded(j2, "second joints")
    _, factor = gram_factor(norm, len(j1))
    return kappa, factor


def transform(twist: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """Twists mapped by the Cholesky factor(s) so that the norm becomes Euclidean."""
    if factor.ndim == 2:
        return twist @ factor
    return (twist[..., None, :] @ factor)[..., 0, :]


def _dot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.einsum("...i,...i->...", x, y)


def euclidean_norm(t: np.ndarray) -> np.ndarray:
    """Euclidean norms of vectors t (..., 6), without underflow or overflow of the squares
    (twists of norm 1e-200 or 1e200 are measured exactly)."""
    r = np.sqrt(_dot(t, t))
    odd = ~((r > _SMALLEST) & (r < _LARGEST))  # zero, or squares near the float limits
    if odd.any():
        sub = t[odd]
        m = np.max(np.abs(sub), axis=-1)
        scaled = sub / np.where(m > 0.0, m, 1.0)[..., None]
        r[odd] = m * np.sqrt(_dot(scaled, scaled))
    return r


def _check_endpoints(size: np.ndarray) -> None:
    """ValueError unless every endpoint norm ||l xi|| is 0 or within [1e-150, 1e150]."""
    bad = (size > _LARGEST) | ((size > 0.0) & (size < _SMALLEST)) | np.isnan(size)
    if bad.any():
        raise ValueError(
            f"{int(bad.sum())} joints have an endpoint norm ||l xi|| outside [1e-150, 1e150] "
            f"(e.g. {float(size[bad].flat[0]):.3g}); E's squares would underflow or "
            "overflow: rescale twists or limits (E scales with them), or pass kappa"
        )


def _normal_squares(t: np.ndarray, p: np.ndarray, lower, upper) -> bool:
    """Do the squares of every twist (p = ||t||^2) and endpoint stay normal floats (or 0)?"""
    zero = p == 0.0
    if zero.any() and t[zero].any():
        return False  # a non-zero twist whose square underflowed
    if not ((zero | ((p > 1e-290) & (p < 1e290))).all()):
        return False
    size = np.sqrt(p) * np.maximum(np.abs(lower), np.abs(upper))
    return bool(((size == 0.0) | ((size >= _SMALLEST) & (size <= _LARGEST))).all())


def prepare(t: np.ndarray, lower, upper, kappa: float | None):
    """(v, p, s-, s+) for twists t (..., 6) already mapped to a Euclidean norm: the endpoints
    are s- v and s+ v, p = ||v||^2. Without kappa v = t and s = the limits (or, when squares
    would leave the normal floats, v = t / ||t|| and s = l ||t||); ValueError where an
    endpoint's norm is outside [1e-150, 1e150] (E is homogeneous: rescale the inputs, or use
    kappa). Under phi v = t / ||t|| (unit, or 0 for a zero twist) and
    s = sign(l) tanh(|l| ||t|| / kappa), defined at every scale."""
    if kappa is None:
        p = _dot(t, t)
        if _normal_squares(t, p, lower, upper):
            return t, p, lower, upper
        # Extreme twists or limits: unit twists, endpoints scaled by ||t|| (same E).
        r = euclidean_norm(t)
        v = t / np.where(r > 0.0, r, 1.0)[..., None]
        s_minus, s_plus = lower * r, upper * r
        _check_endpoints(np.maximum(np.abs(s_minus), np.abs(s_plus)))
        return v, _dot(v, v), s_minus, s_plus
    r = euclidean_norm(t)
    v = t / np.where(r > 0.0, r, 1.0)[..., None]

    def scale(limit):
        with np.errstate(invalid="ignore"):
            magnitude = np.tanh(np.abs(limit) * r / kappa)
        magnitude = np.where(np.isinf(limit), 1.0, magnitude)
        return np.where(r > 0.0, np.sign(limit) * magnitude, 0.0)

    return v, _dot(v, v), scale(lower), scale(upper)


def _squared(t1, s1m, s1p, t2, s2m, s2p, p1, p2, r) -> np.ndarray:
    """E^2 from the invariants, recomputed from endpoint differences where it cancels.

    t1, t2: transformed twists broadcastable to the output shape + (6,); the rest broadcast to
    the output shape.
    """
    total = (s1m * s1m + s1p * s1p) * p1 + (s2m * s2m + s2p * s2p) * p2
    cross = 2.0 * np.maximum(r * (s1m * s2m + s1p * s2p), r * (s1m * s2p + s1p * s2m))
    out = np.maximum(total - cross, 0.0)
    unsure = out <= _CANCELLATION * total
    if unsure.any():
        shape = out.shape
        idx = np.nonzero(unsure)

        def pick(a):
            return np.broadcast_to(a, shape)[idx]

        def pick_vec(t):
            return np.broadcast_to(t, shape + (6,))[idx]

        v1, v2 = pick_vec(t1), pick_vec(t2)
        a1, b1 = pick(s1m)[:, None] * v1, pick(s1p)[:, None] * v1
        a2, b2 = pick(s2m)[:, None] * v2, pick(s2p)[:, None] * v2
        direct = _dot(a1 - a2, a1 - a2) + _dot(b1 - b2, b1 - b2)
        swapped = _dot(a1 - b2, a1 - b2) + _dot(b1 - a2, b1 - a2)
        out[idx] = np.minimum(direct, swapped)
    return out


def compactify(z, norm, kappa: float) -> np.ndarray:
    """phi(z) = tanh(||z|| / kappa) z / ||z|| for twists z (..., 6), measured in `norm`
    ((6, 6), or Grams broadcasting against z's leading axes); phi(0) = 0."""
    kappa = check_kappa(kappa)
    if kappa is None:
        raise ValueError("compactify needs kappa")
    z = np.asarray(z, dtype=float)
    _, factor = gram_factor(norm)
    t = transform(z, factor)
    r = euclidean_norm(t)
    safe_r = np.where(r > 0.0, r, 1.0)
    return (np.tanh(r / kappa) / safe_r)[..., None] * z


def endpoints(joints: Joints, norm=None, kappa: float | None = None):
    """The endpoint twists (z-, z+), each (N, 6): (lower xi, upper xi), or their images under
    phi when `kappa` is given (`norm`, (6, 6) or (N, 6, 6), is then the norm phi measures in)."""
    kappa = check_kappa(kappa)
    if kappa is None:
        check_bounded(joints, "endpoints")
        return joints.lower[:, None] * joints.twist, joints.upper[:, None] * joints.twist
    _, factor = gram_factor(norm, len(joints))
    t = transform(joints.twist, factor)
    r = euclidean_norm(t)
    _, _, s_minus, s_plus = prepare(t, joints.lower, joints.upper, kappa)
    unit = joints.twist / np.where(r > 0.0, r, 1.0)[:, None]
    return s_minus[:, None] * unit, s_plus[:, None] * unit


def prepare_joints(joints: Joints, factor: np.ndarray, kappa: float | None):
    """`prepare` of a batch's twists mapped by the Cholesky factor(s) `factor`."""
    return prepare(transform(joints.twist, factor), joints.lower, joints.upper, kappa)


def joint_distance(j1: Joints, j2: Joints, norm, kappa: float | None = None) -> np.ndarray:
    """(N,) distances E(J1[n], J2[n]), or E^phi when `kappa` (> 0) is given.

    `norm` is one (6, 6) Gram matrix or one per pair (N, 6, 6). Without `kappa` every limit must
    be finite (ValueError naming how many are not).
    """
    kappa, factor = check_pair(j1, j2, norm, kappa)
    out = np.empty(len(j1))
    for start in range(0, len(j1), _PAIR_CHUNK):
        part = slice(start, start + _PAIR_CHUNK)
        f = factor if factor.ndim == 2 else factor[part]
        v1, p1, s1m, s1p = prepare_joints(j1[part], f, kappa)
        v2, p2, s2m, s2p = prepare_joints(j2[part], f, kappa)
        out[part] = np.sqrt(_squared(v1, s1m, s1p, v2, s2m, s2p, p1, p2, _dot(v1, v2)))
    return out


def distance_to_fixed(joints: Joints, norm, kappa: float | None = None) -> np.ndarray:
    """(N,) E(J, J0) against the fixed joint J0 = {0, 0}: the motion a joint carries at all, the
    cost of contracting or expanding its edge in the tree distance. `norm`: (6, 6) or (N, 6, 6).
    """
    kappa = check_kappa(kappa)
    if kappa is None:
        check_bounded(joints, "joints")
    _, factor = gram_factor(norm, len(joints))
    _, p, s_minus, s_plus = prepare_joints(joints, factor, kappa)
    return np.sqrt((s_minus * s_minus + s_plus * s_plus) * p)


def joint_distance_matrix(j1: Joints, j2: Joints, norm, kappa: float | None = None) -> np.ndarray:
    """(N1, N2) pairwise distances E(J1[i], J2[k]) (E^phi when `kappa` is given).

    `norm` is one (6, 6) Gram matrix or one per joint of the SECOND batch (N2, 6, 6): entry
    (i, k) is measured in the Gram of J2[k] (the second batch is the reference, e.g. the ground
    truth), and phi of both joints too.
    """
    kappa = check_kappa(kappa)
    if kappa is None:
        check_bounded(j1, "first joints")
        check_bounded(j2, "second joints")
    _, factor = gram_factor(norm, len(j2), "norm (per joint of the second batch)")
    n1, n2 = len(j1), len(j2)
    out = np.empty((n1, n2))
    if n1 == 0 or n2 == 0:
        return out
    v2, p2, s2m, s2p = prepare_joints(j2, factor, kappa)
    if factor.ndim == 2:
        v1, p1, s1m, s1p = prepare_joints(j1, factor, kappa)
    rows = max(1, _MATRIX_CHUNK // n2)
    for start in range(0, n1, rows):
        part = slice(start, min(start + rows, n1))
        if factor.ndim == 2:
            a, pa, am, ap = v1[part, None, :], p1[part, None], s1m[part, None], s1p[part, None]
            r = v1[part] @ v2.T
        else:
            # One Gram per joint of the second batch: J1[i] is measured (and compactified) in
            # the Gram of each J2[k].
            t = transform(j1.twist[part, None, :], factor[None])
            a, pa, am, ap = prepare(t, j1.lower[part, None], j1.upper[part, None], kappa)
            r = _dot(a, v2[None])
        sq = _squared(a, am, ap, v2[None], s2m[None], s2p[None], pa, p2[None], r)
        out[part] = np.sqrt(sq)
    return out
