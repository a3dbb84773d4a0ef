"""Differential tests against the authors' reference package `articulatearena` (the oracle).

Thousands of random joints and random trees up to 6 joints; values agree to 1e-9 relative.
The one intended difference: our kinetic norm takes mass moments in the twists' frame, so the
oracle is fed the very same world-frame moments.
"""

from __future__ import annotations

import numpy as np
import pytest

import metric

aa = pytest.importorskip("articulatearena")
from articulatearena.new_equation import material_motion as aa_motion  # noqa: E402
from articulatearena.new_equation import tree as aa_tree  # noqa: E402
from articulatearena.previous_metrics import component_scores as aa_scores  # noqa: E402

RTOL = 1e-9


def _random_joints(rng, n, continuous_share=0.0):
    twist = rng.normal(size=(n, 6))
    lower = rng.normal(size=n)
    upper = lower + rng.exponential(size=n)
    unbounded = rng.random(n) < continuous_share
    lower[unbounded], upper[unbounded] = -np.inf, np.inf
    return metric.Joints(twist, lower, upper)


def _oracle_pairs(joints, inner=None, kappa=None):
    """Endpoint pairs as the oracle takes them (compactified when kappa is given)."""
    out = []
    for xi, lo, up in zip(joints.twist, joints.lower, joints.upper, strict=True):
        if not np.isfinite(lo):
            out.append(aa.continuous_joint_repr(xi, inner))
            continue
        pair = (lo * xi, up * xi)
        if kappa is not None:
            pair = tuple(aa.radial_compactify(z, kappa, inner) for z in pair)
        out.append(pair)
    return out


def test_joint_distance_matches_oracle_split_norm():
    rng = np.random.default_rng(1)
    j1, j2 = _random_joints(rng, 3000), _random_joints(rng, 3000)
    for alpha in (1.0, 0.37):
        inner = aa.make_split_norm(alpha)
        ours = metric.joint_distance(j1, j2, metric.split_norm(alpha))
        p1, p2 = _oracle_pairs(j1), _oracle_pairs(j2)
        theirs = [aa.joint_metric(*a, *b, inner) for a, b in zip(p1, p2, strict=True)]
        np.testing.assert_allclose(ours, theirs, rtol=RTOL)
    # The pairwise form agrees with the paired one.
    matrix = metric.joint_distance_matrix(j1[:40], j2[:40], metric.split_norm(0.37))
    np.testing.assert_allclose(np.diag(matrix), ours[:40], rtol=1e-12)


def test_compactified_distance_matches_oracle_with_continuous_joints():
    rng = np.random.default_rng(2)
    j1 = _random_joints(rng, 2000, continuous_share=0.3)
    j2 = _random_joints(rng, 2000, continuous_share=0.3)
    for alpha, kappa in ((1.0, np.pi), (2.5, 1.0)):
        inner = aa.make_split_norm(alpha)
        ours = metric.joint_distance(j1, j2, metric.split_norm(alpha), kappa)
        p1, p2 = _oracle_pairs(j1, inner, kappa), _oracle_pairs(j2, inner, kappa)
        theirs = [aa.joint_metric(*a, *b, inner) for a, b in zip(p1, p2, strict=True)]
        np.testing.assert_allclose(ours, theirs, rtol=RTOL)
    bounded = j1.bounded & j2.bounded
    compact = [
        aa.compactified_joint_metric(*a, *b, inner, kappa)
        for a, b in zip(_oracle_pairs(j1[bounded]), _oracle_pairs(j2[bounded]), strict=True)
    ]
    np.testing.assert_allclose(ours[bounded], compact, rtol=RTOL)


def _random_moments(rng, n):
    mass = rng.uniform(0.2, 3.0, n)
    com = rng.normal(size=(n, 3))
    a = rng.normal(size=(n, 3, 3))
    inertia = a @ np.swapaxes(a, 1, 2) + 0.05 * np.eye(3)
    return mass, com, inertia


def test_kinetic_norm_matches_oracle_on_world_frame_moments():
    rng = np.random.default_rng(3)
    n = 1000
    j1, j2 = _random_joints(rng, n, 0.2), _random_joints(rng, n, 0.2)
    mass, com, inertia = _random_moments(rng, n)
    grams = metric.kinetic_norm(mass, com, inertia)
    ours = metric.joint_distance(j1, j2, grams, kappa=2.0)
    bounded = j1.bounded & j2.bounded
    plain = metric.joint_distance(j1[bounded], j2[bounded], grams[bounded])
    theirs, theirs_plain = [], []
    for i in range(n):
        inner = aa.make_kinetic_energy_norm(aa.LinkInertia(mass[i], com[i], inertia[i]))
        (a,), (b,) = _oracle_pairs(j1[i], inner, 2.0), _oracle_pairs(j2[i], inner, 2.0)
        theirs.append(aa.joint_metric(*a, *b, inner))
        if bounded[i]:
            (a,), (b,) = _oracle_pairs(j1[i]), _oracle_pairs(j2[i])
            theirs_plain.append(aa.joint_metric(*a, *b, inner))
    np.testing.assert_allclose(ours, theirs, rtol=RTOL)
    np.testing.assert_allclose(plain, theirs_plain, rtol=RTOL)


