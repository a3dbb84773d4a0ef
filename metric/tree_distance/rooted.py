"""E^tree as the reference package computes it (joints compared as given): the best-first
search, the relaxation and the skeleton distance D_lambda."""

from __future__ import annotations

import heapq

import numpy as np

from metric.joint_distance import joint_distance_matrix
from metric.tree import Tree
from metric.tree_distance.bounds import _subtree_bound
from metric.tree_distance.budget import _REPAIR_EVERY, _TOLERANCE, _budget, _Budgeted, _dense
from metric.tree_distance.realizability import _conflict, _pattern, _realizable_contracted
from metric.tree_distance.relaxation import _max_matching, _Problem, _problem
from metric.tree_distance.results import Assignment, TreeDistance


class _Search(_Budgeted):
    """Best-first branch and bound over realizable matchings, in savings (maximized)."""

    def __init__(self, problem: _Problem, deadline: float | None, max_nodes: int | None):
        # Best-first search expands the same nodes whatever the incumbent, so greedy repairs
        # during the search only improve the value returned when a budget runs out.
        self.anytime = deadline is not None or max_nodes is not None
        self.side1 = _dense(problem.t1.contracted.side)
        self.side2 = _dense(problem.t2.contracted.side)
        self.savings = problem.savings
        self.allowed = self.savings > 0.0
        self.tolerance = _TOLERANCE * float(problem.del1.sum() + problem.del2.sum())
        self.deadline = deadline
        self.max_nodes = max_nodes
        self.timed_out = False
        self.nodes = 0
        self.best = 0.0
        self.best_pairs: list = []
        self._heap: list = []
        self._counter = 0

    # -- consistency of fixed pairs

    def _fix(self, compat: np.ndarray, fixed: list, pair) -> np.ndarray:
        """Candidate pairs still consistent after adding `pair` to the consistent set `fixed`."""
        i, k = pair
        compat = compat.copy()
        compat[i, :] = False
        compat[:, k] = False
        if not fixed:
            return compat
        fa = np.array([a for a, _ in fixed])
        fb = np.array([b for _, b in fixed])
        bits1 = _pattern(self.side1, i, fa)
        bits2 = _pattern(self.side2, k, fb)
        same = (bits1[:, None, :] == bits2[None, :, :]).all(axis=2)
        return compat & same

    def _consistent(self, pairs: list, pair) -> bool:
        """Is `pairs` + [pair] realizable, given that `pairs` is?"""
        if len(pairs) < 2:
            return True
        j, l = pair
        ca = np.array([a for a, _ in pairs])
        cb = np.array([b for _, b in pairs])
        s1, s2 = self.side1, self.side2
        # j between a and b; b between j and a (covers a between j and b by symmetry).
        x1 = s1[j, ca][:, None] != s1[j, ca][None, :]
        x2 = s2[l, cb][:, None] != s2[l, cb][None, :]
        y1 = s1[ca, j][None, :] != s1[np.ix_(ca, ca)].T
        y2 = s2[cb, l][None, :] != s2[np.ix_(cb, cb)].T
        off = ~np.eye(len(pairs), dtype=bool)
        return bool(np.all(x1 == x2) and np.all((y1 == y2) | ~off))

    # -- nodes

    def _evaluate(self, fixed: list, fixed_savings: float, compat, forbid) -> None:
        """Solve a node's relaxation; record feasible matchings; queue it if still open."""
        self.nodes += 1
        weights = np.where(self.allowed & compat & ~forbid, self.savings, 0.0)
        bound, free = _max_matching(weights)
        bound += fixed_savings
        if bound <= self.best + self.tolerance:
            return
        pairs = fixed + free
        conflict = None
        if len(pairs) > 2:
            # Branch on the conflict among the most valuable free pairs (fixed ones count as
            # unbounded): about half the nodes of taking the first conflict found.
            strength = np.array([self.savings[p] for p in pairs])
            strength[: len(fixed)] = np.inf
            conflict = _conflict(self.side1, self.side2, pairs, strength)
        if conflict is None:
            self.best, self.best_pairs = bound, pairs
            return
        if self.anytime and self.nodes % _REPAIR_EVERY == 0:
            self.repair(fixed, fixed_savings, free)
        if bound <= self.best + self.tolerance:
            return
        self._counter += 1
        node = (fixed, fixed_savings, compat, forbid, [pairs[p] for p in conflict])
        heapq.heappush(self._heap, (-bound, self._counter, node))

    def repair(self, fixed: list, fixed_savings: float, free: list) -> None:
        """Greedy feasible matching: the fixed pairs plus free pairs by decreasing savings."""
        pairs, total = list(fixed), fixed_savings
        for pair in sorted(free, key=lambda p: -self.savings[p]):
            if self._consistent(pairs, pair):
                pairs.append(pair)
                total += self.savings[pair]
        if total > self.best:
            self.best, self.best_pairs = total, pairs

    def _branch(self, node) -> None:
        fixed, fixed_savings, compat, forbid, triple = node
        free = sorted((p for p in triple if p not in fixed), key=lambda p: -self.savings[p])
        for j, pair in enumerate(free):
            child_forbid = forbid.copy()
            child_forbid[pair] = True
            child_fixed, child_savings, child_compat = list(fixed), fixed_savings, compat
            for earlier in free[:j]:
                if not child_compat[earlier]:
                    return  # no realizable matching holds all of free[:j]: later children empty
                child_compat = self._fix(child_compat, child_fixed, earlier)
                child_fixed.append(earlier)
                child_savings += self.savings[earlier]
            self._evaluate(child_fixed, child_savings, child_compat, child_forbid)

    def run(self, start_pairs: list) -> float:
        """Search from the root (seeded with a greedy repair of `start_pairs`); returns the best
        upper bound on savings still possible (== self.best when the search finished)."""
        n1, n2 = self.savings.shape
        self.repair([], 0.0, start_pairs)
        self._evaluate([], 0.0, np.ones((n1, n2), dtype=bool), np.zeros((n1, n2), dtype=bool))
        while self._heap:
            neg_bound, _, node = self._heap[0]
            if -neg_bound <= self.best + self.tolerance or self._ceiling_reached():
                self._heap.clear()
                break
            if self._out_of_budget():
                return min(-neg_bound, self.ceiling)
            heapq.heappop(self._heap)
            self._branch(node)
        return self.best


