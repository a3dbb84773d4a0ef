"""The subtree bound: a DP over rooted node pairs that relaxes realizability (an upper bound on
the savings, tight on trees with many equal joints)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from metric.tree import Tree


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
