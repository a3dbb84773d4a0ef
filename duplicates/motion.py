"""Kinematic evidence: the exact tree distance E_tree between two objects' joints.

Trees are built from the joints table as `verify.checks.kinematics.metric_tree` builds them
from the object model: one edge (parent link, child link) per joint with its world-frame twist
and limits at rest. A is first turned by the yaw the shape evidence chose and scaled to B's
size, and both are measured with lengths in B's box diagonals (`in_lengths`; split norm, alpha
= 1; E^phi at kappa = pi when a joint is unbounded), so E_tree is zero for the same motion
whatever the frame, unit or size.

E_tree splits into the cost of the matched joints and the motion of the unmatched ones
(E(J, J0) each). The relation of the two objects:
- "same": E_tree <= tolerance;
- "welded": every moving joint of the object with fewer is, within the tolerance, a distinct
  joint of the other (an assignment over the joint distance matrix): the same object with some
  joints fixed, whose own motion is `welded_motion` (E_tree's optimal matching may pair the
  joints otherwise at the same cost, e.g. two doors on one hinge line);
- "changed": anything else (other joints, other limits).
The tolerance is RELATIVE_TOLERANCE times the larger total motion (sum of E(J, J0)).

`could_agree` is a cheap necessary test of "same" or "welded" (one joint distance matrix
instead of a tree search): every moving joint of the object with fewer is, within the
tolerance, close to some moving joint of the other or carries no more motion than the tolerance
(E_tree pays at least that much for it, matched or not; "welded" assigns it within the
tolerance).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

import metric

KAPPA = math.pi
RELATIVE_TOLERANCE = 1e-4
TREE_BUDGET = 5000
SPLIT = metric.split_norm(1.0)


@dataclass(frozen=True)
class MotionEvidence:
    e_tree: float
    matched: float  # summed E of the matched joints
    unmatched_a: float  # summed E(J, J0) of A's unmatched joints
    unmatched_b: float
    exact: bool
    relation: str  # same, welded, changed
    welded_motion: float = 0.0  # own motion of the joints "welded" leaves unassigned


def joint_tree(rows) -> metric.Tree:
    """The metric tree of a joints-table slice (world-frame twists, metres)."""
    rows = list(rows)
    twist = np.array([r["twist"] for r in rows], dtype=float).reshape(-1, 6)
    lower = np.array([r["lower"] for r in rows], dtype=float)
    upper = np.array([r["upper"] for r in rows], dtype=float)
    return metric.Tree(
        [(r["parent"], r["child"]) for r in rows], metric.Joints(twist, lower, upper)
    )


def in_lengths(
    tree: metric.Tree,
    unit: float,
    rotation: np.ndarray | None = None,
    scale: float = 1.0,
    shift: np.ndarray | None = None,
) -> metric.Tree:
    """A `joint_tree` turned by `rotation` (3x3), scaled, then moved by `shift` (a point p
    goes to scale * rotation @ p + shift, in metres), with its lengths then in units of `unit`
    metres. With B's box diagonal as the unit, E_tree is free of the objects' size: a small
    part's axis moved (a bottle cap's thread) weighs as much as a large one's."""
    twist = tree.joints.twist.copy()
    if rotation is not None:
        twist = np.concatenate([twist[:, :3] @ rotation.T, twist[:, 3:] @ rotation.T], axis=1)
    twist[:, 3:] *= scale  # a twist's linear part scales with length
    if shift is not None:  # v = -w x q: moving q by t adds t x w
        twist[:, 3:] += np.cross(shift, twist[:, :3])
    twist[:, 3:] /= unit
    return tree.with_joints(metric.Joints(twist, tree.joints.lower, tree.joints.upper))


def _kappa(a: metric.Tree, b: metric.Tree) -> float | None:
    return KAPPA if any((~t.joints.bounded).any() for t in (a, b)) else None


