"""Property tests (hypothesis) of the metric axioms and invariances of E, E^phi and E^tree."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import metric

# Magnitudes below 1e-6 are snapped to zero: squared norms of 1e-300 underflow, which is a
# property of floating point, not of the metric.
FLOATS = st.floats(-3.0, 3.0).map(lambda x: 0.0 if abs(x) < 1e-6 else x)
KAPPA = st.floats(0.3, 6.0)
SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def joint_batches(draw, n=None, unbounded=False):
    """A batch of random joints; with `unbounded`, some limits are infinite."""
    n = n if n is not None else draw(st.integers(1, 8))
    twist = draw(arrays(float, (n, 6), elements=FLOATS))
    twist[~twist.any(axis=1), 2] = 1.0  # keep twists non-zero so infinite limits are allowed
    lower = draw(arrays(float, (n,), elements=FLOATS))
    width = draw(arrays(float, (n,), elements=st.floats(0.0, 4.0).map(lambda x: round(x, 6))))
    upper = lower + width
    if unbounded:
        kind = draw(arrays(np.int64, (n,), elements=st.integers(0, 3)))
        lower = np.where(kind >= 2, -np.inf, lower)
        upper = np.where((kind == 1) | (kind == 3), np.inf, upper)
    return metric.Joints(twist, lower, upper)


@st.composite
def grams(draw):
    """A random SPD Gram matrix (well conditioned)."""
    a = draw(arrays(float, (6, 6), elements=st.floats(-1.0, 1.0)))
    return metric.riemannian_norm(a @ a.T + 0.5 * np.eye(6))


def _scale(*values) -> float:
    return 1.0 + max(float(np.max(np.abs(v))) for v in values)


@SETTINGS
@given(joint_batches(n=5), grams())
def test_identity_and_symmetry(joints, gram):
    other = metric.Joints(joints.twist[::-1], joints.lower[::-1], joints.upper[::-1])
    assert np.all(metric.joint_distance(joints, joints, gram) == 0.0)
    forward = metric.joint_distance(joints, other, gram)
    backward = metric.joint_distance(other, joints, gram)
    np.testing.assert_allclose(forward, backward, rtol=1e-12, atol=1e-12)


@SETTINGS
@given(joint_batches(n=4), joint_batches(n=4), grams())
def test_zero_exactly_for_the_same_endpoint_pair(j1, j2, gram):
    """E(J1, J2) == 0 iff the endpoint pairs coincide up to the swap."""
    d = metric.joint_distance(j1, j2, gram)
    a1, b1 = metric.endpoints(j1)
    a2, b2 = metric.endpoints(j2)
    same = (np.all(a1 == a2, 1) & np.all(b1 == b2, 1)) | (np.all(a1 == b2, 1) & np.all(b1 == a2, 1))
    assert np.array_equal(d == 0.0, same)


@SETTINGS
@given(joint_batches(n=6), joint_batches(n=6), joint_batches(n=6), grams())
def test_triangle_inequality(a, b, c, gram):
    ab = metric.joint_distance(a, b, gram)
    bc = metric.joint_distance(b, c, gram)
    ac = metric.joint_distance(a, c, gram)
    assert np.all(ac <= ab + bc + 1e-9 * _scale(ab, bc))


@SETTINGS
@given(
    joint_batches(n=6, unbounded=True),
    joint_batches(n=6, unbounded=True),
    joint_batches(n=6, unbounded=True),
    KAPPA,
)
def test_compactified_metric_axioms_with_unbounded_joints(a, b, c, kappa):
    gram = metric.split_norm(0.8)
    ab = metric.joint_distance(a, b, gram, kappa)
    bc = metric.joint_distance(b, c, gram, kappa)
    ac = metric.joint_distance(a, c, gram, kappa)
    assert np.all(ac <= ab + bc + 1e-9)
    assert np.all(metric.joint_distance(a, a, gram, kappa) == 0.0)
    np.testing.assert_allclose(ab, metric.joint_distance(b, a, gram, kappa), atol=1e-12)
    assert np.all(ab <= 2.0 * np.sqrt(2.0) + 1e-12)  # all endpoints lie in the unit ball


@SETTINGS
@given(joint_batches(n=6, unbounded=True), joint_batches(n=6), grams(), KAPPA)
def test_axis_reversal_with_negated_swapped_limits(joints, others, gram, kappa):
    """(xi, [l-, l+]) and (-xi, [-l+, -l-]) are the same motion: E is 0 and nothing changes."""
    reversed_ = metric.Joints(-joints.twist, -joints.upper, -joints.lower)
    assert np.all(metric.joint_distance(joints, reversed_, gram, kappa) == 0.0)
    np.testing.assert_allclose(
        metric.joint_distance(joints, others, gram, kappa),
        metric.joint_distance(reversed_, others, gram, kappa),
        rtol=1e-12,
        atol=1e-12,
    )
    bounded = joints[joints.bounded]
    flipped = reversed_[joints.bounded]
    assert np.all(metric.joint_distance(bounded, flipped, gram) == 0.0)


@SETTINGS
@given(
    arrays(float, (5, 3), elements=st.floats(-1.0, 1.0)),
    arrays(float, (5, 3), elements=FLOATS),
    arrays(float, (5, 3), elements=FLOATS),
    grams(),
)
def test_prismatic_origin_is_absent(axis, origin_a, origin_b, gram):
    axis = axis + np.array([0.0, 0.0, 2.0])  # non-zero axes
    types = ["prismatic"] * 5
    a = metric.Joints.from_parameters(types, axis, origin_a, -0.5, 0.7)
    b = metric.Joints.from_parameters(types, axis, origin_b, -0.5, 0.7)
    assert np.all(metric.joint_distance(a, b, gram) == 0.0)


@SETTINGS
@given(arrays(float, (4, 6), elements=FLOATS), KAPPA, st.floats(0.5, 2.0))
def test_compactified_finite_ranges_approach_the_continuous_joint(twist, kappa, alpha):
    """E^phi([-L, L], continuous) = sqrt(2) (1 - tanh(L ||xi|| / kappa)), decreasing to 0."""
    twist[~twist.any(axis=1), 0] = 1.0
    gram = metric.split_norm(alpha)
    norm = np.sqrt(np.einsum("ni,ij,nj->n", twist, gram, twist))
    continuous = metric.Joints(twist, np.full(4, -np.inf), np.full(4, np.inf))
    previous = np.full(4, np.inf)
    for half_range in (0.5, 2.0, 8.0, 50.0, 1e3, 1e8):
        finite = metric.Joints(twist, np.full(4, -half_range), np.full(4, half_range))
        d = metric.joint_distance(finite, continuous, gram, kappa)
        np.testing.assert_allclose(
            d, np.sqrt(2.0) * (1.0 - np.tanh(half_range * norm / kappa)), rtol=1e-9, atol=1e-15
        )
        assert np.all(d <= previous)
        previous = d
    assert np.all(previous < 1e-6)
    # A half-open range approaches the one-sided joint the same way.
    half = metric.Joints(twist, np.zeros(4), np.full(4, np.inf))
    near = metric.Joints(twist, np.zeros(4), np.full(4, 1e12))
    assert np.all(metric.joint_distance(near, half, gram, kappa) < 1e-9)


# ------------------------------------------------------------------ trees


@st.composite
def trees(draw, max_joints=5, fixed=False):
    n = draw(st.integers(1, max_joints))
    parents = [draw(st.integers(0, j - 1)) for j in range(1, n + 1)]
    joints = draw(joint_batches(n=n))
    edges = [(p, j) for j, p in zip(range(1, n + 1), parents, strict=True)]
    if fixed:
        mask = draw(arrays(bool, (n,)))
        twist = np.where(mask[:, None], 0.0, joints.twist)
        joints = metric.Joints(
            twist, np.where(mask, 0.0, joints.lower), np.where(mask, 0.0, joints.upper)
        )
    return metric.Tree(edges, joints)


def _relabeled(tree: metric.Tree, rng: np.random.Generator) -> metric.Tree:
    """The same tree with node ids renamed, edges reordered and reoriented."""
    order = rng.permutation(len(tree))
    names = {node: f"link-{i}" for i, node in enumerate(rng.permutation(len(tree.nodes)))}
    edges = []
    for e in order:
        u, v = tree.edges[e]
        a, b = names[tree.nodes.index(u)], names[tree.nodes.index(v)]
        edges.append((a, b) if rng.random() < 0.5 else (b, a))
    return metric.Tree(edges, tree.joints[order])


def _with_fixed_edges(tree: metric.Tree, rng: np.random.Generator) -> metric.Tree:
    """Insert fixed edges: split random nodes in two, moving some incident edges to the copy."""
    edges = list(tree.edges)
    twist, lower, upper = [tree.joints.twist], [tree.joints.lower], [tree.joints.upper]
    for k in range(3):
        node = tree.nodes[int(rng.integers(len(tree.nodes)))]
        new = ("inserted", k)
        edges = [tuple(new if (x == node and rng.random() < 0.5) else x for x in e) for e in edges]
        edges.append((node, new))
        fixed_twist = np.zeros((1, 6)) if k % 2 == 0 else rng.normal(size=(1, 6))
        twist.append(fixed_twist)
        lower.append(np.zeros(1))
        upper.append(np.zeros(1))
    joints = metric.Joints(np.concatenate(twist), np.concatenate(lower), np.concatenate(upper))
    return metric.Tree(edges, joints)


TREE_SETTINGS = settings(max_examples=25, deadline=None)


@TREE_SETTINGS
@given(trees(fixed=True), trees(fixed=True), st.integers(0, 2**32 - 1))
def test_tree_distance_symmetric_and_zero_on_equivalent_trees(t1, t2, seed):
    rng = np.random.default_rng(seed)
    gram = metric.split_norm(1.0)
    forward = metric.tree_distance(t1, t2, gram)
    backward = metric.tree_distance(t2, t1, gram)
    assert forward.exact and backward.exact
    assert abs(forward.value - backward.value) <= 1e-9 * (1.0 + forward.value)
    for copy in (_relabeled(t1, rng), _with_fixed_edges(t1, rng)):
        result = metric.tree_distance(t1, copy, gram)
        assert result.value == 0.0 and result.exact
        moved = metric.tree_distance(copy, t2, gram).value
        assert moved == pytest.approx(forward.value, rel=1e-9, abs=1e-12)


@TREE_SETTINGS
@given(trees(4), trees(4), trees(4))
def test_tree_triangle_inequality(t1, t2, t3):
    gram = metric.split_norm(1.0)
    d12 = metric.tree_distance(t1, t2, gram).value
    d23 = metric.tree_distance(t2, t3, gram).value
    d13 = metric.tree_distance(t1, t3, gram).value
    assert d13 <= d12 + d23 + 1e-9 * (1.0 + d12 + d23)


@SETTINGS
@given(joint_batches(n=5), grams(), KAPPA)
def test_compactification_is_radial_into_the_unit_ball(joints, gram, kappa):
    raw_minus, raw_plus = metric.endpoints(joints)
    phi_minus, phi_plus = metric.endpoints(joints, gram, kappa)
    for raw, phi in ((raw_minus, phi_minus), (raw_plus, phi_plus)):
        np.testing.assert_allclose(metric.compactify(raw, gram, kappa), phi, atol=1e-12)
        raw_norm = np.sqrt(np.einsum("ni,ij,nj->n", raw, gram, raw))
        phi_norm = np.sqrt(np.einsum("ni,ij,nj->n", phi, gram, phi))
        np.testing.assert_allclose(phi_norm, np.tanh(raw_norm / kappa), atol=1e-12)
        assert np.all(phi_norm < 1.0 + 1e-12)
    assert np.all(metric.compactify(np.zeros((2, 6)), gram, kappa) == 0.0)
    for bad in (0.0, -1.0, np.inf):
        with pytest.raises(ValueError, match="kappa must be finite and > 0"):
            metric.joint_distance(joints, joints, gram, bad)
