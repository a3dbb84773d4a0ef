"""Realizability of a matching: incidence families for a whole matching, betweenness
conflicts during the search."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from metric.tree import Tree, node_classes


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


def _pattern(side: np.ndarray, new: int, fixed: np.ndarray) -> np.ndarray:
    """(n, 3 m) betweenness of every candidate edge j against the new edge and each fixed edge
    a: is j between new and a, is a between j and new, is new between j and a."""
    below = side[:, [new]]  # side[j, new]
    above = side[[new], :].T  # side[new, j]
    j_between = below != side[:, fixed]
    a_between = side[fixed, new][None, :] != side[fixed, :].T
    new_between = side[new, fixed][None, :] != above
    return np.hstack([j_between, a_between, new_between])
