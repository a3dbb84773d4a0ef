"""Trees, contraction of fixed edges, the relaxation and its certificate, the exact search and
its budget, per-joint norms and the constant-penalty skeleton distance."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import metric

ALPHA = metric.split_norm(1.0)


def _joints(rng, n):
    lower = rng.normal(size=n)
    return metric.Joints(rng.normal(size=(n, 6)), lower, lower + rng.exponential(size=n))


def _random_tree(rng, n):
    parents = [int(rng.integers(0, j)) for j in range(1, n + 1)]
    edges = [(p, j) for j, p in zip(range(1, n + 1), parents, strict=True)]
    return metric.Tree(edges, _joints(rng, n))


def _brute_force(t1, t2, gram):
    """Minimum over every realizable one-to-one partial matching (tiny trees only)."""
    c1, c2 = t1.contracted.moving, t2.contracted.moving
    j1, j2 = t1.joints[c1], t2.joints[c2]
    cost = metric.joint_distance_matrix(j1, j2, gram)
    del1, del2 = metric.distance_to_fixed(j1, gram), metric.distance_to_fixed(j2, gram)
    best = del1.sum() + del2.sum()
    for size in range(1, min(len(c1), len(c2)) + 1):
        for rows in itertools.combinations(range(len(c1)), size):
            for cols in itertools.permutations(range(len(c2)), size):
                value = (
                    cost[list(rows), list(cols)].sum()
                    + np.delete(del1, rows).sum()
                    + np.delete(del2, cols).sum()
                )
                pairs = [(c1[i], c2[k]) for i, k in zip(rows, cols, strict=True)]
                if value < best and metric.matching_realizable(t1, t2, pairs):
                    best = value
    return best


def test_tree_validation():
    joints = metric.Joints(np.eye(6)[:3], np.zeros(3), np.ones(3))
    with pytest.raises(ValueError, match="3 edges but 2 joints"):
        metric.Tree([("a", "b"), ("b", "c"), ("c", "d")], joints[[0, 1]])
    with pytest.raises(ValueError, match="joins a node to itself"):
        metric.Tree([("a", "a"), ("b", "c"), ("c", "d")], joints)
    with pytest.raises(ValueError, match="3 edges on 3 nodes"):
        metric.Tree([("a", "b"), ("b", "c"), ("c", "a")], joints)
    four = metric.Joints(np.eye(6)[:4], np.zeros(4), np.ones(4))
    with pytest.raises(ValueError, match="2 separate parts"):
        metric.Tree([("a", "b"), ("b", "c"), ("c", "a"), ("d", "e")], four)
    single_link = metric.Tree([], metric.Joints(np.zeros((0, 6)), np.zeros(0), np.zeros(0)))
    other = _random_tree(np.random.default_rng(0), 3)
    result = metric.tree_distance(single_link, other, ALPHA)
    assert result.exact and result.matching == []
    assert result.value == pytest.approx(metric.distance_to_fixed(other.joints, ALPHA).sum())


def test_exactly_fixed_edges_are_contracted_and_nothing_else():
    twist = np.array(
        [[0, 0, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0]]
    )
    joints = metric.Joints(twist, [0.0, -1.0, 0.0, 0.5], [1.0, 1.0, 0.0, 0.5])
    tree = metric.Tree([("base", "a"), ("a", "b"), ("b", "c"), ("c", "d")], joints)
    contracted = tree.contracted
    # Zero twist and limits [0, 0] are contracted; limits [0.5, 0.5] still move the part.
    assert contracted.moving.tolist() == [0, 3]
    assert contracted.u[0] != contracted.v[0]
    assert contracted.v[0] in (contracted.u[1], contracted.v[1])  # a, b, c merged into one node


def test_a_copy_with_other_joints_shares_the_contraction_only_when_the_same_are_fixed():
    twist = np.array([[0, 0, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0]], dtype=float)
    tree = metric.Tree(
        [("base", "a"), ("a", "b"), ("b", "c")],
        metric.Joints(twist, [0.0, -1.0, 0.0], [1.0, 1.0, 2.0]),
    )
    turned = tree.with_joints(metric.Joints(-2.0 * twist, [0.0, -1.0, 0.0], [1.0, 1.0, 2.0]))
    assert turned.contracted is tree.contracted
    welded = tree.with_joints(metric.Joints(twist, [0.0, -1.0, 0.0], [1.0, 1.0, 0.0]))
    assert welded.contracted.moving.tolist() == [0]
    assert tree.contracted.moving.tolist() == [0, 2]


def test_search_is_exact_on_small_trees_against_brute_force():
    rng = np.random.default_rng(1)
    searched = 0
    for _ in range(40):
        t1, t2 = _random_tree(rng, 5), _random_tree(rng, 5)
        result = metric.tree_distance(t1, t2, ALPHA)
        assert result.exact and result.lower_bound == result.value
        assert result.value == pytest.approx(_brute_force(t1, t2, ALPHA), rel=1e-12)
        assert metric.matching_realizable(t1, t2, result.matching)
        assert result.value >= result.relaxation - 1e-12
        searched += not result.certified
    assert searched >= 10


def test_certified_relaxation_and_structural_edits():
    """A perturbed copy with one joint missing: the relaxation is realizable (certified)."""
    rng = np.random.default_rng(2)
    tree = _random_tree(rng, 7)
    joints = tree.joints
    noisy = metric.Joints(
        joints.twist + 1e-3 * rng.normal(size=joints.twist.shape), joints.lower, joints.upper
    )
    # Missing joint 6: its edge is contracted in the prediction (drop it and merge its nodes).
    u, v = tree.edges[6]
    edges = [tuple(u if x == v else x for x in e) for e in tree.edges[:6]]
    pred = metric.Tree(edges, noisy[np.arange(6)])
    result = metric.tree_distance(pred, tree, ALPHA)
    assignment = metric.assignment_distance(pred, tree, ALPHA)
    assert result.certified and assignment.certified and result.nodes_explored == 1
    assert result.value == assignment.value == result.relaxation
    assert (6 not in {k for _, k in result.matching}) and len(result.matching) == 6
    missing = metric.distance_to_fixed(joints[[6]], ALPHA)[0]
    assert missing < result.value < missing + 0.1


def test_budget_returns_bounds_and_exact_false():
    rng = np.random.default_rng(3)
    for _ in range(20):
        t1, t2 = _random_tree(rng, 10), _random_tree(rng, 10)
        full = metric.tree_distance(t1, t2, ALPHA)
        if full.nodes_explored > 20:
            break
    else:
        pytest.fail("no hard instance found")
    limited = metric.tree_distance(t1, t2, ALPHA, budget=5)
    assert not limited.exact and not limited.certified
    assert limited.relaxation <= limited.lower_bound <= full.value <= limited.value
    assert limited.lower_bound < limited.value
    assert metric.matching_realizable(t1, t2, limited.matching)
    quick = metric.tree_distance(t1, t2, ALPHA, exact=False)
    assert quick.lower_bound == quick.relaxation and quick.value >= full.value
    timed = metric.tree_distance(t1, t2, ALPHA, budget=60.0)
    assert timed.exact and timed.value == pytest.approx(full.value, rel=1e-12)
    for bad in (0, -1.0, "1s", True):
        with pytest.raises(ValueError, match="budget"):
            metric.tree_distance(t1, t2, ALPHA, budget=bad)


def test_per_joint_norm_pair_uses_the_reference_gram_for_substitution():
    rng = np.random.default_rng(4)
    t1, t2 = _random_tree(rng, 3), _random_tree(rng, 4)
    a1, a2 = rng.normal(size=(3, 6, 6)), rng.normal(size=(4, 6, 6))
    g1 = a1 @ np.swapaxes(a1, 1, 2) + np.eye(6)
    g2 = a2 @ np.swapaxes(a2, 1, 2) + np.eye(6)
    result = metric.tree_distance(t1, t2, (g1, g2))
    cost = metric.joint_distance_matrix(t1.joints, t2.joints, g2)
    for i, k in itertools.product(range(3), range(4)):
        single = metric.joint_distance(t1.joints[[i]], t2.joints[[k]], g2[[k]])[0]
        assert cost[i, k] == pytest.approx(single, rel=1e-12)
    del1 = metric.distance_to_fixed(t1.joints, g1)
    del2 = metric.distance_to_fixed(t2.joints, g2)
    matched1 = {i for i, _ in result.matching}
    matched2 = {k for _, k in result.matching}
    expected = (
        sum(cost[i, k] for i, k in result.matching)
        + sum(del1[i] for i in range(3) if i not in matched1)
        + sum(del2[k] for k in range(4) if k not in matched2)
    )
    assert result.value == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="pair"):
        metric.tree_distance(t1, t2, g2)
    with pytest.raises(ValueError, match="3 per-joint Gram matrices for 4 joints"):
        metric.tree_distance(t1, t2, (g1, g1))


def test_matching_realizable_rules():
    path = metric.Tree([(0, 1), (1, 2), (2, 3)], _joints(np.random.default_rng(5), 3))
    star = metric.Tree([(0, 1), (0, 2), (0, 3)], _joints(np.random.default_rng(6), 3))
    assert metric.matching_realizable(path, star, [(0, 0), (1, 1)])  # two edges: always a path
    assert not metric.matching_realizable(path, star, [(0, 0), (1, 1), (2, 2)])
    assert metric.matching_realizable(path, path, [(2, 0), (1, 1), (0, 2)])  # reversed path
    assert not metric.matching_realizable(path, path, [(0, 0), (1, 2), (2, 1)])
    with pytest.raises(ValueError, match="at most once"):
        metric.matching_realizable(path, star, [(0, 0), (0, 1)])
    fixed = metric.Tree(
        [(0, 1), (1, 2)], metric.Joints(np.eye(6)[:2], np.zeros(2), np.array([1.0, 0.0]))
    )
    with pytest.raises(ValueError, match="exactly fixed joints of the first tree"):
        metric.matching_realizable(fixed, star, [(1, 0)])


def test_skeleton_distance_caps_unmatched_costs():
    rng = np.random.default_rng(7)
    t1, t2 = _random_tree(rng, 4), _random_tree(rng, 6)
    cost = metric.joint_distance_matrix(t1.joints, t2.joints, ALPHA)
    for penalty in (0.01, 1.0, 1e6):
        value = metric.skeleton_distance(t1, t2, ALPHA, penalty)
        assert value <= penalty * 10 + 1e-12  # never worse than leaving everything unmatched
    # With a huge penalty every joint of the smaller tree is matched: min-cost assignment.
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(cost)
    huge = metric.skeleton_distance(t1.joints, t2.joints, ALPHA, 1e6)
    assert huge == pytest.approx(cost[rows, cols].sum() + 2e6, rel=1e-12)
    assert metric.skeleton_distance(t1, t2, ALPHA, 0.0) == 0.0
    with pytest.raises(ValueError, match="penalty"):
        metric.skeleton_distance(t1, t2, ALPHA, -1.0)


def test_large_star_against_a_perturbed_copy():
    """A base with 115 prismatic keys in parallel (like partnet_mobility/7619)."""
    rng = np.random.default_rng(8)
    n = 115
    travel = rng.uniform(0.005, 0.015, n)
    keys = metric.Joints.from_parameters(
        ["prismatic"] * n,
        np.tile([0, 0, -1.0], (n, 1)),
        rng.uniform(-0.2, 0.2, (n, 3)),
        0.0,
        travel,
    )
    tree = metric.Tree([("base", f"key{i}") for i in range(n)], keys)
    noisy = metric.Joints(keys.twist + 1e-3 * rng.normal(size=(n, 6)), keys.lower, keys.upper)
    order = rng.permutation(n)
    copy = metric.Tree([(f"k{i}", "board") for i in range(n)], noisy[order])
    result = metric.tree_distance(copy, tree, ALPHA)
    assert result.certified and result.exact and len(result.matching) == n
    same_keys = metric.joint_distance(noisy[order], keys[order], ALPHA).sum()
    assert 0.0 < result.value <= same_keys + 1e-12
