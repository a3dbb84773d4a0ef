"""The subtree bound of the exact tree searches: a per-node-pair DP over rooted subtrees
(maximum over the rootings of the second tree), tried once after 200 search nodes. It must be
a valid upper bound on the savings (results it proves exact equal unbudgeted runs, and lower
bounds stay below them), and it closes symmetric cases the assignment bound cannot."""

from __future__ import annotations

import numpy as np
import pytest

import metric
from metric.tree_distance.unrooted import _oriented_problem, _OrientedSearch

ALPHA = metric.split_norm(1.0)
DISTANCES = (metric.tree_distance, metric.unrooted_tree_distance)
UP = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 1.0])


def _random_tree(rng, n):
    parents = [int(rng.integers(0, j)) for j in range(1, n + 1)]
    lower = rng.normal(size=n)
    joints = metric.Joints(rng.normal(size=(n, 6)), lower, lower + rng.exponential(size=n))
    return metric.Tree([(p, j) for j, p in zip(range(1, n + 1), parents, strict=True)], joints)


@pytest.mark.parametrize("distance", DISTANCES)
def test_results_it_proves_equal_unbudgeted_runs(distance):
    # 9 to 11 joints: the search passes 200 nodes on part of the pairs, and a budget of 230
    # leaves room for the bound's rootings (one node each) on the smaller second trees.
    rng = np.random.default_rng(11)
    tried = 0
    for _ in range(25):
        t1 = _random_tree(rng, int(rng.integers(9, 12)))
        t2 = _random_tree(rng, int(rng.integers(9, 12)))
        full = distance(t1, t2, ALPHA)
        assert full.exact
        budgeted = distance(t1, t2, ALPHA, budget=230)
        tried += budgeted.nodes_explored > 200
        assert budgeted.lower_bound <= full.value * (1 + 1e-12) + 1e-12
        assert budgeted.value >= full.value * (1 - 1e-12) - 1e-12
        if budgeted.exact:
            assert budgeted.value == pytest.approx(full.value, rel=1e-12)
    assert tried >= 3


def _keyboard(n):
    """n identical keys (a prismatic joint each) on one base."""
    twist = np.tile(UP, (n, 1))
    edges = [("base", f"key{i}") for i in range(n)]
    return metric.Tree(edges, metric.Joints(twist, np.zeros(n), np.full(n, 0.004)))


def _split_key_and_spurious(n):
    """The keyboard with key 3 split in two along its screw and a spurious joint on key 7."""
    edges, twist, upper = [], [], []
    for i in range(n):
        if i == 3:
            edges += [("base", "half"), ("half", "key3")]
            twist += [UP, UP]
            upper += [0.002, 0.002]
        else:
            edges.append(("base", f"key{i}"))
            twist.append(UP)
            upper.append(0.004)
    edges.append(("key7", "extra"))
    twist.append(UP)
    upper.append(0.01)
    return metric.Tree(edges, metric.Joints(np.array(twist), np.zeros(len(upper)), upper))


def test_identical_keys_are_closed_by_the_subtree_bound():
    # Thirty interchangeable keys: the assignment bound is tied across countless equivalent
    # matchings and the rooted search alone is not exact within 1,000 nodes (checked when the
    # bound was added); the subtree bound equals the optimum and proves it at node 200.
    truth, prediction = _keyboard(30), _split_key_and_spurious(30)
    rooted = metric.tree_distance(prediction, truth, ALPHA, budget=1000)
    unrooted = metric.unrooted_tree_distance(prediction, truth, ALPHA, budget=1000)
    assert rooted.exact and not rooted.certified
    assert rooted.nodes_explored < 300
    assert unrooted.exact
    # One half of key 3 matched to it (E = 0.002), the other half contracted (0.002) and the
    # spurious joint contracted (0.01).
    assert rooted.value == pytest.approx(0.014, rel=1e-12)
    assert unrooted.value == pytest.approx(0.014, rel=1e-12)


@pytest.mark.parametrize("budget", [3, 40, 100])
def test_the_bound_stays_within_small_node_budgets(budget):
    # 31 rootings of the 30-key keyboard: tried earlier than node 200 when the budget is small,
    # never when it cannot pay for them (budget 3). The rooted search's last branching may add
    # up to three children beyond the budget, the bound never adds to that; the unrooted search
    # branches only when its three children fit (budget 3: the root alone, a greedy value).
    truth, prediction = _keyboard(30), _split_key_and_spurious(30)
    for distance, slack in zip(DISTANCES, (2, 0), strict=True):
        result = distance(prediction, truth, ALPHA, budget=budget)
        assert result.nodes_explored <= budget + slack
        assert result.exact == (budget > 3)
        assert result.lower_bound <= 0.014 * (1 + 1e-12)
        if distance is metric.unrooted_tree_distance and budget == 3:
            assert result.nodes_explored == 1 and result.value >= 0.014 * (1 - 1e-12)
        else:
            assert result.value == pytest.approx(0.014, rel=1e-12)


def _best_containing(t1, t2, savings, fixed):
    """Brute force: the largest savings of a realizable oriented matching holding the oriented
    pairs `fixed` [(i, k, o)], with orientations from `metric.matching_orientation`."""
    n1, n2 = len(t1), len(t2)
    best = -np.inf

    def extend(i, used, pairs):
        nonlocal best
        if i == n1:
            signs = metric.matching_orientation(t1, t2, pairs)
            if signs is None:
                return
            orientation = {p: int(s < 0) for p, s in zip(pairs, signs.tolist(), strict=True)}
            if len(pairs) > 1 and any(orientation[(a, b)] != o for a, b, o in fixed):
                return
            total = sum(savings[orientation[p], p[0], p[1]] for p in pairs)
            if len(pairs) == 1:
                total = savings[fixed[0][2], fixed[0][0], fixed[0][1]]
            best = max(best, total)
            return
        forced = [k for a, k, _ in fixed if a == i]
        if not forced:
            extend(i + 1, used, pairs)
        for k in forced or range(n2):
            if k not in used:
                extend(i + 1, used | {k}, [*pairs, (i, k)])

    extend(0, frozenset(), [])
    return best


def test_the_rooted_bound_of_a_node_bounds_every_matching_holding_its_fixed_pairs():
    # The unrooted search tightens a node with fixed pairs by the subtree bound rooted at its
    # first fixed pair; it must stay above the best realizable matching holding those pairs.
    rng = np.random.default_rng(5)
    checked = 0
    for _ in range(12):
        t1 = _random_tree(rng, int(rng.integers(2, 6)))
        t2 = _random_tree(rng, int(rng.integers(2, 6)))
        problem = _oriented_problem(t1, t2, ALPHA, None)
        search = _OrientedSearch(problem, None, None)
        everything = np.ones(problem.savings.shape, dtype=bool)
        for first in np.flatnonzero(search.positive).tolist():
            allowed = search._fix(everything, first)
            partners = np.flatnonzero(allowed & search.positive)[:3].tolist()
            for fixed in [[first]] + [[first, p] for p in partners]:
                node = everything
                for index in fixed:
                    node = search._fix(node, index)
                best = _best_containing(t1, t2, problem.savings, search.pairs(fixed))
                assert best > -np.inf  # pairwise compatible pairs are realizable together
                assert search.rooted_bound(fixed, node) >= best - 1e-9 * (1 + abs(best))
                checked += 1
    assert checked > 100