# --------------------------------------------------------------------------- public API


def assignment_distance(t1: Tree, t2: Tree, norm, kappa: float | None = None) -> Assignment:
    """The assignment relaxation of E^tree (contraction costs E(J, J0), substitution E) with its
    optimal matching and the realizability certificate. `norm`: a (6, 6) Gram, or a pair of
    per-joint stacks (G1 (N1, 6, 6), G2 (N2, 6, 6)); substitution (i, k) uses G2[k]."""
    problem = _problem(t1, t2, norm, kappa)
    _, pairs = _max_matching(np.maximum(problem.savings, 0.0))
    return Assignment(
        value=problem.value(pairs),
        matching=problem.original(pairs),
        certified=_realizable_contracted(t1, t2, pairs),
    )


def tree_distance(
    t1: Tree, t2: Tree, norm, kappa: float | None = None, exact: bool = True, budget=None
) -> TreeDistance:
    """E^tree(T1, T2) (E^phi,tree when `kappa` is given), trees unrooted up to relabeling.

    norm: one (6, 6) Gram, or a pair (G1 (N1, 6, 6), G2 (N2, 6, 6)) of per-joint Grams indexed by
    the original joints of each tree: substituting J1[i] by J2[k] is measured in G2[k] (the
    second tree is the reference), contracting or expanding a joint in its own Gram.
    exact: search until the value is proven optimal; False returns the relaxation as lower bound
    with a greedy realizable matching as value (exact only when certified).
    budget: None (no limit), an int number of search nodes or a float number of seconds; when
    it runs out the result holds the best value and lower bound so far with exact=False. A node
    budget gives the same result on any machine; a time budget does not (`time_limited` says
    when it stopped the search), so use it only interactively, never for reported scores.

    This is the distance the reference package computes: each joint is compared as given,
    whatever the orientation of its edge, so a tree and the same object re-rooted at another
    link are in general at a positive distance. `unrooted_tree_distance` is invariant under the
    choice of base link.
    """
    deadline, max_nodes = _budget(budget)
    problem = _problem(t1, t2, norm, kappa)
    savings = problem.savings
    relax_savings, relax_pairs = _max_matching(np.maximum(savings, 0.0))
    relaxation = problem.value(relax_pairs)
    if _realizable_contracted(t1, t2, relax_pairs):
        return TreeDistance(
            value=relaxation,
            lower_bound=relaxation,
            relaxation=relaxation,
            certified=True,
            exact=True,
            matching=problem.original(relax_pairs),
            nodes_explored=1,
        )
    search = _Search(problem, deadline, max_nodes)
    search.subtree_bound = _subtree_bound(t1, t2, savings, oriented=False)
    if exact:
        upper_savings = search.run(relax_pairs)
    else:
        search.repair([], 0.0, relax_pairs)
        upper_savings = relax_savings
    value = problem.value(search.best_pairs)
    proven = upper_savings <= search.best + search.tolerance
    base = float(problem.del1.sum() + problem.del2.sum())
    return TreeDistance(
        value=value,
        lower_bound=value if proven else max(relaxation, base - upper_savings),
        relaxation=relaxation,
        certified=False,
        exact=bool(proven),
        matching=problem.original(search.best_pairs),
        nodes_explored=max(1, search.nodes),
        time_limited=search.timed_out,
    )


def skeleton_distance(a, b, norm, penalty: float, kappa: float | None = None) -> float:
    """The constant-penalty skeleton distance D_lambda: optimal assignment of the moving joints
    with E as substitution cost and `penalty` (lambda >= 0) per unmatched joint. `a`, `b` are
    Trees or Joints batches (exactly fixed joints are left out); `norm` a single (6, 6) Gram."""
    penalty = float(penalty)
    if not (np.isfinite(penalty) and penalty >= 0.0):
        raise ValueError(f"penalty must be finite and >= 0, got {penalty}")
    j1 = a.joints if isinstance(a, Tree) else a
    j2 = b.joints if isinstance(b, Tree) else b
    j1, j2 = j1[~j1.fixed], j2[~j2.fixed]
    cost = joint_distance_matrix(j1, j2, norm, kappa)
    _, pairs = _max_matching(np.maximum(2.0 * penalty - cost, 0.0))
    matched = float(sum(cost[i, k] for i, k in pairs))
    return matched + penalty * (len(j1) + len(j2) - 2 * len(pairs))
