"""E^tree invariant under the choice of base link: a joint is compared with its partner's
inverse where the matching reverses their edge."""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.optimize import linear_sum_assignment

from metric.joint_distance import distance_to_fixed, joint_distance_matrix
from metric.tree import Tree
from metric.tree_distance.bounds import (
    _one_sided_bound,
    _preorder_ranges,
    _Rooting,
    _rooting,
    _subtree_bound,
)
from metric.tree_distance.budget import _REPAIR_EVERY, _TOLERANCE, _budget, _Budgeted, _dense
from metric.tree_distance.realizability import _to_contracted
from metric.tree_distance.relaxation import _select, _tree_grams
from metric.tree_distance.results import TreeDistance

#: The unrooted search probes every candidate pair once it has expanded this many nodes.
_PROBE_AFTER = 200
#: The unrooted search tabulates which oriented pairs exclude each other (a bool matrix and its
#: complement, 8 MB at the limit) when there are at most this many (2 n1 n2: two orientations
#: of each pair).
_EXCLUSION_TABLE = 2048
#: Search nodes a node's rooted bound (`_OrientedSearch.rooted_bound`) counts for: it costs
#: about as much CPU time as three assignment relaxations on 20-joint trees (130 µs).
_ROOTED_NODES = 3


@dataclass
class _Oriented:
    """The unrooted problem: costs[o] (n1, n2) of substituting J1[i] by J2[k] (o = 0) or by
    its inverse (o = 1), contraction costs del1, del2, and the child-side matrices."""

    t1: Tree
    t2: Tree
    costs: np.ndarray
    del1: np.ndarray
    del2: np.ndarray

    @property
    def savings(self) -> np.ndarray:
        return self.del1[None, :, None] + self.del2[None, None, :] - self.costs

    @property
    def base(self) -> float:
        return float(self.del1.sum() + self.del2.sum())

    def value(self, pairs) -> float:
        """Edit cost of oriented pairs (i, k, o) in contracted indices."""
        keep1 = np.ones(len(self.del1), dtype=bool)
        keep2 = np.ones(len(self.del2), dtype=bool)
        total = 0.0
        for i, k, o in pairs:
            total += self.costs[o, i, k]
            keep1[i] = keep2[k] = False
        return float(total + self.del1[keep1].sum() + self.del2[keep2].sum())

    def original(self, pairs) -> tuple[list, list]:
        """(matching, inverted pairs) in original joint indices."""
        m1, m2 = self.t1.contracted.moving, self.t2.contracted.moving
        matching = sorted((int(m1[i]), int(m2[k])) for i, k, _ in pairs)
        inverted = sorted((int(m1[i]), int(m2[k])) for i, k, o in pairs if o)
        return matching, inverted


def _oriented_problem(t1: Tree, t2: Tree, norm, kappa) -> _Oriented:
    g1, g2 = _tree_grams(norm, t1, t2)
    c1, c2 = t1.contracted, t2.contracted
    j1, j2 = t1.joints[c1.moving], t2.joints[c2.moving]
    g2m = _select(g2, c2.moving)
    costs = np.stack(
        [
            joint_distance_matrix(j1, j2, g2m, kappa),
            joint_distance_matrix(j1, j2.inverse(), g2m, kappa),
        ]
    )
    return _Oriented(
        t1,
        t2,
        costs,
        distance_to_fixed(j1, _select(g1, c1.moving), kappa),
        distance_to_fixed(j2, g2m, kappa),
    )


@lru_cache(maxsize=64)
def _upper_triangle(size: int) -> np.ndarray:
    """(size, size) mask of the entries above the diagonal."""
    return np.triu(np.ones((size, size), dtype=bool), 1)


def _orientation_conflicts(head1, head2, pairs) -> np.ndarray:
    """(P, P) bool: oriented pairs a, b (i, k, o) that no oriented isomorphism realizes together.

    For two matched edges x ~ x' and y ~ y', y lies on the child side of x iff y' lies on the
    child side of x' when x ~ x' keeps its orientation, and on the other side when it is
    reversed. Two trees whose matched edges split each other the same way are isomorphic with
    matched edges corresponding (the splits determine betweenness), so pairwise agreement of
    every two pairs is exactly realizability with the given orientations.
    """
    i, k, o = np.array(pairs, dtype=np.int64).reshape(-1, 3).T
    agree = head1[i[:, None], i[None, :]] == head2[k[:, None], k[None, :]]
    bad = agree == o.astype(bool)[:, None]
    np.fill_diagonal(bad, False)
    return bad | bad.T


