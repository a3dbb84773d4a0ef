"""Scale: E is homogeneous in the twists, so scaled trees have scaled distances, exact flags and
matchings at every scale from 1e-12 to 1e6 (the search tolerance is relative); E^phi is exact
for twist norms near underflow and overflow, and E refuses endpoints whose squares would not be
normal floats."""

from __future__ import annotations

import numpy as np
import pytest

import metric

ALPHA = metric.split_norm(1.0)
SCALES = (1e-12, 1e-11, 1e-6, 1.0, 1e3, 1e6)


def _random_tree(rng, n):
    parents = [int(rng.integers(0, j)) for j in range(1, n + 1)]
    lower = rng.normal(size=n)
    joints = metric.Joints(rng.normal(size=(n, 6)), lower, lower + rng.exponential(size=n))
    return metric.Tree([(p, j) for j, p in zip(range(1, n + 1), parents, strict=True)], joints)


def _scaled(tree, c):
    j = tree.joints
    return metric.Tree(tree.edges, metric.Joints(c * j.twist, j.lower, j.upper))


@pytest.fixture(scope="module")
def pairs():
    """Pairs of 7-joint trees, most of them needing the search (not certified)."""
    rng = np.random.default_rng(0)
    out = [(_random_tree(rng, 7), _random_tree(rng, 7)) for _ in range(30)]
    searched = sum(not metric.tree_distance(a, b, ALPHA).certified for a, b in out)
    assert searched >= 10
    return out


@pytest.mark.parametrize("distance", [metric.tree_distance, metric.unrooted_tree_distance])
def test_tree_distances_scale_with_the_twists(pairs, distance):
    for a, b in pairs:
        unit = distance(a, b, ALPHA)
        assert unit.exact
        for c in SCALES:
            scaled = distance(_scaled(a, c), _scaled(b, c), ALPHA)
            assert scaled.exact, c
            assert scaled.value == pytest.approx(c * unit.value, rel=1e-9), c
            assert scaled.matching == unit.matching, c
            assert scaled.lower_bound == pytest.approx(c * unit.lower_bound, rel=1e-9)


def test_e_phi_at_twist_norms_near_underflow_and_overflow():
    rng = np.random.default_rng(1)
    twist = rng.normal(size=(8, 6))
    lower = rng.normal(size=8)
    upper = lower + rng.exponential(size=8)
    other = metric.Joints(rng.normal(size=(8, 6)), lower, upper + 0.5)
    reference = metric.joint_distance(metric.Joints(twist, lower, upper), other, ALPHA, np.pi)
    assert (reference > 0.1).all()
    for c in (1e-200, 1e-160, 1e160, 1e200):
        # The same endpoint pairs l xi, written with tiny or huge twists.
        same = metric.Joints(c * twist, lower / c, upper / c)
        value = metric.joint_distance(same, other, ALPHA, np.pi)
        np.testing.assert_allclose(value, reference, rtol=1e-12)
        matrix = metric.joint_distance_matrix(same, other, ALPHA, np.pi)
        np.testing.assert_allclose(np.diag(matrix), reference, rtol=1e-12)
        np.testing.assert_allclose(
            metric.distance_to_fixed(same, ALPHA, np.pi),
            metric.distance_to_fixed(metric.Joints(twist, lower, upper), ALPHA, np.pi),
            rtol=1e-12,
        )
    # Unbounded joints with tiny twists reach the boundary, not 0.
    continuous = metric.Joints(1e-200 * twist[:1], [-np.inf], [np.inf])
    assert metric.distance_to_fixed(continuous, ALPHA, np.pi)[0] == pytest.approx(np.sqrt(2.0))


def test_e_refuses_endpoints_whose_squares_are_not_normal_floats():
    twist = np.eye(6)[:2]
    for c in (1e-200, 1e200):
        joints = metric.Joints(c * twist, [0.0, 0.0], [1.0, 1.0])
        with pytest.raises(ValueError, match="outside \\[1e-150, 1e150\\]"):
            metric.joint_distance(joints, joints, ALPHA)
        assert np.all(metric.joint_distance(joints, joints, ALPHA, np.pi) == 0.0)
    # Twist and limit may each be extreme as long as the endpoint is not.
    joints = metric.Joints(1e-200 * twist, [0.0, 0.0], [1e200, 2e200])
    assert metric.distance_to_fixed(joints, ALPHA) == pytest.approx([1.0, 2.0], rel=1e-12)