def test_riemannian_norm_and_distance_to_fixed_match_oracle():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(6, 6))
    gram = metric.riemannian_norm(a @ a.T + 0.1 * np.eye(6))
    inner = aa.make_riemannian_norm(gram)
    j1, j2 = _random_joints(rng, 1000), _random_joints(rng, 1000)
    p1, p2 = _oracle_pairs(j1), _oracle_pairs(j2)
    theirs = [aa.joint_metric(*x, *y, inner) for x, y in zip(p1, p2, strict=True)]
    np.testing.assert_allclose(metric.joint_distance(j1, j2, gram), theirs, rtol=RTOL)
    np.testing.assert_allclose(
        metric.distance_to_fixed(j1, gram), [aa.cost_to_fixed(p, inner) for p in p1], rtol=RTOL
    )


def test_training_surrogate_matches_oracle():
    rng = np.random.default_rng(5)
    j1, j2 = _random_joints(rng, 1000), _random_joints(rng, 1000)
    gram = metric.split_norm(0.8)
    inner = aa.make_split_norm(0.8)
    for epsilon in (0.0, 1e-9, 1e-3):
        ours = metric.invariant_surrogate(j1, j2, gram, epsilon)
        p1, p2 = _oracle_pairs(j1), _oracle_pairs(j2)
        theirs = np.array(
            [aa.training_loss(*a, *b, inner, epsilon) for a, b in zip(p1, p2, strict=True)]
        )
        # The surrogate is a difference of terms: compare relative to their magnitude.
        scale = metric.distance_to_fixed(j1, gram) ** 2 + metric.distance_to_fixed(j2, gram) ** 2
        assert np.all(np.abs(ours - theirs) <= RTOL * scale)
    exact = metric.joint_distance(j1, j2, gram) ** 2
    assert np.all(np.abs(metric.invariant_surrogate(j1, j2, gram, 0.0) - exact) <= 1e-9 * scale)


def test_component_scores_match_oracle():
    rng = np.random.default_rng(6)
    n = 1000
    kinds = np.array(["revolute", "prismatic", "fixed"])
    types1, types2 = kinds[rng.integers(0, 3, n)], kinds[rng.integers(0, 3, n)]
    axis1, axis2 = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    axis1 /= np.linalg.norm(axis1, axis=1, keepdims=True)
    axis2 /= np.linalg.norm(axis2, axis=1, keepdims=True)
    axis2[:50] = axis1[:50]  # exactly parallel axes: the degenerate case
    origin1, origin2 = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    lower1, lower2 = rng.normal(size=n), rng.normal(size=n)
    upper1, upper2 = lower1 + rng.exponential(size=n), lower2 + rng.exponential(size=n)
    pred = metric.JointParameters(types1, axis1, origin1, lower1, upper1)
    gt = metric.JointParameters(types2, axis2, origin2, lower2, upper2)
    ours = metric.component_scores(pred, gt)
    for i in range(n):
        a = aa_scores.JointTuple(types1[i], axis1[i], origin1[i], (lower1[i], upper1[i]))
        b = aa_scores.JointTuple(types2[i], axis2[i], origin2[i], (lower2[i], upper2[i]))
        assert ours.type_error[i] == aa_scores.type_error(a, b)
        assert ours.axis_error[i] == pytest.approx(aa_scores.axis_error(a, b), rel=RTOL, abs=1e-7)
        assert ours.origin_error[i] == pytest.approx(aa_scores.origin_error(a, b), rel=RTOL)
        assert ours.limit_range[i] == pytest.approx(
            aa_scores.limit_error_magnitude(a, b), rel=RTOL, abs=1e-12
        )
        assert ours.limit_direction[i] == pytest.approx(
            aa_scores.limit_error_direction(a, b), rel=RTOL, abs=1e-12
        )
        assert ours.success[i] == aa_scores.joint_success(a, b)
    assert ours.origin_parallel[:50].sum() == (types1[:50] == "revolute").sum()


