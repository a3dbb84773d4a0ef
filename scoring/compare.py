"""One predicted object against its ground truth.

1. The exact unrooted tree distance E^{phi,tree} (split norm; the base link is free, so a
   prediction rooted at another part is not charged for it) with its optimal matching of
   moving joints (`match_trees`). Its edit script substitutes every matched pair and contracts
   (or expands) every other moving joint, so E^{phi,tree} = sum of the pair costs
   E^phi(J_pred, J_gt) plus the unmatched joints' costs E^phi(J, J0); a matched predicted joint
   whose edge is reversed relative to the ground truth's enters as its inverse (the parent
   moving relative to the child).
2. The component pairs for the prior protocol: the matched pairs, with ties among identical
   joints broken by joint-origin distance (`break_ties`: identical joints, e.g. three equal
   drawers, can be matched in any order at the same E, but the prior scores can tell them
   apart), plus pairs between an exactly fixed joint and an unmatched moving joint of the
   other tree (`fixed_pairs`). Such a pair
   costs E^phi(J, J0) whether it is read as a substitution or as a contraction, so adding it
   leaves the edit script's cost unchanged; it is added only where the extended matching is
   still realizable (structurally consistent). This is how a joint predicted as fixed where
   the truth is revolute (or the reverse) shows up as a type error.
3. Per-object values (`object_values`): prior scores averaged over the component pairs,
   E_B over the pairs with finite limits on both sides under the ground-truth child link's
   kinetic-energy norm, E^phi as the mean of the edit script's terms, and E^{phi,tree}.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from metric import (
    ComponentScores,
    JointParameters,
    Joints,
    Tree,
    TreeDistance,
    component_scores,
    distance_to_fixed,
    joint_distance,
    kinetic_norms,
    matching_orientation,
    matching_realizable,
    split_norm,
    unrooted_tree_distance,
)
from scoring.objects import Kinematics

#: Thresholds of the prior protocol's success indicator (Articulate-Anything).
TAU_AXIS = 0.25  # rad
TAU_ORIGIN = 0.05  # m
#: Search nodes of the exact tree distance per object at most: a node budget (never a time
#: budget), so scores do not depend on machine load; a search it stops is reported (tree_exact
#: false). Large trees get fewer nodes (`search_budget`).
TREE_NODE_BUDGET = 50_000


@dataclass(frozen=True)
class TreeMatch:
    """The exact tree distance between a prediction (first) and a ground truth (second).

    result: metric.TreeDistance (value, certified, exact, matching, nodes_explored).
    pairs: matched (pred index, gt index), indices into each object's joint list.
    pair_cost: E (or E^phi) of each matched pair.
    unmatched_pred, unmatched_gt: moving joints left out of the matching, with their costs
    E(J, J0) in unmatched_pred_cost, unmatched_gt_cost.
    inverted: (pairs,) True where the predicted joint enters as its inverse (its edge is
    reversed relative to its partner's).
    """

    result: TreeDistance
    pairs: list[tuple[int, int]]
    inverted: np.ndarray
    pair_cost: np.ndarray
    unmatched_pred: np.ndarray
    unmatched_pred_cost: np.ndarray
    unmatched_gt: np.ndarray
    unmatched_gt_cost: np.ndarray

    @property
    def terms(self) -> np.ndarray:
        """Every cost of the edit script: matched pairs, then unmatched joints."""
        return np.concatenate([self.pair_cost, self.unmatched_pred_cost, self.unmatched_gt_cost])


def _grams(norm, n_pred: int, n_gt: int):
    """(per pred joint, per gt joint) Gram stacks from a single Gram or a pair of stacks."""
    if isinstance(norm, (tuple, list)):
        return np.asarray(norm[0], dtype=float), np.asarray(norm[1], dtype=float)
    gram = np.asarray(norm, dtype=float)
    return np.broadcast_to(gram, (n_pred, 6, 6)), np.broadcast_to(gram, (n_gt, 6, 6))


#: Search nodes x joint pairs one comparison may cost (a node costs about N1 x N2): about 20,000
#: nodes for 12 x 12 joints, 300 for 100 x 100, a few seconds either way.
SEARCH_WORK = 3_000_000
MIN_SEARCH_NODES = 100


def search_budget(n_pred: int, n_gt: int) -> int:
    """The node budget of the exact search between trees of n_pred and n_gt joints."""
    return min(TREE_NODE_BUDGET, max(MIN_SEARCH_NODES, SEARCH_WORK // max(1, n_pred * n_gt)))


def match_trees(pred: Kinematics, gt: Kinematics, norm, kappa: float | None) -> TreeMatch:
    """The exact unrooted E^tree (E^{phi,tree} with `kappa`) from `pred` to `gt` and its edit
    script, within `search_budget` search nodes.

    norm: a (6, 6) Gram, or a pair (pred Grams (N1, 6, 6), gt Grams (N2, 6, 6)); a matched
    pair is measured in the ground-truth joint's Gram, an unmatched joint in its own.
    The search stops at `search_budget` nodes: the result then says exact=False, its value is
    the best matching found and its relaxation a lower bound.
    """
    budget = search_budget(len(pred), len(gt))
    result = unrooted_tree_distance(pred.tree, gt.tree, norm, kappa, budget=budget)
    return edit_script(result, pred, gt, result.matching, norm, kappa)


def oriented_pairs(pred: Kinematics, gt: Kinematics, pairs, gram_gt, kappa):
    """(predicted joints of the matched `pairs`, inverted (P,) bool): a predicted joint is
    inverted where the matching maps its edge onto a ground-truth edge oriented the other way;
    a single pair takes the closer of the joint and its inverse (either is realizable).
    `gram_gt`: the (P, 6, 6) Grams of the pairs."""
    p = np.array([i for i, _ in pairs], dtype=np.int64)
    g = np.array([k for _, k in pairs], dtype=np.int64)
    signs = matching_orientation(pred.tree, gt.tree, pairs)
    if signs is None:
        raise ValueError("the matching is not realizable")
    joints = pred.joints[p]
    inverted = signs < 0
    free = signs == 0
    if free.any():
        same = joint_distance(joints[free], gt.joints[g[free]], gram_gt[free], kappa)
        other = joint_distance(joints[free].inverse(), gt.joints[g[free]], gram_gt[free], kappa)
        inverted[free] = other < same
    twist = np.where(inverted[:, None], -joints.twist, joints.twist)
    return Joints(twist, joints.lower, joints.upper), inverted


def edit_script(result, pred: Kinematics, gt: Kinematics, pairs, norm, kappa) -> TreeMatch:
    """The TreeMatch of `result` with the matching `pairs` (the tree's own, or one of equal cost
    such as `break_ties` gives): pair costs, unmatched moving joints and their costs."""
    g_pred, g_gt = _grams(norm, len(pred), len(gt))
    p = np.array([i for i, _ in pairs], dtype=np.int64)
    g = np.array([k for _, k in pairs], dtype=np.int64)
    joints, inverted = oriented_pairs(pred, gt, pairs, g_gt[g], kappa)
    pair_cost = joint_distance(joints, gt.joints[g], g_gt[g], kappa)
    left_pred = np.setdiff1d(np.flatnonzero(pred.moving), p)
    left_gt = np.setdiff1d(np.flatnonzero(gt.moving), g)
    return TreeMatch(
        result=result,
        pairs=[(int(i), int(k)) for i, k in zip(p, g, strict=True)],
        inverted=inverted,
        pair_cost=pair_cost,
        unmatched_pred=left_pred,
        unmatched_pred_cost=distance_to_fixed(pred.joints[left_pred], g_pred[left_pred], kappa),
        unmatched_gt=left_gt,
        unmatched_gt_cost=distance_to_fixed(gt.joints[left_gt], g_gt[left_gt], kappa),
    )


def _structure(kin: Kinematics) -> Tree:
    """The same tree with every edge moving (placeholder joints): realizability only depends on
    which edges are matched, so fixed edges can be matched in this copy."""
    n = len(kin)
    twist = np.zeros((n, 6))
    twist[:, 0] = 1.0
    return Tree(kin.tree.edges, Joints(twist, np.zeros(n), np.ones(n)))


def fixed_pairs(pred: Kinematics, gt: Kinematics, pairs: list[tuple[int, int]]) -> list:
    """Pairs (pred, gt) of an exactly fixed joint and an unmatched moving joint of the other
    tree that extend `pairs` realizably, chosen greedily by the distance between the two joint
    frame origins (ties by index). See the module docstring."""
    used_pred = {i for i, _ in pairs}
    used_gt = {k for _, k in pairs}
    moving_pred, moving_gt = pred.moving, gt.moving
    candidates = [
        (float(np.linalg.norm(pred.point[i] - gt.point[k])), i, k)
        for i in range(len(pred))
        if i not in used_pred
        for k in range(len(gt))
        if k not in used_gt and moving_pred[i] != moving_gt[k]
    ]
    if not candidates:
        return []
    structure_pred, structure_gt = _structure(pred), _structure(gt)
    matching, added = list(pairs), []
    for _, i, k in sorted(candidates):
        if i in used_pred or k in used_gt:
            continue
        if matching_realizable(structure_pred, structure_gt, [*matching, (i, k)]):
            matching.append((i, k))
            added.append((i, k))
            used_pred.add(i)
            used_gt.add(k)
    return added


def _identical_groups(kin: Kinematics) -> list[np.ndarray]:
    """Moving joints grouped by identical twist and limits (to 1e-9), groups of two or more."""
    moving = np.flatnonzero(kin.moving)
    joints = kin.joints
    key = np.column_stack([joints.twist[moving], joints.lower[moving], joints.upper[moving]])
    key = np.round(np.nan_to_num(key, posinf=1e15, neginf=-1e15), 9)
    if len(key) < 2:
        return []
    _, inverse, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    return [moving[inverse == c] for c in np.flatnonzero(counts > 1)]


def break_ties(pred: Kinematics, gt: Kinematics, pairs: list[tuple[int, int]]) -> list:
    """`pairs` with the partners of identical joints reassigned to minimize the summed distance
    between joint origins. Identical joints (same twist and limits, e.g. three equal drawers)
    are interchangeable in the edit script: matched or not, any assignment of them costs the
    same E. So for each group of identical ground-truth joints (then of identical predicted
    joints) the partners matched to the group are reassigned to the group's joints by an
    optimal assignment on origin distances, kept only if the matching stays realizable."""
    if not pairs:
        return []
    pairs = list(pairs)
    structure = None
    for side in (1, 0):  # ground-truth groups, then predicted groups
        kin, other = (gt, pred) if side == 1 else (pred, gt)
        for group in _identical_groups(kin):
            members = set(group.tolist())
            slots = [t for t, pair in enumerate(pairs) if pair[side] in members]
            if not slots:
                continue
            partners = np.array([pairs[t][1 - side] for t in slots])
            current = np.array([pairs[t][side] for t in slots])
            gap = np.linalg.norm(
                other.point[partners][:, None, :] - kin.point[group][None, :, :], axis=2
            )
            rows, cols = linear_sum_assignment(gap)
            now = np.linalg.norm(other.point[partners] - kin.point[current], axis=1).sum()
            if gap[rows, cols].sum() >= now - 1e-12:
                continue
            trial = list(pairs)
            for r, c in zip(rows, cols, strict=True):
                pair = [0, 0]
                pair[side], pair[1 - side] = int(group[c]), int(partners[r])
                trial[slots[r]] = (pair[0], pair[1])
            if structure is None:
                structure = (_structure(pred), _structure(gt))
            if matching_realizable(*structure, trial):
                pairs = trial
    return pairs


def tie_broken(match: TreeMatch, pred: Kinematics, gt: Kinematics, norm, kappa) -> TreeMatch:
    """`match` with `break_ties` applied, unless the new partners' edge orientations make it
    dearer (identical joints on edges of opposite orientation are not interchangeable)."""
    pairs = break_ties(pred, gt, match.pairs)
    if pairs == match.pairs:
        return match
    trial = edit_script(match.result, pred, gt, pairs, norm, kappa)
    total = float(match.terms.sum())
    return trial if trial.terms.sum() <= total + 1e-12 * total else match


@dataclass(frozen=True)
class Comparison:
    """A prediction against its ground truth (see the module docstring).

    match: the exact E^{phi,tree}_alpha and its edit script.
    pairs: component pairs (pred, gt): the matched pairs (ties broken), then the fixed pairs.
    fixed_pair: (P,) True for pairs added by `fixed_pairs`.
    scores: the (P,) prior scores, metric.ComponentScores (origin error of parallel rotating
    axes: the distance between the two lines, flagged in origin_parallel).
    e_phi: (P,) E^phi_alpha of each pair (for a fixed pair: the moving joint's E^phi(J, J0)),
    a predicted joint on a reversed edge entering as its inverse (as in the tree distance).
    finite: (P,) both joints have finite limits; e_b: (P,) E_B in metres where finite and the
    ground-truth child link has a valid mass distribution, NaN elsewhere.
    """

    match: TreeMatch
    pairs: list[tuple[int, int]]
    fixed_pair: np.ndarray
    e_phi: np.ndarray
    scores: ComponentScores
    finite: np.ndarray
    e_b: np.ndarray


def joint_parameters(kin: Kinematics, index) -> JointParameters:
    """The joints `index` of an object in the prior protocol's representation (world frame)."""
    return JointParameters(
        types=np.array(kin.types, dtype=object)[index].astype(str),
        axis=kin.axis[index],
        origin=kin.point[index],
        lower=kin.joints.lower[index],
        upper=kin.joints.upper[index],
    )


def compare(pred: Kinematics, gt: Kinematics, settings) -> Comparison:
    """Score `pred` against `gt`: exact E^{phi,tree}_alpha, component pairs, prior scores, E_B.
    `settings`: a `scoring.score.Settings` (alpha, kappa, tau_axis, tau_origin)."""
    kappa = settings.kappa
    gram = split_norm(settings.alpha)
    match = tie_broken(match_trees(pred, gt, gram, kappa), pred, gt, gram, kappa)
    matched = match.pairs
    pairs = matched + fixed_pairs(pred, gt, matched)
    p = np.array([i for i, _ in pairs], dtype=np.int64)
    g = np.array([k for _, k in pairs], dtype=np.int64)
    fixed_pair = np.arange(len(pairs)) >= len(matched)
    # Matched predicted joints as the tree compares them (inverted on reversed edges); an
    # exactly fixed joint is its own inverse.
    flip = np.concatenate([match.inverted, np.zeros(len(pairs) - len(matched), dtype=bool)])
    twist = np.where(flip[:, None], -pred.joints.twist[p], pred.joints.twist[p])
    oriented = Joints(twist, pred.joints.lower[p], pred.joints.upper[p])
    e_phi = joint_distance(oriented, gt.joints[g], gram, kappa)
    # The skew-line distance is undefined for parallel axes: use the distance between the two
    # parallel lines there (what the error tends to), so exact hinges are not failures.
    scores = component_scores(
        joint_parameters(pred, p),
        joint_parameters(gt, g),
        settings.tau_axis,
        settings.tau_origin,
        parallel="line",
    )
    finite = pred.joints.bounded[p] & gt.joints.bounded[g]
    e_b = np.full(len(pairs), np.nan)
    grams, valid = kinetic_norms(gt.mass, gt.com, gt.inertia)
    usable = finite & valid[g]
    if usable.any():
        e_b[usable] = joint_distance(oriented[usable], gt.joints[g[usable]], grams[g[usable]])
    return Comparison(
        match=match,
        pairs=pairs,
        fixed_pair=fixed_pair,
        e_phi=e_phi,
        scores=scores,
        finite=finite,
        e_b=e_b,
    )


def _mean(values: np.ndarray, scale: float = 1.0) -> float | None:
    """Mean of the defined (non-NaN) values, None when there is none."""
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    return float(values.mean() * scale) if len(values) else None


def object_values(c: Comparison, pred: Kinematics, gt: Kinematics) -> dict:
    """The per-object numbers of one comparison (columns of scores.parquet; None = undefined)."""
    terms = c.match.terms
    result = c.match.result
    s = c.scores
    n_joints = int(pred.moving.sum() + gt.moving.sum())
    return {
        "n_pred_joints": int(pred.moving.sum()),
        "n_gt_joints": int(gt.moving.sum()),
        "n_matched": len(c.match.pairs),
        "n_fixed_pairs": int(c.fixed_pair.sum()),
        "n_unmatched_pred": len(c.match.unmatched_pred),
        "n_unmatched_gt": len(c.match.unmatched_gt),
        "type_err_pct": _mean(s.type_error, 100.0),
        "origin_err_m": _mean(s.origin_error),
        "n_origin_parallel": int(s.origin_parallel.sum()),
        "axis_err_rad": _mean(s.axis_error),
        "limit_range": _mean(s.limit_range),
        "limit_dir": _mean(s.limit_direction),
        "succ_rate_pct": _mean(s.success.astype(float), 100.0),
        "n_finite_pairs": int(c.finite.sum()),
        "n_eb_pairs": int((~np.isnan(c.e_b)).sum()),
        "e_b_m": _mean(c.e_b),
        "e_phi": float(terms.mean()) if len(terms) else None,
        # Table 4's column: the edit distance per joint of both objects (docs/scoring.md).
        "e_tree": float(result.value) / n_joints if n_joints else None,
        "e_tree_edit": float(result.value),
        "e_tree_relaxation": float(result.relaxation),
        "tree_exact": bool(result.exact),
        "n_inverted": int(c.match.inverted.sum()),
        "certified": bool(result.certified),
        "search_nodes": int(result.nodes_explored),
        "exact": bool(result.exact),
        "pairs": [
            {
                "pred_joint": pred.names[i],
                "gt_joint": gt.names[k],
                "e_phi": float(cost),
                "fixed_pair": bool(fixed),
            }
            for (i, k), cost, fixed in zip(c.pairs, c.e_phi, c.fixed_pair, strict=True)
        ],
    }