def _tolerance(a: metric.Tree, b: metric.Tree, kappa) -> tuple[float, np.ndarray, np.ndarray]:
    """(tolerance, E(J, J0) of A's joints, of B's joints)."""
    own_a = metric.distance_to_fixed(a.joints, SPLIT, kappa) if len(a) else np.zeros(0)
    own_b = metric.distance_to_fixed(b.joints, SPLIT, kappa) if len(b) else np.zeros(0)
    tol = RELATIVE_TOLERANCE * max(float(own_a.sum()), float(own_b.sum()), 1e-9)
    return tol, own_a, own_b


def could_agree(a: metric.Tree, b: metric.Tree) -> bool:
    """False only when A and B can be neither "same" nor "welded" (see the module)."""
    kappa = _kappa(a, b)
    tol, own_a, own_b = _tolerance(a, b, kappa)
    moving_a, moving_b = ~a.joints.fixed, ~b.joints.fixed
    (small, own), big = (
        ((a.joints[moving_a], own_a[moving_a]), b.joints[moving_b])
        if moving_a.sum() <= moving_b.sum()
        else ((b.joints[moving_b], own_b[moving_b]), a.joints[moving_a])
    )
    if len(small) == 0:
        return True
    if len(big) == 0:
        return bool((own <= tol).all())
    nearest = metric.joint_distance_matrix(small, big, SPLIT, kappa).min(axis=1)
    return bool((np.minimum(nearest, own) <= tol * (1 + 1e-9)).all())


#: `could_agree_any_yaw`: how far two joints' invariants may differ (axis z components; limit
#: ranges and pitches relative to the larger); the height of a horizontal hinge line, relative
#: to the larger object's box diagonal: HEIGHT_TOLERANCE.
INVARIANT_TOLERANCE = 0.01
HEIGHT_TOLERANCE = 0.001
HORIZONTAL = 1e-6  # |z component| of a horizontal axis


def invariants(rows) -> np.ndarray:
    """Per moving joint, what a turn about z and a shift leave: (prismatic, |z component of
    the axis|, range of motion, pitch, height of the line of a horizontal rotational axis or
    NaN); computed once per object, lengths scaled by `could_agree_any_yaw`."""
    out = []
    for r in rows:
        twist = np.asarray(r["twist"], dtype=float)
        turn = float(np.linalg.norm(twist[:3]))
        lower, upper = float(r["lower"]), float(r["upper"])
        height = math.nan
        if turn > 0:
            axis, pitch, per_unit = twist[:3] / turn, float(twist[:3] @ twist[3:]) / turn**2, turn
            if abs(axis[2]) <= HORIZONTAL:  # v = -w x q: w x v / |w|^2 is q's height then
                height = float(np.cross(twist[:3], twist[3:])[2]) / turn**2
        else:
            slide = float(np.linalg.norm(twist[3:]))
            if slide == 0:
                continue  # a fixed joint
            axis, pitch, per_unit = twist[3:] / slide, 0.0, slide
        span = (upper - lower) * per_unit if math.isfinite(upper - lower) else math.inf
        out.append((float(turn == 0), abs(axis[2]), span, pitch, height))
    return np.array(out, dtype=float).reshape(-1, 5)


def _scaled(inv: np.ndarray, scale: float) -> np.ndarray:
    """Invariants with their lengths times `scale` (a prismatic joint's range, pitches,
    heights)."""
    out = inv.copy()
    out[:, 2] *= np.where(inv[:, 0] == 1.0, scale, 1.0)
    out[:, 3:] *= scale
    return out