def _exclusion_table(head1: np.ndarray, head2: np.ndarray) -> np.ndarray:
    """(P, P) bool over the P = 2 n1 n2 oriented pairs (flat index (o n1 + i) n2 + k): pairs
    that cannot both be in a matching, by `_orientation_conflicts` or by sharing an edge (so a
    pair excludes itself)."""
    n1, n2 = len(head1), len(head2)
    agree = head1[:, None, :, None] == head2[None, :, None, :]  # [i, k, j, l]
    bad = np.stack([~agree, agree]).reshape(2 * n1 * n2, 1, n1 * n2)
    table = np.broadcast_to(bad, (2 * n1 * n2, 2, n1 * n2)).reshape(2 * n1 * n2, -1)
    table = table | table.T
    same = (np.arange(n1)[:, None, None, None] == np.arange(n1)[None, None, :, None]) | (
        np.arange(n2)[None, :, None, None] == np.arange(n2)[None, None, None, :]
    )
    return table | np.tile(same.reshape(n1 * n2, n1 * n2), (2, 2))


class _OrientedSearch(_Budgeted):
    """Best-first branch and bound over oriented matchings, in savings (maximized).

    A node fixes some oriented pairs and allows others (allowed[o, i, k]); its bound is the
    assignment relaxation over allowed pairs with the better allowed orientation of each. Pair
    constraints are pairwise (see `_orientation_conflicts`), so a conflict between two pairs
    A, B of a node's relaxation splits it into three disjoint children: A fixed (which removes
    B and everything else A excludes), B fixed without A, and neither. (Two children, without
    A and with A, took 1.2 times the nodes on 40 random 20-joint pairs: the child without A
    may still hold B, and the same conflict comes back.)

    Inside the search an oriented pair (i, k, o) is its flat index (o n1 + i) n2 + k into
    `savings`; with at most `_EXCLUSION_TABLE` pairs, which pairs exclude which is tabulated
    once (`_exclusion_table`), so fixing a pair is one row lookup.

    A node with fixed pairs is branched only after its bound has been tightened once by
    `rooted_bound` (when it is first taken from the queue: pruned, or queued again with the
    smaller bound): the fixed pair roots both trees, so the subtree bound needs one rooting
    instead of one per node of T2. On the 40 random 20-joint pairs of bench/tree_exactness.py
    it cuts the assignment relaxations 4 to 10 times, and the CPU time of the slowest pairs
    by up to half.
    """

    def __init__(self, problem: _Oriented, deadline: float | None, max_nodes: int | None):
        self.anytime = deadline is not None or max_nodes is not None
        self.head1 = _dense(problem.t1.contracted.head)
        self.head2 = _dense(problem.t2.contracted.head)
        self.savings = problem.savings
        self.flat_savings = self.savings.reshape(-1)
        self.positive = self.savings > 0.0
        self.weights = np.where(self.positive, self.savings, 0.0)
        self.tolerance = _TOLERANCE * problem.base
        self.deadline = deadline
        self.max_nodes = max_nodes
        self.timed_out = False
        self.nodes = 0
        self.best = 0.0
        self.best_pairs: list = []
        self._heap: list = []
        self._counter = 0
        # Pairs that may still be part of a better matching (narrowed once by `probe`).
        self.useful = np.ones(self.savings.shape, dtype=bool)
        self.probed = False
        self.excluded = self.compatible = None
        self.edges = (problem.t1.contracted, problem.t2.contracted)
        self._rootings: tuple = ({}, {})

    def pairs(self, indices) -> list:
        """Oriented pairs [(i, k, o), ...] of flat indices."""
        _, n1, n2 = self.savings.shape
        orientation, rest = np.divmod(np.asarray(indices, dtype=np.int64), n1 * n2)
        rows, cols = np.divmod(rest, n2)
        return list(zip(rows.tolist(), cols.tolist(), orientation.tolist(), strict=True))

    def conflicts(self, indices: np.ndarray) -> np.ndarray:
        """(m, m) bool `_orientation_conflicts` of the pairs of a matching (flat indices); the
        diagonal may be True."""
        if self.compatible is not None:
            return self.excluded[indices[:, None], indices[None, :]]
        return _orientation_conflicts(self.head1, self.head2, self.pairs(indices))

    def relax(self, allowed: np.ndarray):
        """(total savings, flat indices of the pairs) of the relaxation over `allowed` pairs."""
        weights = np.where(allowed, self.weights, 0.0)
        best = np.maximum(weights[0], weights[1])
        if best.size == 0:
            return 0.0, np.zeros(0, dtype=np.int64)
        rows, cols = linear_sum_assignment(best, maximize=True)
        values = best[rows, cols]
        used = values > 0.0
        rows, cols = rows[used], cols[used]
        flipped = weights[1, rows, cols] > weights[0, rows, cols]
        n1, n2 = best.shape
        return float(values[used].sum()), (flipped * n1 + rows) * n2 + cols

    def _fix(self, allowed: np.ndarray, index: int) -> np.ndarray:
        """Pairs still allowed once oriented pair `index` is part of the matching."""
        if self.compatible is not None:
            return allowed & self.compatible[index].reshape(allowed.shape)
        ((i, k, o),) = self.pairs([index])
        # (j, l) must split like (i, k) does under o, and its own orientation is then forced.
        splits = (self.head1[i, :][:, None] == self.head2[k, :][None, :]) != bool(o)
        keeps = self.head1[:, i][:, None] == self.head2[:, k][None, :]
        out = allowed & splits[None]
        out[0] &= keeps
        out[1] &= ~keeps
        out[:, i, :] = False
        out[:, :, k] = False
        return out

    def _rooted(self, tree: int, root: int) -> tuple:
        """(rooting, ranges, edges) of tree 0 or 1 rooted at node class `root`, its nodes
        renamed by depth-first preorder: the `_Rooting`, its `_preorder_ranges`, and the edge
        above each node in preorder followed by -1 (the root's entry and a zero column)."""
        cache = self._rootings[tree]
        if root not in cache:
            contracted = self.edges[tree]
            rooting = _rooting(contracted.u, contracted.v, root)
            order, ranges = _preorder_ranges(rooting)
            rename = np.empty(len(order), dtype=np.int64)
            rename[order] = np.arange(len(order))
            levels = [(rename[xs], rename[kids], starts) for xs, kids, starts in rooting.levels]
            renamed = _Rooting(0, rooting.edge[order], rooting.away, levels)
            cache[root] = (renamed, (order, ranges), np.append(renamed.edge, -1))
        return cache[root]

    def rooted_bound(self, fixed: list, allowed: np.ndarray) -> float:
        """An upper bound on the savings of a node with fixed pairs (theirs included): both
        trees rooted at the ends of its first fixed pair, which every matching of the node
        maps onto each other, and the smaller of the two `_one_sided_bound`s."""
        i, k, o = self.pairs(fixed[:1])[0]
        r1, ranges1, edges1 = self._rooted(0, int(self.edges[0].u[i]))
        r2, ranges2, edges2 = self._rooted(1, int(self.edges[1].v[k] if o else self.edges[1].u[k]))
        weights = np.where(allowed, self.weights, 0.0)
        flipped = r1.away[:, None] != r2.away[None, :]
        priced = np.zeros((len(r1.away) + 1, len(r2.away) + 1))  # a zero row and column
        priced[:-1, :-1] = np.where(flipped, weights[1], weights[0])
        indices = np.asarray(fixed)
        rest = indices % weights[0].size
        priced[rest // weights.shape[2], rest % weights.shape[2]] = self.flat_savings[indices]
        node_savings = priced[edges1[:, None], edges2[None, :]]
        return min(
            _one_sided_bound(r1, ranges2, node_savings[:-1]),
            _one_sided_bound(r2, ranges1, node_savings.T[:-1]),
        )

    def _evaluate(self, fixed: list, fixed_savings: float, allowed: np.ndarray) -> None:
        self.nodes += 1
        bound, free = self.relax(allowed)
        bound += fixed_savings
        if bound <= self.best + self.tolerance:
            return
        conflict, bad = None, None
        if len(free) > 1:
            bad = self.conflicts(free)
            a, b = np.nonzero(bad & _upper_triangle(len(free)))
            if len(a):
                # The conflict between the most valuable pairs: branch on the stronger one.
                strength = self.flat_savings[free]
                t = int(np.argmax(np.minimum(strength[a], strength[b])))
                conflict = (int(free[a[t]]), int(free[b[t]]))
                if strength[a[t]] < strength[b[t]]:
                    conflict = conflict[::-1]
        if conflict is None:
            self.best, self.best_pairs = bound, self.pairs([*fixed, *free.tolist()])
            return
        if self.anytime and self.nodes % _REPAIR_EVERY == 0:
            self.repair(fixed, fixed_savings, free, bad)
        if bound <= self.best + self.tolerance:
            return
        self._counter += 1
        node = (fixed, fixed_savings, allowed, conflict, not fixed)
        heapq.heappush(self._heap, (-bound, self._counter, node))

    def repair(self, fixed: list, fixed_savings: float, free: np.ndarray, conflicts=None) -> None:
        """Greedy feasible matching: the fixed pairs plus free pairs by decreasing savings.
        `free` (flat indices) is a relaxation's matching over pairs allowed with `fixed` (so
        each free pair is compatible with every fixed one); `conflicts` their `conflicts`."""
        if len(free) == 0:
            total, taken = fixed_savings, []
        else:
            if conflicts is None:
                conflicts = self.conflicts(free)
            strength = self.flat_savings[free]
            i, k, o = np.array(self.pairs(free)).T
            order = np.lexsort((o, k, i, -strength))
            taken = np.zeros(len(free), dtype=bool)
            total = fixed_savings
            for p in order.tolist():
                if not (conflicts[p] & taken).any():
                    taken[p] = True
                    total += strength[p]
            taken = free[order[taken[order]]].tolist()
        if total > self.best:
            self.best, self.best_pairs = total, self.pairs([*fixed, *taken])

    def _branch(self, node) -> None:
        # Children: with A; with B (A is then excluded); with neither of the conflicting pair.
        fixed, fixed_savings, allowed, conflict, _ = node
        without = allowed & self.useful
        for index in conflict:
            self._evaluate(
                [*fixed, index],
                fixed_savings + self.flat_savings[index],
                self._fix(without, index),
            )
            without.reshape(-1)[index] = False
        self._evaluate(fixed, fixed_savings, without)

    def run(self, start: np.ndarray) -> float:
        """Search from the root (seeded with a greedy repair of the matching `start`, flat
        indices); returns the best upper bound on savings still possible (== self.best when
        the search finished)."""
        if 0 < self.savings.size <= _EXCLUSION_TABLE:
            self.excluded = _exclusion_table(self.head1, self.head2)
            self.compatible = ~self.excluded
        self.repair([], 0.0, start)
        self._evaluate([], 0.0, self.useful)
        while self._heap:
            neg_bound, _, node = self._heap[0]
            if -neg_bound <= self.best + self.tolerance or self._ceiling_reached():
                self._heap.clear()
                break
            if self.nodes >= _PROBE_AFTER and not self.probed:
                self.probed = True
                self.useful = self.probe(self.useful)
                continue  # the probes may have raised the incumbent or spent the budget
            # A branching evaluates three children; a rooted bound counts `_ROOTED_NODES`.
            if self._out_of_budget(3 if node[4] else _ROOTED_NODES):
                return min(-neg_bound, self.ceiling)
            heapq.heappop(self._heap)
            if not node[4]:
                # Tighten the node's bound with the rooted subtree bound before branching.
                self.nodes += _ROOTED_NODES
                rooted = self.rooted_bound(node[0], node[2])
                if rooted <= self.best + self.tolerance:
                    continue
                if rooted < -neg_bound:
                    self._counter += 1
                    heapq.heappush(self._heap, (-rooted, self._counter, (*node[:4], True)))
                    continue
            self._branch(node)
        return self.best

    def probe(self, allowed: np.ndarray) -> np.ndarray:
        """`allowed` without the pairs that cannot be part of a better matching: for each
        candidate by decreasing savings, the relaxation with it fixed bounds every matching
        holding it; each probe counts as a search node, and its relaxation is repaired into an
        incumbent (so later probes prune more)."""
        candidates = np.flatnonzero(allowed & self.positive)
        order = np.argsort(-self.flat_savings[candidates], kind="stable")
        allowed = allowed.copy()
        for index in candidates[order].tolist():
            if self._out_of_budget():
                break
            self.nodes += 1
            fixed = self.flat_savings[index]
            bound, free = self.relax(self._fix(allowed, index))
            if fixed + bound <= self.best + self.tolerance:
                allowed.reshape(-1)[index] = False
            else:
                self.repair([index], fixed, free)
        return allowed


def unrooted_tree_distance(
    t1: Tree, t2: Tree, norm, kappa: float | None = None, exact: bool = True, budget=None
) -> TreeDistance:
    """E^tree(T1, T2) (E^phi,tree with `kappa`) on representation-equivalence classes: up to
    relabeling, exactly fixed edges and the choice of base link.

    Each edge is oriented parent to child (its joint moves the child relative to the parent).
    Re-rooting a tree reverses the edges on the path to the new base and inverts their joints
    (endpoint pair negated), which describes the same object; so when a matching maps an edge
    onto an edge of the other tree oriented the other way, J1[i] is compared with the inverse
    of J2[k] (listed in `inverted`). Then E(T, T.reroot(l)) == 0 for every link l. With a
    single matched pair either orientation is allowed (the cheaper one is taken).

    Arguments and result as `tree_distance`: the relaxation takes the better orientation of
    each pair, and is certified when its oriented matching is realizable; otherwise the exact
    branch and bound runs (its constraints are pairwise, so a conflict splits a node in two).
    """
    deadline, max_nodes = _budget(budget)
    problem = _oriented_problem(t1, t2, norm, kappa)
    search = _OrientedSearch(problem, deadline, max_nodes)
    search.subtree_bound = _subtree_bound(t1, t2, problem.savings, oriented=True)
    relax_savings, relax_indices = search.relax(np.ones(problem.costs.shape, dtype=bool))
    relax_pairs = search.pairs(relax_indices)
    relaxation = problem.value(relax_pairs)
    if (
        len(relax_pairs) < 2
        or not (search.conflicts(relax_indices) & _upper_triangle(len(relax_pairs))).any()
    ):
        matching, inverted = problem.original(relax_pairs)
        return TreeDistance(
            value=relaxation,
            lower_bound=relaxation,
            relaxation=relaxation,
            certified=True,
            exact=True,
            matching=matching,
            nodes_explored=1,
            inverted=inverted,
        )
    if exact:
        upper_savings = search.run(relax_indices)
    else:
        search.repair([], 0.0, relax_indices)
        upper_savings = relax_savings
    value = problem.value(search.best_pairs)
    proven = upper_savings <= search.best + search.tolerance
    matching, inverted = problem.original(search.best_pairs)
    return TreeDistance(
        value=value,
        lower_bound=value if proven else max(relaxation, problem.base - upper_savings),
        relaxation=relaxation,
        certified=False,
        exact=bool(proven),
        matching=matching,
        nodes_explored=max(1, search.nodes),
        inverted=inverted,
        time_limited=search.timed_out,
    )


def matching_orientation(t1: Tree, t2: Tree, matching) -> np.ndarray | None:
    """(P,) int8 for a matching [(i, k), ...] of moving joints (original indices): +1 where
    the oriented isomorphism realizing it keeps the edge's orientation, -1 where it reverses
    it, 0 for a single pair (either way); None when the matching is not realizable."""
    matching = [(int(i), int(k)) for i, k in matching]
    a = _to_contracted(t1, [i for i, _ in matching], "first")
    b = _to_contracted(t2, [k for _, k in matching], "second")
    if len(matching) < 2:
        return np.zeros(len(matching), dtype=np.int8)
    if len(set(a.tolist())) != len(a) or len(set(b.tolist())) != len(b):
        raise ValueError("a matching pairs each joint at most once")
    head1, head2 = t1.contracted.head, t2.contracted.head
    agree = head1[np.ix_(a, a)] == head2[np.ix_(b, b)]
    off = ~np.eye(len(a), dtype=bool)
    keep = (agree | ~off).all(axis=1)
    flip = (~agree | ~off).all(axis=1)
    if not (keep | flip).all():
        return None
    return np.where(keep, 1, -1).astype(np.int8)
