"""Joint batches, screw twists and the Gram-matrix norms of the metric package."""

from __future__ import annotations

import numpy as np
import pytest

import metric
from metric.norms import gram_factor


def test_joints_validation_messages():
    twist = np.zeros((3, 6))
    twist[:, 2] = 1.0
    with pytest.raises(ValueError, match=r"shape \(N, 6\)"):
        metric.Joints(np.zeros((3, 5)), np.zeros(3), np.ones(3))
    with pytest.raises(ValueError, match=r"lower must have shape \(3,\)"):
        metric.Joints(twist, np.zeros(2), np.ones(3))
    bad = twist.copy()
    bad[1, 4] = np.nan
    with pytest.raises(ValueError, match=r"NaN or infinite values for 1 joints \(first: \[1\]\)"):
        metric.Joints(bad, np.zeros(3), np.ones(3))
    with pytest.raises(ValueError, match="upper limit is NaN for joints \\[2\\]"):
        metric.Joints(twist, np.zeros(3), np.array([1.0, 1.0, np.nan]))
    with pytest.raises(ValueError, match="lower limit exceeds upper limit for 1 joints"):
        metric.Joints(twist, np.array([0.0, 2.0, 0.0]), np.ones(3))
    with pytest.raises(ValueError, match="lower limit \\+inf"):
        metric.Joints(twist, np.array([0.0, np.inf, 0.0]), np.array([1.0, np.inf, 1.0]))
    with pytest.raises(ValueError, match="zero twist with an infinite limit"):
        metric.Joints(np.zeros((1, 6)), [-np.inf], [np.inf])


def test_joints_single_joint_slicing_and_masks():
    one = metric.Joints([0, 0, 1, 0, 0, 0], 0.0, 1.0)
    assert len(one) == 1 and one.twist.shape == (1, 6)
    batch = metric.Joints(
        np.array([[0, 0, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0.0]]),
        np.array([0.0, 0.0, 0.0]),
        np.array([1.0, 0.0, 0.0]),
    )
    assert batch.fixed.tolist() == [False, True, True]
    assert batch[[0, 2]].lower.tolist() == [0.0, 0.0]
    assert len(metric.Joints.concatenate([one, batch])) == 4
    with pytest.raises(ValueError):
        batch.twist[0, 0] = 5.0  # validated arrays are read-only


def test_screw_twists_all_types():
    types = ["revolute", "prismatic", "helical", "fixed", "continuous"]
    axis = np.array([[0, 0, 2.0], [0, 3.0, 0], [0, 0, 1.0], [0, 0, 0], [1.0, 0, 0]])
    point = np.array([[1.0, 0, 0], [5.0, 5, 5], [1.0, 0, 0], [0, 0, 0], [0, 1.0, 0]])
    twist = metric.screw_twists(types, axis, point, pitch=[0, 0, 0.5, 0, 0])
    np.testing.assert_allclose(twist[0], [0, 0, 1, 0, -1, 0])  # (a, o x a)
    np.testing.assert_allclose(twist[1], [0, 0, 0, 0, 1, 0])  # (0, a)
    np.testing.assert_allclose(twist[2], [0, 0, 1, 0, -1, 0.5])  # (a, o x a + h a)
    np.testing.assert_allclose(twist[3], np.zeros(6))
    np.testing.assert_allclose(twist[4], [1, 0, 0, 0, 0, -1])
    codes = metric.type_codes(types)
    np.testing.assert_array_equal(metric.screw_twists(codes, axis, point, [0, 0, 0.5, 0, 0]), twist)
    with pytest.raises(ValueError, match="unknown joint types \\['ball'\\]"):
        metric.type_codes(["ball", "revolute"])
    with pytest.raises(ValueError, match="zero axis for moving joints \\[0\\]"):
        metric.screw_twists(["revolute"], [[0, 0, 0]], [[0, 0, 0]])


def test_from_parameters_forces_fixed_and_continuous_limits():
    joints = metric.Joints.from_parameters(
        ["fixed", "continuous", "revolute"],
        [[1, 0, 0], [0, 0, 1], [0, 1, 0]],
        np.zeros((3, 3)),
        lower=[-1.0, -1.0, -0.5],
        upper=[1.0, 1.0, 0.5],
    )
    assert joints.lower.tolist() == [0.0, -np.inf, -0.5]
    assert joints.upper.tolist() == [0.0, np.inf, 0.5]
    assert joints.fixed.tolist() == [True, False, False]


def test_split_norm_and_riemannian_checks():
    np.testing.assert_allclose(np.diag(metric.split_norm(2.0)), [1, 1, 1, 4, 4, 4])
    for alpha in (0.0, -1.0, np.inf):
        with pytest.raises(ValueError, match="alpha must be finite and > 0"):
            metric.split_norm(alpha)
    with pytest.raises(ValueError, match="not positive definite"):
        metric.riemannian_norm(np.diag([1, 1, 1, 1, 1, 0.0]))
    asym = np.eye(6)
    asym[0, 1] = 0.5
    with pytest.raises(ValueError, match="not symmetric"):
        metric.riemannian_norm(asym)
    with pytest.raises(ValueError, match=r"\(6, 6\) or \(N, 6, 6\)"):
        metric.riemannian_norm(np.eye(5))
    stack = np.stack([np.eye(6), np.diag([1, 1, 1, 1, 1, -1.0])])
    with pytest.raises(ValueError, match=r"matrices \[1\]"):
        metric.riemannian_norm(stack)


