"""Smooth, swap-invariant surrogates of E^2 for use as training losses.

E is not differentiable where its two swap branches tie. Two smooth replacements:

- the invariant form: with s = z- + z+ and d = z- - z+ (D = d d^T),
  E^2 = A - <s1, s2> - |<d1, d2>| where A sums the four squared endpoint norms and
  <d1, d2>^2 = tr(D1 G D2 G); replacing |x| by sqrt(x^2 + epsilon) makes it smooth and it equals
  E^2 at epsilon = 0;
- the soft-min over the two branch sums with a temperature T: it lies within T log 2 below E^2
  and tends to E^2 as T -> 0.

Both accept `kappa` to act on the compactified endpoints (E^phi).
"""

from __future__ import annotations

import numpy as np

from metric.joint_distance import check_pair, endpoints, prepare_joints
from metric.joints import Joints


def swap_invariants(joints: Joints, norm=None, kappa: float | None = None):
    """(s (N, 6), D (N, 6, 6)): s = z- + z+ and D = (z- - z+)(z- - z+)^T, unchanged when the two
    endpoints are swapped (`norm` is only needed under phi, i.e. with `kappa`)."""
    a, b = endpoints(joints, norm, kappa)
    d = a - b
    return a + b, d[:, :, None] * d[:, None, :]


def _scaled(j1: Joints, j2: Joints, norm, kappa):
    """(v, s-, s+) of both batches: endpoints s v in Euclidean coordinates of the norm."""
    kappa, factor = check_pair(j1, j2, norm, kappa)
    out = []
    for joints in (j1, j2):
        v, _, s_minus, s_plus = prepare_joints(joints, factor, kappa)
        out.append((v, s_minus, s_plus))
    return out


def invariant_surrogate(
    j1: Joints, j2: Joints, norm, epsilon: float = 1e-9, kappa: float | None = None
) -> np.ndarray:
    """(N,) A - <s1, s2> - sqrt(<d1, d2>^2 + epsilon): smooth in the joints for epsilon > 0,
    equal to E^2 at epsilon = 0 (may dip slightly below zero near ties for epsilon > 0)."""
    epsilon = float(epsilon)
    if not (np.isfinite(epsilon) and epsilon >= 0.0):
        raise ValueError(f"epsilon must be finite and >= 0, got {epsilon}")
    (t1, a1, b1), (t2, a2, b2) = _scaled(j1, j2, norm, kappa)
    p1 = np.einsum("ni,ni->n", t1, t1)
    p2 = np.einsum("ni,ni->n", t2, t2)
    r = np.einsum("ni,ni->n", t1, t2)
    total = (a1 * a1 + b1 * b1) * p1 + (a2 * a2 + b2 * b2) * p2
    s_term = (a1 + b1) * (a2 + b2) * r
    d_term = (a1 - b1) * (a2 - b2) * r
    return total - s_term - np.sqrt(d_term * d_term + epsilon)


def softmin_surrogate(
    j1: Joints, j2: Joints, norm, temperature: float, kappa: float | None = None
) -> np.ndarray:
    """(N,) -T log(exp(-direct / T) + exp(-swapped / T)) over the two branch sums of E^2:
    smooth, at most T log 2 below E^2, and equal to E^2 in the limit T -> 0."""
    temperature = float(temperature)
    if not (np.isfinite(temperature) and temperature > 0.0):
        raise ValueError(f"temperature must be finite and > 0, got {temperature}")
    (t1, a1, b1), (t2, a2, b2) = _scaled(j1, j2, norm, kappa)
    za1, zb1 = a1[:, None] * t1, b1[:, None] * t1
    za2, zb2 = a2[:, None] * t2, b2[:, None] * t2

    def sq(x):
        return np.einsum("ni,ni->n", x, x)

    direct = sq(za1 - za2) + sq(zb1 - zb2)
    swapped = sq(za1 - zb2) + sq(zb1 - za2)
    low = np.minimum(direct, swapped)
    return low - temperature * np.log1p(np.exp(-np.abs(direct - swapped) / temperature))
