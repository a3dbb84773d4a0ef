"""The edit costs of two trees and the assignment relaxation (one Hungarian solve)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from metric.joint_distance import distance_to_fixed, joint_distance_matrix
from metric.norms import gram_factor
from metric.tree import Tree


def _tree_grams(norm, t1: Tree, t2: Tree):
    """(gram for T1's joints, gram for T2's joints): one shared Gram, or a pair of per-joint
    Gram stacks indexed by the original joints of each tree."""
    if isinstance(norm, (tuple, list)):
        if len(norm) != 2:
            raise ValueError("per-joint norms for two trees are a pair (G1, G2)")
        g1, _ = gram_factor(norm[0], len(t1), "norm of the first tree")
        g2, _ = gram_factor(norm[1], len(t2), "norm of the second tree")
        if g1.ndim != g2.ndim:
            raise ValueError("a norm pair holds per-joint Grams (N1, 6, 6) and (N2, 6, 6)")
        return g1, g2
    gram, _ = gram_factor(norm, what="norm")
    if gram.ndim == 3:
        raise ValueError(
            "per-joint Grams for trees must be a pair (G1 (N1, 6, 6), G2 (N2, 6, 6)), one stack "
            "per tree"
        )
    return gram, gram


def _select(gram: np.ndarray, index: np.ndarray) -> np.ndarray:
    return gram if gram.ndim == 2 else gram[index]


@dataclass
class _Problem:
    """Contracted trees with their costs: cost (n1, n2) substitution, del1/del2 contraction."""

    t1: Tree
    t2: Tree
    cost: np.ndarray
    del1: np.ndarray
    del2: np.ndarray

    @property
    def savings(self) -> np.ndarray:
        return self.del1[:, None] + self.del2[None, :] - self.cost

    def value(self, pairs) -> float:
        """Edit cost of a matching given in contracted indices."""
        keep1 = np.ones(len(self.del1), dtype=bool)
        keep2 = np.ones(len(self.del2), dtype=bool)
        total = 0.0
        for i, k in pairs:
            total += self.cost[i, k]
            keep1[i] = keep2[k] = False
        return float(total + self.del1[keep1].sum() + self.del2[keep2].sum())

    def original(self, pairs) -> list:
        m1, m2 = self.t1.contracted.moving, self.t2.contracted.moving
        return sorted((int(m1[i]), int(m2[k])) for i, k in pairs)


def _problem(t1: Tree, t2: Tree, norm, kappa) -> _Problem:
    g1, g2 = _tree_grams(norm, t1, t2)
    c1, c2 = t1.contracted, t2.contracted
    j1, j2 = t1.joints[c1.moving], t2.joints[c2.moving]
    return _Problem(
        t1,
        t2,
        joint_distance_matrix(j1, j2, _select(g2, c2.moving), kappa),
        distance_to_fixed(j1, _select(g1, c1.moving), kappa),
        distance_to_fixed(j2, _select(g2, c2.moving), kappa),
    )


def _max_matching(weights: np.ndarray):
    """Maximum-weight matching of a non-negative matrix: (total, [(row, col), ...]) over the
    entries > 0 it uses."""
    if weights.size == 0:
        return 0.0, []
    rows, cols = linear_sum_assignment(weights, maximize=True)
    used = weights[rows, cols] > 0.0
    rows, cols = rows[used], cols[used]
    return float(weights[rows, cols].sum()), list(zip(rows.tolist(), cols.tolist(), strict=True))