def could_agree_any_yaw(a_inv, b_inv, scale: float, length: float) -> bool:
    """A cheap necessary test of "same" or "welded" before the yaw is known, from the objects'
    `invariants` (A's lengths times `scale` are B's; `length`: the larger box diagonal): every
    moving joint of the object with fewer has a joint in the other of its kind with the same
    axis tilt, range of motion and pitch (within INVARIANT_TOLERANCE) and, for a horizontal
    hinge, at the same height (within HEIGHT_TOLERANCE of `length`), or moves less than
    INVARIANT_TOLERANCE of the largest range."""
    ia, ib = _scaled(a_inv, scale), b_inv
    small, big = (ia, ib) if len(ia) <= len(ib) else (ib, ia)
    if len(small) == 0:
        return True
    finite = np.concatenate([small[:, 2], big[:, 2]])
    finite = finite[np.isfinite(finite)]
    largest = float(finite.max()) if len(finite) else 0.0
    if len(big) == 0:
        return bool((small[:, 2] <= INVARIANT_TOLERANCE * largest).all())
    s, b = small[:, None, :], big[None, :, :]
    both_unbounded = np.isinf(s[..., 2]) & np.isinf(b[..., 2])
    with np.errstate(invalid="ignore"):
        span = both_unbounded | (
            np.abs(s[..., 2] - b[..., 2]) <= INVARIANT_TOLERANCE * np.maximum(s[..., 2], b[..., 2])
        )
    pitch = np.abs(s[..., 3] - b[..., 3]) <= INVARIANT_TOLERANCE * np.maximum(
        np.maximum(np.abs(s[..., 3]), np.abs(b[..., 3])), 1e-9
    )
    heights = (np.isnan(s[..., 4]) & np.isnan(b[..., 4])) | (
        np.abs(s[..., 4] - b[..., 4]) <= HEIGHT_TOLERANCE * length
    )
    close = (
        (s[..., 0] == b[..., 0])
        & (np.abs(s[..., 1] - b[..., 1]) <= INVARIANT_TOLERANCE)
        & span
        & pitch
        & heights
    )
    still = small[:, 2] <= INVARIANT_TOLERANCE * largest
    return bool((close.any(axis=1) | still).all())


def motion_evidence(a: metric.Tree, b: metric.Tree) -> MotionEvidence:
    """E_tree(A, B) and how it splits (see the module)."""
    kappa = _kappa(a, b)
    found = metric.tree_distance(a, b, SPLIT, kappa=kappa, budget=TREE_BUDGET)
    tol, own_a, own_b = _tolerance(a, b, kappa)
    pairs = list(found.matching)
    matched = 0.0
    if pairs:
        i, k = (np.array(x, dtype=np.int64) for x in zip(*pairs, strict=True))
        matched = float(metric.joint_distance(a.joints[i], b.joints[k], SPLIT, kappa).sum())
    used_a = {i for i, _ in pairs}
    used_b = {k for _, k in pairs}
    unmatched_a = float(sum(own_a[i] for i in range(len(a)) if i not in used_a))
    unmatched_b = float(sum(own_b[k] for k in range(len(b)) if k not in used_b))
    welded = None
    relation = "same" if found.value <= tol else "changed"
    if relation == "changed":
        welded = _welded_motion(a, b, kappa, tol)
        relation = "welded" if welded is not None else "changed"
    return MotionEvidence(
        float(found.value),
        matched,
        unmatched_a,
        unmatched_b,
        bool(found.exact),
        relation,
        welded or 0.0,
    )


def _welded_motion(a: metric.Tree, b: metric.Tree, kappa, tol: float) -> float | None:
    """The own motion of the other's unassigned joints when every moving joint of the object
    with fewer is a distinct joint of the other within `tol`, else None."""
    ja, jb = a.joints[~a.joints.fixed], b.joints[~b.joints.fixed]
    small, big = (ja, jb) if len(ja) <= len(jb) else (jb, ja)
    if len(small) == len(big):
        return None
    if len(small) == 0:
        return float(metric.distance_to_fixed(big, SPLIT, kappa).sum())
    cost = metric.joint_distance_matrix(small, big, SPLIT, kappa)
    rows, cols = linear_sum_assignment(cost)
    if cost[rows, cols].max() > tol:
        return None
    rest = np.setdiff1d(np.arange(len(big)), cols)
    return float(metric.distance_to_fixed(big[rest], SPLIT, kappa).sum())
