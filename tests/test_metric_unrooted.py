"""The unrooted tree distance: invariance under the choice of base link, agreement with an
enumeration of oriented matchings, the metric axioms and its relation to the rooted distance."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import metric

ALPHA = metric.split_norm(1.0)


def _joints(rng, n, scale=1.0):
    lower = rng.normal(size=n)
    return metric.Joints(scale * rng.normal(size=(n, 6)), lower, lower + rng.exponential(size=n))


def _random_tree(rng, n, scale=1.0):
    parents = [int(rng.integers(0, j)) for j in range(1, n + 1)]
    edges = [(p, j) for j, p in zip(range(1, n + 1), parents, strict=True)]
    return metric.Tree(edges, _joints(rng, n, scale))


def _enumerated(t1, t2, gram, kappa=None):
    """Minimum over every realizable partial matching, each pair compared as the isomorphism
    orients it (found with matching_realizable, then matching_orientation); tiny trees only."""
    c1, c2 = t1.contracted.moving, t2.contracted.moving
    j1, j2 = t1.joints[c1], t2.joints[c2]
    same = metric.joint_distance_matrix(j1, j2, gram, kappa)
    inverse = metric.joint_distance_matrix(j1, j2.inverse(), gram, kappa)
    del1 = metric.distance_to_fixed(j1, gram, kappa)
    del2 = metric.distance_to_fixed(j2, gram, kappa)
    best = del1.sum() + del2.sum()
    for size in range(1, min(len(c1), len(c2)) + 1):
        for rows in itertools.combinations(range(len(c1)), size):
            for cols in itertools.permutations(range(len(c2)), size):
                pairs = [(c1[i], c2[k]) for i, k in zip(rows, cols, strict=True)]
                if not metric.matching_realizable(t1, t2, pairs):
                    continue
                signs = metric.matching_orientation(t1, t2, pairs)
                cost = 0.0
                for i, k, sign in zip(rows, cols, signs, strict=True):
                    options = {1: [same[i, k]], -1: [inverse[i, k]], 0: [same[i, k], inverse[i, k]]}
                    cost += min(options[int(sign)])
                best = min(best, cost + np.delete(del1, rows).sum() + np.delete(del2, cols).sum())
    return best


def test_reroot_inverts_the_reversed_joints_only():
    joints = metric.Joints(np.eye(6)[:3], [0.0, -1.0, 0.5], [1.0, 2.0, 0.7])
    tree = metric.Tree([("base", "a"), ("a", "b"), ("a", "c")], joints)
    moved = tree.reroot("b")
    assert moved.edges == (("a", "base"), ("b", "a"), ("a", "c"))
    assert np.array_equal(moved.joints.twist, np.eye(6)[:3] * [[-1], [-1], [1]])
    assert np.array_equal(moved.joints.lower, joints.lower)
    assert moved.reroot("base").edges == tree.edges
    with pytest.raises(ValueError, match="not a link"):
        tree.reroot("elsewhere")


def test_matches_enumeration_of_oriented_matchings():
    rng = np.random.default_rng(0)
    for _ in range(40):
        t1 = _random_tree(rng, int(rng.integers(1, 5)))
        t2 = _random_tree(rng, int(rng.integers(1, 5)))
        result = metric.unrooted_tree_distance(t1, t2, ALPHA)
        assert result.exact
        assert result.value == pytest.approx(_enumerated(t1, t2, ALPHA), rel=1e-12, abs=1e-12)
        assert result.lower_bound == result.value >= result.relaxation - 1e-12


def test_zero_against_every_rerooting_of_random_trees():
    rng = np.random.default_rng(1)
    for n in (1, 2, 5, 9, 14):
        for _ in range(3):
            tree = _random_tree(rng, n)
            other = _random_tree(rng, n)
            reference = metric.unrooted_tree_distance(tree, other, ALPHA).value
            for link in tree.nodes:
                moved = tree.reroot(link)
                result = metric.unrooted_tree_distance(tree, moved, ALPHA, kappa=np.pi)
                assert result.value == 0.0 and result.exact
                again = metric.unrooted_tree_distance(moved, other, ALPHA).value
                assert again == pytest.approx(reference, rel=1e-12)


def test_rooted_distance_is_not_invariant_but_unrooted_is():
    """The rooted distance (the reference package's) charges a re-rooted copy; at the child of
    the first joint of a chain, that joint's endpoint pair is negated."""
    joints = metric.Joints(np.eye(6)[:2], [0.0, 0.0], [1.5, 0.5])
    chain = metric.Tree([("base", "lid"), ("lid", "handle")], joints)
    moved = chain.reroot("lid")
    assert metric.tree_distance(chain, moved, ALPHA).value > 1.0
    result = metric.unrooted_tree_distance(chain, moved, ALPHA)
    assert result.value == 0.0 and result.certified
    assert result.inverted == [(0, 0)]


def test_symmetry_and_triangle_inequality_on_random_triples():
    rng = np.random.default_rng(2)
    for _ in range(40):
        t1, t2, t3 = (_random_tree(rng, int(rng.integers(1, 7))) for _ in range(3))
        d12 = metric.unrooted_tree_distance(t1, t2, ALPHA).value
        d21 = metric.unrooted_tree_distance(t2, t1, ALPHA).value
        d23 = metric.unrooted_tree_distance(t2, t3, ALPHA).value
        d13 = metric.unrooted_tree_distance(t1, t3, ALPHA).value
        assert d12 == pytest.approx(d21, rel=1e-12)
        assert d13 <= d12 + d23 + 1e-12 * (d12 + d23)
        # Re-rooting any of them changes nothing.
        moved = t3.reroot(t3.nodes[int(rng.integers(len(t3.nodes)))])
        assert metric.unrooted_tree_distance(t1, moved, ALPHA).value == pytest.approx(d13)


def test_equal_to_rooted_distance_when_roots_correspond():
    """A perturbed copy keeps its base link and edge orientations: the rooted optimum maps every
    edge onto a co-oriented one, and both distances agree."""
    rng = np.random.default_rng(3)
    for n in (2, 6, 12):
        for _ in range(4):
            tree = _random_tree(rng, n)
            j = tree.joints
            noisy = metric.Joints(
                j.twist + 0.01 * rng.normal(size=j.twist.shape),
                j.lower,
                j.upper + 0.01 * rng.random(n),
            )
            copy = metric.Tree(tree.edges, noisy)
            rooted = metric.tree_distance(copy, tree, ALPHA)
            unrooted = metric.unrooted_tree_distance(copy, tree, ALPHA)
            signs = metric.matching_orientation(copy, tree, rooted.matching)
            assert (signs >= 0).all()
            assert unrooted.value == pytest.approx(rooted.value, rel=1e-12)
            assert unrooted.inverted == []


def test_per_joint_norms_and_orientation_queries():
    rng = np.random.default_rng(4)
    t1, t2 = _random_tree(rng, 4), _random_tree(rng, 5)
    g1 = np.stack([metric.split_norm(a) for a in rng.uniform(0.5, 2.0, 4)])
    g2 = np.stack([metric.split_norm(a) for a in rng.uniform(0.5, 2.0, 5)])
    result = metric.unrooted_tree_distance(t1, t2, (g1, g2))
    assert result.exact and result.value > 0
    # The same tree rerooted, measured in the same per-joint Grams (edge order is kept).
    assert metric.unrooted_tree_distance(t2, t2.reroot(3), (g2, g2)).value == 0.0
    assert metric.matching_orientation(t1, t2, [(0, 0)]).tolist() == [0]
    star = metric.Tree([("c", 1), ("c", 2), ("c", 3)], _joints(rng, 3))
    path = metric.Tree([(0, 1), (1, 2), (2, 3)], _joints(rng, 3))
    assert metric.matching_orientation(star, path, [(0, 0), (1, 1), (2, 2)]) is None
    assert metric.matching_orientation(path, path.reroot(3), [(0, 0), (1, 1), (2, 2)]).tolist() == [
        -1,
        -1,
        -1,
    ]


def test_node_budget_is_deterministic_and_bounds_hold():
    rng = np.random.default_rng(5)
    t1, t2 = _random_tree(rng, 16), _random_tree(rng, 16)
    full = metric.unrooted_tree_distance(t1, t2, ALPHA)
    assert full.exact and not full.time_limited
    runs = [metric.unrooted_tree_distance(t1, t2, ALPHA, budget=5) for _ in range(2)]
    assert runs[0] == runs[1]
    # The root and one branching into three children; a second branching would exceed 5.
    assert not runs[0].exact and runs[0].nodes_explored == 4
    assert runs[0].lower_bound <= full.value + 1e-12 <= runs[0].value + 2e-12


def test_a_time_budget_that_stops_the_search_is_flagged():
    rng = np.random.default_rng(5)
    t1, t2 = _random_tree(rng, 16), _random_tree(rng, 16)
    for distance in (metric.tree_distance, metric.unrooted_tree_distance):
        stopped = distance(t1, t2, ALPHA, budget=1e-9)
        assert stopped.time_limited and not stopped.exact
        assert not distance(t1, t2, ALPHA, budget=3).time_limited
