"""Kinematic trees for the tree lift: edges between hashable node ids, one joint per edge.

Trees are unrooted (the base link is not special) and node ids only name nodes. Exactly fixed
edges (E(J, J0) == 0: zero twist or limits [0, 0]) are contracted before any comparison; the
contracted tree keeps the moving joints, the node classes they join, and a side matrix:
side[z, e] is True when edge e lies below edge z once the tree is rooted at an arbitrary node.
Edge z lies on the path between edges x and y exactly when side[z, x] != side[z, y]. The side
and child-side matrices are never stored: they are computed from each edge's interval in a
depth-first order for the entries asked for (`EdgeRelation`), so a 40,000-joint tree takes
memory linear in its joints, not 1.6 GB per matrix.

Each edge is also oriented, parent to child: its joint is the motion of the child relative to
the parent. head[z, e] is True when edge e lies on the child side of edge z; it does not depend
on any rooting. Re-rooting a tree at another link (`Tree.reroot`) reverses the edges on the path
to the new base and inverts their joints, which the unrooted distance treats as the same object.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components, depth_first_order

from metric.joints import Joints


def _graph(n_nodes: int, u: np.ndarray, v: np.ndarray):
    return coo_matrix((np.ones(len(u)), (u, v)), shape=(n_nodes, n_nodes)).tocsr()


def node_classes(n_nodes: int, u: np.ndarray, v: np.ndarray, merged: np.ndarray) -> np.ndarray:
    """(n_nodes,) class label of each node after contracting the edges selected by `merged`."""
    _, labels = connected_components(_graph(n_nodes, u[merged], v[merged]), directed=False)
    return labels


@dataclass(frozen=True)
class Contracted:
    """The moving part of a tree: `moving` holds the original joint indices of the kept edges,
    `u`, `v` their end classes (parent, child), `side` the (m, m) side matrix and `head` the
    (m, m) child-side matrix (see the module docstring)."""

    moving: np.ndarray
    u: np.ndarray
    v: np.ndarray
    side: EdgeRelation
    head: EdgeRelation


class Tree:
    """A kinematic tree: `edges` [(parent, child), ...] with hashable node ids and `joints`, the
    Joints batch holding one joint per edge in the same order.

    Raises ValueError unless the edges form a tree (connected, no cycle, no self-loop) with as
    many joints as edges. A tree without edges (a single link) is allowed.
    """

    def __init__(self, edges, joints: Joints):
        edges = [tuple(e) for e in edges]
        if any(len(e) != 2 for e in edges):
            raise ValueError("every edge must be a (parent, child) pair")
        if len(edges) != len(joints):
            raise ValueError(f"{len(edges)} edges but {len(joints)} joints")
        index: dict = {}
        for parent, child in edges:
            if parent == child:
                raise ValueError(f"edge ({parent!r}, {child!r}) joins a node to itself")
            index.setdefault(parent, len(index))
            index.setdefault(child, len(index))
        self.edges = tuple(edges)
        self.joints = joints
        self.nodes = tuple(index)
        self.u = np.array([index[p] for p, _ in edges], dtype=np.int64)
        self.v = np.array([index[c] for _, c in edges], dtype=np.int64)
        if edges:
            if len(index) != len(edges) + 1:
                raise ValueError(
                    f"edges do not form a tree: {len(edges)} edges on {len(index)} nodes "
                    "(a tree has one node more than edges; duplicate edges or a cycle?)"
                )
            count, _ = connected_components(_graph(len(index), self.u, self.v), directed=False)
            if count != 1:
                raise ValueError(f"edges do not form a tree: {count} separate parts")

    def __len__(self) -> int:
        return len(self.edges)

    @cached_property
    def contracted(self) -> Contracted:
        """The tree with its exactly fixed edges contracted (computed once per tree)."""
        fixed = self.joints.fixed
        moving = np.flatnonzero(~fixed)
        if len(moving) == 0:
            empty = np.zeros(0, dtype=np.int64)
            none = EdgeRelation(empty, empty, np.zeros(0, dtype=bool))
            return Contracted(moving, empty, empty, none, none)
        labels = node_classes(len(self.nodes), self.u, self.v, fixed)
        u, v = labels[self.u[moving]], labels[self.v[moving]]
        start, end, toward_root = _edge_intervals(u, v)
        side = EdgeRelation(start, end, np.zeros(len(u), dtype=bool))
        # An edge pointing towards node 0 has its child side above it, not below.
        return Contracted(moving, u, v, side, EdgeRelation(start, end, toward_root))

    def with_joints(self, joints: Joints) -> Tree:
        """The same edges carrying `joints` instead (as many: a turned or rescaled copy of the
        object), without checking the edges again; the contraction (`contracted`) is computed
        once and shared when the same joints are fixed."""
        if len(joints) != len(self.edges):
            raise ValueError(f"{len(self.edges)} edges but {len(joints)} joints")
        out = object.__new__(Tree)
        out.edges, out.nodes, out.u, out.v = self.edges, self.nodes, self.u, self.v
        out.joints = joints
        if np.array_equal(joints.fixed, self.joints.fixed):  # contracted alike: share it
            out.__dict__["contracted"] = self.contracted
        return out

    def reroot(self, base) -> Tree:
        """The same object with `base` (a node id) as its base link: every edge on the path
        from the base outwards is oriented away from it, and an edge that had to be reversed
        carries its joint's inverse (`Joints.inverse`). Edge order is kept."""
        if base not in self.nodes:
            raise ValueError(f"{base!r} is not a link of the tree")
        if not self.edges:
            return self
        start = self.nodes.index(base)
        _, parent = depth_first_order(
            _graph(len(self.nodes), self.u, self.v), start, directed=False
        )
        flip = parent[self.u] == self.v  # the edge's parent end lies below its child end
        edges = [(c, p) if f else (p, c) for (p, c), f in zip(self.edges, flip, strict=True)]
        twist = np.where(flip[:, None], -self.joints.twist, self.joints.twist)
        return Tree(edges, Joints(twist, self.joints.lower, self.joints.upper))