def test_kinetic_norm_is_mass_weighted_rms_speed():
    """xi^T G xi equals the mass-weighted mean squared speed of point masses under the twist."""
    rng = np.random.default_rng(0)
    points = rng.normal(size=(50, 3)) + [0.3, -0.2, 1.0]
    masses = rng.uniform(0.1, 1.0, 50)
    mass = masses.sum()
    com = (masses[:, None] * points).sum(0) / mass
    rel = points - com
    inertia = np.einsum("n,nij->ij", masses, (rel**2).sum(1)[:, None, None] * np.eye(3))
    inertia -= np.einsum("n,ni,nj->ij", masses, rel, rel)
    gram = metric.kinetic_norm(mass, com, inertia)
    for twist in rng.normal(size=(10, 6)):
        velocity = twist[3:] + np.cross(twist[:3], points)  # v + w x p
        mean_sq = (masses * (velocity**2).sum(1)).sum() / mass
        assert twist @ gram @ twist == pytest.approx(mean_sq, rel=1e-12)


def test_kinetic_norm_shapes_and_errors():
    inertia = np.diag([1.0, 2.0, 3.0])
    single = metric.kinetic_norm(2.0, [0.1, 0.2, 0.3], inertia)
    assert single.shape == (6, 6)
    stack = metric.kinetic_norm([2.0, 1.0], [[0.1, 0.2, 0.3], [0, 0, 0]], [inertia, inertia])
    assert stack.shape == (2, 6, 6)
    np.testing.assert_allclose(stack[0], single)
    with pytest.raises(ValueError, match=r"mass must be > 0 \(links \[1\]\)"):
        metric.kinetic_norm([2.0, 0.0], [[0, 0, 0], [0, 0, 0]], [inertia, inertia])
    with pytest.raises(ValueError, match="inertia tensor is not positive definite"):
        metric.kinetic_norm(1.0, [0, 0, 0], np.diag([1.0, 1.0, 0.0]))
    with pytest.raises(ValueError, match="shapes"):
        metric.kinetic_norm([1.0, 2.0], [0, 0, 0], inertia)


def test_kinetic_norms_keep_the_links_kinetic_norm_accepts():
    """Per link: the kinetic Gram where kinetic_norm accepts the moments, the identity and
    valid False where it refuses them, never an error for the batch. Nearly singular inertia
    (third principal moment 1e-16, rotated) sits where an eigenvalue test and the Cholesky
    factorization kinetic_norm uses can disagree: valid must follow kinetic_norm."""
    rng = np.random.default_rng(3)
    n = 400
    rotation = metric.se3_exp(np.hstack([rng.normal(size=(n, 3)), np.zeros((n, 3))]))[0]
    inertia = rotation @ np.diag([1.0, 0.5, 1e-16]) @ np.swapaxes(rotation, 1, 2)
    inertia = 0.5 * (inertia + np.swapaxes(inertia, 1, 2))
    mass = np.ones(n)
    com = rng.normal(size=(n, 3))
    inertia[0], mass[1], com[2, 0] = np.diag([1.0, 2.0, 3.0]), 0.0, np.nan
    inertia[3] = [[1.0, 0.1, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]  # not symmetric
    grams, valid = metric.kinetic_norms(mass, com, inertia)
    assert valid[0] and not valid[1:4].any()
    for i in range(n):
        try:
            expected = metric.kinetic_norm(mass[i], com[i], inertia[i])
        except ValueError:
            expected = None
        assert valid[i] == (expected is not None)
        np.testing.assert_array_equal(grams[i], np.eye(6) if expected is None else expected)
    assert 0 < valid[4:].sum() < n - 4  # both outcomes occur among the nearly singular ones
    empty = metric.kinetic_norms(np.zeros(0), np.zeros((0, 3)), np.zeros((0, 3, 3)))
    assert empty[0].shape == (0, 6, 6) and empty[1].shape == (0,)


def test_transform_mass_moments_to_world_frame():
    angle = 0.7
    rot = np.array(
        [[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0], [0, 0, 1.0]]
    )
    mass, com, inertia = metric.transform_mass_moments(
        3.0, [1.0, 0.0, 0.0], np.diag([1.0, 2.0, 3.0]), rot, [0.0, 0.0, 5.0]
    )
    assert mass == 3.0
    np.testing.assert_allclose(com, [np.cos(angle), np.sin(angle), 5.0])
    np.testing.assert_allclose(inertia, rot @ np.diag([1.0, 2.0, 3.0]) @ rot.T)
    # A rotating joint's kinetic norm is invariant when link and twist move together.
    twist = np.array([0, 0, 1.0, 0.2, 0, 0])
    moved = np.concatenate(
        [rot @ twist[:3], rot @ twist[3:] + np.cross([0, 0, 5.0], rot @ twist[:3])]
    )
    local = twist @ metric.kinetic_norm(3.0, [1.0, 0, 0], np.diag([1.0, 2.0, 3.0])) @ twist
    world = moved @ metric.kinetic_norm(mass, com, inertia) @ moved
    assert world == pytest.approx(local, rel=1e-12)


def test_gram_factor_per_joint_count_mismatch():
    with pytest.raises(ValueError, match="3 per-joint Gram matrices for 2 joints"):
        gram_factor(np.stack([np.eye(6)] * 3), 2)
