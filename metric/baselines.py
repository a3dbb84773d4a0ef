"""The per-component scores of the earlier evaluation template, kept for comparison.

A joint is the tuple (type, axis a, origin o, limits [l-, l+]). Scores, with their documented
defects kept: type error 1[t1 != t2]; unsigned axis angle arccos(|a1 . a2|); origin error, the
skew-line distance |(o1 - o2) . (a1 x a2)| / ||a1 x a2|| for rotating joints (undefined for
parallel axes: reported as inf with a flag, or on request as the distance between the two
parallel lines ||(o1 - o2) x a2||, the skew-line distance's limit) and ||o1 - o2|| otherwise;
limit range error ||m1 - m2|| and direction error 1 - cos(m1, m2) with m = a (l+ - l-) (NaN
when m is infinite or zero); success 1[same type, axis < tau_a, origin < tau_p].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from metric.joints import TYPE_CODES, type_codes

#: Below this ||a1 x a2|| the skew-line distance is undefined (parallel axes).
PARALLEL_EPS = 1e-12
_ROTATING = [TYPE_CODES[t] for t in ("revolute", "continuous", "helical")]


@dataclass(frozen=True)
class JointParameters:
    """N joints in the baseline representation: types (names or codes), axis (N, 3),
    origin (N, 3), lower and upper (N,) limits (continuous joints: -inf, inf)."""

    types: np.ndarray
    axis: np.ndarray
    origin: np.ndarray
    lower: np.ndarray
    upper: np.ndarray

    def __post_init__(self):
        codes = type_codes(self.types)
        n = codes.shape[0]
        shapes = {"axis": (n, 3), "origin": (n, 3), "lower": (n,), "upper": (n,)}
        for name, shape in shapes.items():
            value = np.asarray(getattr(self, name), dtype=float).reshape(shape)
            if np.isnan(value).any():
                raise ValueError(f"{name} contains NaN")
            object.__setattr__(self, name, value)
        object.__setattr__(self, "types", codes)


@dataclass(frozen=True)
class ComponentScores:
    """Per-joint arrays (N,) of the template's scores; see the module docstring."""

    type_error: np.ndarray
    axis_error: np.ndarray
    origin_error: np.ndarray
    origin_parallel: np.ndarray
    limit_range: np.ndarray
    limit_direction: np.ndarray
    success: np.ndarray


def _unit(axis: np.ndarray) -> np.ndarray:
    length = np.linalg.norm(axis, axis=1, keepdims=True)
    return np.where(length > 0.0, axis / np.where(length > 0.0, length, 1.0), np.nan)


def component_scores(
    pred: JointParameters,
    gt: JointParameters,
    tau_axis: float = 0.25,
    tau_origin: float = 0.05,
    parallel: str = "inf",
) -> ComponentScores:
    """Scores of predicted joints against ground-truth joints, pair by pair (N, N >= 0).

    The origin error follows the type of `pred` (the reference package does the same; success
    only looks at it when the types agree). Axes are normalized here. `parallel` is the origin
    error of rotating joints with parallel axes (flagged in `origin_parallel` either way):
    "inf" as the template reports it (such a pair never succeeds), or "line" for the distance
    between the two parallel lines, so an exactly right hinge succeeds.
    """
    if parallel not in ("inf", "line"):
        raise ValueError(f"parallel must be 'inf' or 'line', got {parallel!r}")
    n = pred.types.shape[0]
    if gt.types.shape[0] != n:
        raise ValueError(f"pred has {n} joints, gt has {gt.types.shape[0]}")
    a1, a2 = _unit(pred.axis), _unit(gt.axis)
    type_error = (pred.types != gt.types).astype(float)
    axis_error = np.arccos(np.clip(np.abs(np.einsum("ni,ni->n", a1, a2)), 0.0, 1.0))

    cross = np.cross(a1, a2)
    cross_norm = np.linalg.norm(cross, axis=1)
    offset = pred.origin - gt.origin
    is_parallel = ~(cross_norm >= PARALLEL_EPS)
    skew = np.abs(np.einsum("ni,ni->n", offset, cross)) / np.where(is_parallel, 1.0, cross_norm)
    line_gap = np.linalg.norm(np.cross(offset, a2), axis=1) if parallel == "line" else np.inf
    skew = np.where(is_parallel, line_gap, skew)
    rotating = np.isin(pred.types, _ROTATING)
    origin_error = np.where(rotating, skew, np.linalg.norm(offset, axis=1))

    with np.errstate(invalid="ignore"):
        m1 = a1 * (pred.upper - pred.lower)[:, None]
        m2 = a2 * (gt.upper - gt.lower)[:, None]
        defined = np.isfinite(m1).all(axis=1) & np.isfinite(m2).all(axis=1)
        limit_range = np.where(defined, np.linalg.norm(m1 - m2, axis=1), np.nan)
        n1, n2 = np.linalg.norm(m1, axis=1), np.linalg.norm(m2, axis=1)
        nonzero = defined & (n1 > 0.0) & (n2 > 0.0)
        cosine = np.einsum("ni,ni->n", m1, m2) / np.where(nonzero, n1 * n2, 1.0)
    limit_direction = np.where(nonzero, 1.0 - cosine, np.nan)

    success = (type_error == 0.0) & (axis_error < tau_axis) & (origin_error < tau_origin)
    return ComponentScores(
        type_error=type_error,
        axis_error=axis_error,
        origin_error=origin_error,
        origin_parallel=rotating & is_parallel,
        limit_range=limit_range,
        limit_direction=limit_direction,
        success=success,
    )