class EdgeRelation:
    """A boolean (m, m) matrix over the edges, computed on indexing instead of stored:
    entry [z, e] is True when edge e lies strictly below edge z (its depth-first position is
    inside z's subtree interval [start, end)), negated for the rows where `flip` is set.
    Indexed like a numpy array (integers, slices, index arrays, np.ix_); `np.asarray` gives
    the whole matrix."""

    def __init__(self, start: np.ndarray, end: np.ndarray, flip: np.ndarray):
        self.start, self.end, self.flip = start, end, flip
        self.shape = (len(start), len(start))

    def __len__(self) -> int:
        return self.shape[0]

    def _entries(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        position = self.start[cols]
        inside = (self.start[rows] < position) & (position < self.end[rows])
        return inside ^ self.flip[rows]

    def __getitem__(self, key) -> np.ndarray:
        if not isinstance(key, tuple):
            key = (key, slice(None))
        if len(key) != 2:
            raise IndexError("an edge relation takes two indices")
        everything = np.arange(self.shape[0])
        rows, cols = everything[key[0]], everything[key[1]]
        if isinstance(key[0], slice) or isinstance(key[1], slice):  # an outer product
            rows = rows.reshape(rows.shape + (1,) * cols.ndim)
        return self._entries(rows, cols)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self[:, :]
        return out if dtype is None else out.astype(dtype)


def _edge_intervals(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, toward_root) per edge, in the tree rooted at node 0: the depth-first
    positions of the subtree below the edge are start..end-1 (its lower end first), so edge e
    lies strictly below edge z when start[z] < start[e] < end[z]; toward_root[z] when edge z's
    parent end u is below its end v."""
    n_nodes = len(u) + 1
    order, parent = depth_first_order(_graph(n_nodes, u, v), 0, directed=False)
    position = np.empty(n_nodes, dtype=np.int64)
    position[order] = np.arange(n_nodes)
    size = np.ones(n_nodes, dtype=np.int64)
    for node in order[:0:-1]:  # children before parents, root last (skipped)
        size[parent[node]] += size[node]
    lower = np.where(parent[v] == u, v, u)  # the end of each edge away from the root
    start = position[lower]
    return start, start + size[lower], lower == u
