"""The tree lift E^tree, its assignment relaxation, the realizability certificate, an exact
branch and bound, and the constant-penalty skeleton distance D_lambda.

After contracting exactly fixed edges, every edit sequence T1 ~> T2 reduces to: contract the
edges of T1 that do not survive, substitute the survivors, expand the edges T2 needs. So

    E^tree(T1, T2) = min over realizable matchings M of
                     sum_{(i,k) in M} E(J1_i, J2_k) + sum_{unmatched J} E(J, J0),

where M (a partial one-to-one matching of edges) is realizable when contracting every unmatched
edge of both trees leaves two trees that are isomorphic with matched edges corresponding.
`tree_distance` compares every matched joint as given (the reference package's distance, which
depends on the choice of base link through the orientation of the joints);
`unrooted_tree_distance` (at the end of this module) compares a joint with its partner's
inverse where the matching reverses their edge, which makes the base link free.

Writing savings S_ik = E(J1_i, J0) + E(J0, J2_k) - E(J1_i, J2_k), E^tree = (all contraction
costs) - max over realizable M of the summed savings. Dropping realizability gives the
assignment relaxation (a lower bound, one Hungarian solve). Realizability is decided two ways:

- whole matching: two edge-labelled trees are isomorphic iff they have the same family of
  node incidence sets (the sets of edge labels meeting at each node), checked in linear time;
- during the search: M is realizable iff for every three matched pairs the betweenness agrees
  (edge z lies on the path between x and y in T1 iff its partner does in T2), because
  contraction keeps betweenness and, for trees, the edge adjacency determines the tree.

Realizability is inherited by sub-matchings, so the exact search is a branch and bound over
matchings: each node fixes some pairs and forbids others, its bound is the relaxation restricted
to pairs consistent with the fixed ones (a valid upper bound on savings), and a violated triple
in the relaxation's matching splits the node into three disjoint children (forbid the first
pair; fix it and forbid the second; fix both and forbid the third). Search ends when no open node
can beat the best realizable matching found, which is then optimal (up to a relative tolerance
of 1e-12 on the savings).

Rooting both trees, realizable matchings are the ancestry-preserving ones, i.e. unordered tree
edit mappings with contraction as node deletion; that problem is NP-hard (Zhang, Statman and
Shasha 1992), so no per-node-pair assignment DP is exact for it (such a DP computes the
constrained distance, a restriction). A DP over node pairs that relaxes instead of restricting
gives a second upper bound on the savings (`_subtree_bound`): much tighter than the assignment
bound on trees with many equal joints (it is exact on corrupted copies of a keyboard), weaker
than needed on unrelated random trees. Both searches try it once, after `_CERTIFY_AFTER` nodes;
the unrooted search also tightens each node with fixed pairs by a one-rooting version of it
before branching the node (`_OrientedSearch.rooted_bound`).
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy.optimize import linear_sum_assignment

from metric.joint_distance import distance_to_fixed, joint_distance_matrix
from metric.norms import gram_factor
from metric.tree import Tree, node_classes

#: Relative tolerance on savings below which the search treats values as equal.
_TOLERANCE = 1e-12
#: With a budget, repair a node's relaxation into a realizable matching every this many nodes.
_REPAIR_EVERY = 8
#: The unrooted search probes every candidate pair once it has expanded this many nodes.
_PROBE_AFTER = 200
#: Both searches try the subtree bound (`_subtree_bound`) once they have expanded this many.
_CERTIFY_AFTER = 200
#: The searches store the side and child-side matrices of trees with at most this many moving
#: joints (read row by row at every node); larger trees compute the entries they ask for.
_DENSE_RELATION = 2000
#: The unrooted search tabulates which oriented pairs exclude each other (a bool matrix and its
#: complement, 8 MB at the limit) when there are at most this many (2 n1 n2: two orientations
#: of each pair).
_EXCLUSION_TABLE = 2048
#: Search nodes a node's rooted bound (`_OrientedSearch.rooted_bound`) counts for: it costs
#: about as much CPU time as three assignment relaxations on 20-joint trees (130 µs).
_ROOTED_NODES = 3


@dataclass(frozen=True)
class TreeDistance:
    """Result of `tree_distance`.

    value: cost of the best realizable matching found (E^tree itself when `exact`).
    lower_bound: a proven lower bound on E^tree (equal to `value` when `exact`).
    relaxation: the assignment relaxation (a lower bound, no realizability constraint).
    certified: the relaxation's optimal matching is realizable, so E^tree == relaxation.
    exact: `value` is proven optimal (certified, or the search finished within its budget).
    matching: [(i, k), ...] original joint indices of T1 and T2 matched by `value`'s matching.
    nodes_explored: relaxations solved by the search (1 when certified), plus one per rooting
    of the second tree when the subtree bound was computed.
    inverted: the pairs of `matching` whose edges the matching maps onto each other oriented
    the other way, so J1[i] was compared with the inverse of J2[k] (`unrooted_tree_distance`
    only; always empty for `tree_distance`).
    time_limited: a wall-clock budget stopped the search, so value and lower_bound depend on
    the machine's speed and load (never the case with a node budget).
    """

    value: float
    lower_bound: float
    relaxation: float
    certified: bool
    exact: bool
    matching: list = field(default_factory=list)
    nodes_explored: int = 0
    inverted: list = field(default_factory=list)
    time_limited: bool = False


@dataclass(frozen=True)
class Assignment:
    """The assignment relaxation: its value (a lower bound on E^tree), its optimal matching in
    original joint indices, and whether that matching is realizable (then value == E^tree)."""

    value: float
    matching: list
    certified: bool


# --------------------------------------------------------------------------- costs


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


# --------------------------------------------------------------------------- realizability


def _incidence_family(n_nodes, u, v, matched_edges) -> set:
    """Node incidence sets (by matching position) of the tree left after contracting every edge
    not listed in `matched_edges` (edge indices into u, v)."""
    merged = np.ones(len(u), dtype=bool)
    merged[matched_edges] = False
    labels = node_classes(n_nodes, u, v, merged)
    incident: dict = {}
    for position, edge in enumerate(matched_edges):
        incident.setdefault(labels[u[edge]], set()).add(position)
        incident.setdefault(labels[v[edge]], set()).add(position)
    return {frozenset(s) for s in incident.values()}


def _realizable_contracted(t1: Tree, t2: Tree, pairs) -> bool:
    if len(pairs) <= 2:
        return True
    c1, c2 = t1.contracted, t2.contracted
    e1 = np.array([i for i, _ in pairs])
    e2 = np.array([k for _, k in pairs])
    return _incidence_family(len(c1.u) + 1, c1.u, c1.v, e1) == _incidence_family(
        len(c2.u) + 1, c2.u, c2.v, e2
    )


def _to_contracted(tree: Tree, joints, which: str) -> np.ndarray:
    """Contracted indices of original joint indices; ValueError for fixed (contracted) joints."""
    position = np.full(len(tree), -1, dtype=np.int64)
    position[tree.contracted.moving] = np.arange(len(tree.contracted.moving))
    joints = np.asarray(joints, dtype=np.int64)
    if joints.size and (joints.min() < 0 or joints.max() >= len(tree)):
        raise ValueError(f"matching refers to joints outside the {which} tree")
    out = position[joints]
    if (out < 0).any():
        raise ValueError(f"matching uses exactly fixed joints of the {which} tree")
    return out


def matching_realizable(t1: Tree, t2: Tree, matching) -> bool:
    """Does `matching` [(i, k), ...] (original joint indices, moving joints only, one-to-one)
    extend to an isomorphism of the two trees with every unmatched edge contracted?"""
    matching = [(int(i), int(k)) for i, k in matching]
    if len({i for i, _ in matching}) != len(matching) or len({k for _, k in matching}) != len(
        matching
    ):
        raise ValueError("a matching pairs each joint at most once")
    a = _to_contracted(t1, [i for i, _ in matching], "first")
    b = _to_contracted(t2, [k for _, k in matching], "second")
    return _realizable_contracted(t1, t2, list(zip(a.tolist(), b.tolist(), strict=True)))


def _betweenness(side: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """(s, s, s) bool: for z not in {x, y}, between[x, y, z] = edge z lies strictly on the path
    between edges x and y (entries with z in {x, y} depend on the rooting: mask them)."""
    sub = side[edges][:, edges].T  # sub[x, z] = side[z, x]
    return sub[:, None, :] != sub[None, :, :]


@lru_cache(maxsize=64)
def _distinct_triples(s: int) -> np.ndarray:
    """(s, s, s) mask of the entries [x, y, z] with z != x and z != y."""
    index = np.arange(s)
    return (index[None, None, :] != index[:, None, None]) & (
        index[None, None, :] != index[None, :, None]
    )


def _conflict(side1, side2, pairs, strength=None):
    """Positions (x, y, z) in `pairs` of a triple whose betweenness differs, or None. With
    `strength` (one value per pair) the triple whose weakest pair is strongest is chosen."""
    e1 = np.array([i for i, _ in pairs])
    e2 = np.array([k for _, k in pairs])
    diff = _betweenness(side1, e1) != _betweenness(side2, e2)
    diff &= _distinct_triples(len(pairs))
    if not diff.any():
        return None
    triples = np.argwhere(diff)
    best = 0 if strength is None else int(np.argmax(strength[triples].min(axis=1)))
    return tuple(int(x) for x in triples[best])


# --------------------------------------------------------------------------- search


def _pattern(side: np.ndarray, new: int, fixed: np.ndarray) -> np.ndarray:
    """(n, 3 m) betweenness of every candidate edge j against the new edge and each fixed edge
    a: is j between new and a, is a between j and new, is new between j and a."""
    below = side[:, [new]]  # side[j, new]
    above = side[[new], :].T  # side[new, j]
    j_between = below != side[:, fixed]
    a_between = side[fixed, new][None, :] != side[fixed, :].T
    new_between = side[new, fixed][None, :] != above
    return np.hstack([j_between, a_between, new_between])


# --------------------------------------------------------------------------- subtree bound


@dataclass(frozen=True)
class _Rooting:
    """A contracted tree rooted at one of its nodes. Nodes are contracted node classes;
    `edge[x]` is the edge joining x to its parent (-1 at the root), `away[e]` says edge e is
    stored oriented away from the root, and `levels` lists (nodes, children, starts) by height,
    leaves first: the children of the level's nodes grouped by parent, `starts` the offsets of
    the groups (every node of a level above 0 has children)."""

    root: int
    edge: np.ndarray
    away: np.ndarray
    levels: list


def _rooting(u: np.ndarray, v: np.ndarray, root: int) -> _Rooting:
    n = len(u) + 1
    neighbours: list = [[] for _ in range(n)]
    for e, (a, b) in enumerate(zip(u.tolist(), v.tolist(), strict=True)):
        neighbours[a].append((b, e))
        neighbours[b].append((a, e))
    parent = np.full(n, -1, dtype=np.int64)
    edge = np.full(n, -1, dtype=np.int64)
    away = np.zeros(len(u), dtype=bool)
    children: list = [[] for _ in range(n)]
    order, seen = [root], np.zeros(n, dtype=bool)
    seen[root] = True
    for x in order:
        for y, e in neighbours[x]:
            if not seen[y]:
                seen[y] = True
                parent[y], edge[y], away[e] = x, e, u[e] == x
                children[x].append(y)
                order.append(y)
    height = np.zeros(n, dtype=np.int64)
    for x in reversed(order):
        if parent[x] >= 0:
            height[parent[x]] = max(height[parent[x]], height[x] + 1)
    levels = []
    for h in range(int(height.max()) + 1):
        nodes = np.flatnonzero(height == h)
        kids = [children[x] for x in nodes.tolist()]
        starts = np.cumsum([0] + [len(k) for k in kids[:-1]]).astype(np.int64)
        flat = np.array([c for k in kids for c in k], dtype=np.int64)
        levels.append((nodes, flat, starts))
    return _Rooting(root, edge, away, levels)


def _rooted_bound(r1: _Rooting, r2: _Rooting, savings: np.ndarray) -> float:
    """Upper bound on the savings of every matching that is realizable with the root class of
    T1 (rooted at r1) mapped onto the class holding r2; `savings` (n1, n2) per edge pair.

    With both trees rooted, a realizable matching is a one-to-one matching of edges (named by
    their lower nodes) that preserves ancestry. For node pairs (x, y), with the relaxation that
    the parts of a matching under different children of x (or of y) may reuse nodes of the
    other tree:
      F[x, y]  bounds matchings between the edges strictly below x and strictly below y:
               min(sum over children c of x of A[c, y], sum over children d of y of B[x, d]);
      A[c, y]  bounds matchings of c's edge and those below it into the edges below y: c
               unmatched (F[c, y]) or matched to some d below y (S[c, d] + F[c, d]);
      B[x, d]  the same with the roles of the trees exchanged.
    The bound is F[r1, r2]. Leaf rows and columns are 0; all values are >= 0.
    """
    n1, n2 = len(r1.edge), len(r2.edge)
    node_savings = np.zeros((n1, n2))
    m1, m2 = np.flatnonzero(r1.edge >= 0), np.flatnonzero(r2.edge >= 0)
    node_savings[np.ix_(m1, m2)] = savings[np.ix_(r1.edge[m1], r2.edge[m2])]
    f, a, b, g = (np.zeros((n1, n2)) for _ in range(4))
    for height1, (xs, kids1, starts1) in enumerate(r1.levels):
        if height1 == 0:
            h = np.zeros((len(xs), n2))
        else:
            sa = np.add.reduceat(a[kids1], starts1, axis=0)
            h = np.maximum.reduceat(g[kids1], starts1, axis=0)
        fx, bx = np.zeros((len(xs), n2)), np.zeros((len(xs), n2))
        bx[:, r2.levels[0][0]] = h[:, r2.levels[0][0]]
        if height1 > 0:
            for ys, kids2, starts2 in r2.levels[1:]:
                sb = np.add.reduceat(bx[:, kids2], starts2, axis=1)
                fx[:, ys] = np.minimum(sa[:, ys], sb)
                bx[:, ys] = np.maximum(fx[:, ys], h[:, ys])
        value = node_savings[xs] + fx
        below = np.zeros((len(xs), n2))  # max of `value` over the nodes strictly below y
        for ys, kids2, starts2 in r2.levels[1:]:
            below[:, ys] = np.maximum.reduceat(
                np.maximum(value[:, kids2], below[:, kids2]), starts2, axis=1
            )
        f[xs], b[xs] = fx, bx
        a[xs] = np.maximum(fx, below)
        g[xs] = np.maximum(value, h)
    return float(f[r1.root, r2.root])


def _preorder_ranges(r: _Rooting) -> tuple:
    """(order, ranges) of a rooting: its nodes in depth-first preorder, then for the node at
    each preorder position and for one more column n (kept zero by `_one_sided_bound`) the
    range [start, end) of positions of its strict descendants, flattened for
    `np.maximum.reduceat` ([n, 0) where there are none, which reads the zero column)."""
    n = len(r.edge)
    children: list = [[] for _ in range(n)]
    for xs, kids, starts in r.levels[1:]:
        for x, group in zip(xs.tolist(), np.split(kids, starts[1:]), strict=True):
            children[x] = group.tolist()
    order, stack = [], [r.root]
    while stack:
        x = stack.pop()
        order.append(x)
        stack.extend(reversed(children[x]))
    size = np.ones(n, dtype=np.int64)
    for x in reversed(order):
        for c in children[x]:
            size[x] += size[c]
    start = np.arange(n + 1) + 1
    end = np.append(np.arange(n) + size[order], 0)
    # No descendants (and the zero column): a decreasing pair, so reduceat reads column n.
    ranges = np.stack([np.where(end > start, start, n), end], axis=1).reshape(-1)
    return np.array(order, dtype=np.int64), ranges


def _one_sided_bound(r1: _Rooting, ranges2: tuple, node_savings: np.ndarray) -> float:
    """`_rooted_bound` relaxed further, without the second tree's decomposition: F[x, y] is
    only the sum over the children c of x of A[c, y] (the minimum with the sum over the
    children of y dropped), so F is larger and still a bound, and a node of the first tree
    takes one step for all nodes of the second (its subtrees are ranges of the preorder).
    `node_savings` (n1, n2 + 1): rows the first tree's nodes, columns the second's in
    preorder (its root first) and a zero column; `ranges2` its `_preorder_ranges`."""
    _, ranges = ranges2
    n1, m = node_savings.shape
    a = np.zeros((n1, m))
    f = np.zeros((1, m))
    for height1, (xs, kids1, starts1) in enumerate(r1.levels):
        f = np.zeros((len(xs), m)) if height1 == 0 else np.add.reduceat(a[kids1], starts1, axis=0)
        value = node_savings[xs] + f
        a[xs] = np.maximum(f, np.maximum.reduceat(value, ranges, axis=1)[:, ::2])
    return float(f[0, 0])


def _subtree_bound(t1: Tree, t2: Tree, savings: np.ndarray, oriented: bool) -> tuple:
    """(rootings, bound): an upper bound on the savings of every realizable matching, the
    maximum of `_rooted_bound` over the nodes of T2 (T1 rooted at its first node class; some
    node of T2 lies in the class T1's root class maps onto). `savings` is (n1, n2), or with
    `oriented` (2, n1, n2) by orientation (the unrooted distance): a pair is then priced in the
    orientation the rootings give it. Returns a callable, so the cost is paid only if used."""
    c1, c2 = t1.contracted, t2.contracted

    def bound() -> float:
        r1 = _rooting(c1.u, c1.v, 0)
        best = 0.0
        for root in range(len(c2.u) + 1):
            r2 = _rooting(c2.u, c2.v, root)
            priced = savings
            if oriented:
                flipped = r1.away[:, None] != r2.away[None, :]
                priced = np.where(flipped, savings[1], savings[0])
            best = max(best, _rooted_bound(r1, r2, np.maximum(priced, 0.0)))
        return best

    return len(c2.u) + 1, bound


class _Budgeted:
    """A search's budget: `nodes` explored so far against `max_nodes`, and a `deadline`
    (time.perf_counter) that sets `timed_out` when it passes; and the subtree bound, tried once
    (after `_CERTIFY_AFTER` nodes, or earlier on a small budget) at one node per rooting it
    evaluates, if the budget can pay for them (`ceiling`: its value, an upper bound on the
    savings; inf before)."""

    nodes: int
    max_nodes: int | None
    deadline: float | None
    timed_out: bool
    best: float
    tolerance: float
    subtree_bound: tuple | None = None
    ceiling: float = np.inf

    def _ceiling_reached(self) -> bool:
        """Has the incumbent reached the subtree bound (computing it first when due: after
        `_CERTIFY_AFTER` nodes, or earlier so that its rootings still fit in the budget)?"""
        if self.subtree_bound is not None:
            rootings, bound = self.subtree_bound
            due = _CERTIFY_AFTER
            if self.max_nodes is not None:
                # A branching adds up to three nodes between two checks.
                due = min(due, self.max_nodes - rootings - 3)
            if self.nodes >= due:
                self.subtree_bound = None
                if self.max_nodes is None or self.nodes + rootings <= self.max_nodes:
                    self.nodes += rootings
                    self.ceiling = bound()
        return self.ceiling <= self.best + self.tolerance

    def _out_of_budget(self, step: int = 1) -> bool:
        """Would `step` more nodes exceed the node budget, or has the deadline passed?"""
        if self.max_nodes is not None and self.nodes + step > self.max_nodes:
            return True
        if self.deadline is not None and time.perf_counter() > self.deadline:
            self.timed_out = True
            return True
        return False


def _dense(relation):
    """A side or child-side matrix as a numpy array when it is small enough (the search reads it row
    by row at every node), else the computed-on-indexing relation itself."""
    return np.asarray(relation) if len(relation) <= _DENSE_RELATION else relation


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


def _budget(budget) -> tuple[float | None, int | None]:
    """(deadline, max_nodes) of a search budget: None, an int number of nodes or float seconds."""
    if budget is None:
        return None, None
    if isinstance(budget, (bool, np.bool_)) or not isinstance(
        budget, (int, float, np.integer, np.floating)
    ):
        raise ValueError(f"budget must be seconds (float) or search nodes (int), got {budget}")
    if budget <= 0:
        raise ValueError(f"budget must be > 0, got {budget}")
    if isinstance(budget, (int, np.integer)):
        return None, int(budget)
    return time.perf_counter() + float(budget), None


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


# --------------------------------------------------------------------------- unrooted


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