def test_material_motion_matches_oracle():
    rng = np.random.default_rng(7)
    n = 300
    axis = rng.normal(size=(n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    kinds = rng.choice(["revolute", "prismatic", "helical"], n)
    pitch = np.where(kinds == "helical", 0.05, 0.0)
    j1 = metric.Joints.from_parameters(kinds, axis, rng.normal(size=(n, 3)), -1.0, 0.5, pitch)
    lower = rng.normal(size=n)
    j2 = metric.Joints.from_parameters(
        kinds, axis[::-1], rng.normal(size=(n, 3)), lower, lower + 1.0, pitch[::-1]
    )
    mass, com, inertia = _random_moments(rng, 1)
    ours = metric.material_motion_distance(j1, j2, mass[0], com[0], inertia[0])
    link = aa.LinkInertia(mass[0], com[0], inertia[0])
    theirs = [
        aa_motion.finite_joint_discrepancy(
            aa.Joint(aa.Twist(j1.twist[i]), j1.lower[i], j1.upper[i], "helical"),
            aa.Joint(aa.Twist(j2.twist[i]), j2.lower[i], j2.upper[i], "helical"),
            link,
        )
        for i in range(n)
    ]
    np.testing.assert_allclose(ours, theirs, rtol=RTOL)
    rotation, translation = metric.se3_exp(j1.twist, j1.upper)
    for i in range(0, n, 7):
        transform = aa.exp_map(j1.twist[i], j1.upper[i])
        np.testing.assert_allclose(rotation[i], transform[:3, :3], atol=1e-12)
        np.testing.assert_allclose(translation[i], transform[:3, 3], atol=1e-12)


# ------------------------------------------------------------------ trees


def _random_tree(rng, n, fixed_share=0.0, continuous_share=0.0):
    parents = [int(rng.integers(0, j)) for j in range(1, n + 1)]
    edges = [(f"n{p}", f"n{j}") for j, p in zip(range(1, n + 1), parents, strict=True)]
    joints = _random_joints(rng, n, continuous_share)
    fixed = rng.random(n) < fixed_share
    twist = np.where(fixed[:, None], 0.0, joints.twist)
    lower = np.where(fixed, 0.0, joints.lower)
    upper = np.where(fixed, 0.0, joints.upper)
    return metric.Tree(edges, metric.Joints(twist, lower, upper))


def _oracle_edges(tree, inner, kappa=None):
    pairs = _oracle_pairs(tree.joints, inner, kappa)
    return [(u, v, p) for (u, v), p in zip(tree.edges, pairs, strict=True)]


def test_tree_distances_match_oracle():
    rng = np.random.default_rng(8)
    gram, inner = metric.split_norm(1.0), aa.make_split_norm(1.0)
    searched = 0
    for trial in range(300):
        kappa = np.pi if trial % 2 else None
        share = 0.25 if kappa else 0.0
        t1 = _random_tree(rng, int(rng.integers(1, 7)), 0.2, share)
        t2 = _random_tree(rng, int(rng.integers(1, 7)), 0.2, share)
        e1 = aa_tree.contract_small_edges(_oracle_edges(t1, inner, kappa), inner)
        e2 = aa_tree.contract_small_edges(_oracle_edges(t2, inner, kappa), inner)
        expected, certified = aa_tree.exact_tree_distance(e1, e2, inner)
        ours = metric.tree_distance(t1, t2, gram, kappa)
        assert ours.exact and ours.certified == certified
        assert ours.value == pytest.approx(expected, rel=RTOL)
        assert ours.lower_bound == ours.value
        searched += not certified
        relaxation = aa_tree.assignment_tree_distance(
            [p for *_, p in e1], [p for *_, p in e2], inner
        )
        assignment = metric.assignment_distance(t1, t2, gram, kappa)
        assert assignment.value == pytest.approx(relaxation, rel=RTOL)
        assert ours.relaxation == pytest.approx(relaxation, rel=RTOL)
        assert assignment.certified == certified
        # Realizability of the returned matchings, as the oracle decides it.
        for matching in (ours.matching, assignment.matching):
            assert metric.matching_realizable(t1, t2, matching) == aa_tree.matching_realizable(
                _oracle_edges(t1, inner, kappa), _oracle_edges(t2, inner, kappa), matching
            )
        for penalty in (0.25, 1.0):
            d_lambda = aa_tree.assignment_tree_distance(
                [p for *_, p in e1], [p for *_, p in e2], inner, lambda _pair, c=penalty: c
            )
            assert metric.skeleton_distance(t1, t2, gram, penalty, kappa) == pytest.approx(
                d_lambda, rel=RTOL
            )
    assert searched >= 40  # the exact search, not only the certificate, was exercised


def test_realizability_matches_oracle_on_random_matchings():
    rng = np.random.default_rng(9)
    inner = aa.make_split_norm(1.0)
    realizable = 0
    for _ in range(600):
        n1, n2 = int(rng.integers(2, 8)), int(rng.integers(2, 8))
        t1, t2 = _random_tree(rng, n1), _random_tree(rng, n2)
        size = int(rng.integers(0, min(n1, n2) + 1))
        matching = list(
            zip(
                rng.permutation(n1)[:size].tolist(),
                rng.permutation(n2)[:size].tolist(),
                strict=True,
            )
        )
        expected = aa_tree.matching_realizable(
            _oracle_edges(t1, inner), _oracle_edges(t2, inner), matching
        )
        assert metric.matching_realizable(t1, t2, matching) == expected
        realizable += expected
    assert 100 < realizable < 590  # both outcomes well represented
