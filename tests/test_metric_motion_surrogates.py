"""Material-motion discrepancy (the ground truth E_B linearizes) and the smooth surrogates."""

from __future__ import annotations

import numpy as np
import pytest

import metric


def _point_cloud(rng, n=400):
    points = rng.normal(size=(n, 3)) * [0.3, 0.1, 0.05] + [0.4, 0.2, -0.1]
    masses = rng.uniform(0.5, 1.5, n)
    mass = masses.sum()
    com = (masses[:, None] * points).sum(0) / mass
    rel = points - com
    inertia = np.einsum("n,nij->ij", masses, (rel**2).sum(1)[:, None, None] * np.eye(3))
    inertia -= np.einsum("n,ni,nj->ij", masses, rel, rel)
    return points, masses, mass, com, inertia


def test_se3_exp_is_a_rigid_motion_along_the_screw():
    rng = np.random.default_rng(0)
    twist = rng.normal(size=(20, 6))
    theta = rng.normal(size=20)
    rotation, translation = metric.se3_exp(twist, theta)
    identity = np.tile(np.eye(3), (20, 1, 1))
    np.testing.assert_allclose(rotation @ np.swapaxes(rotation, 1, 2), identity, atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(rotation), 1.0, rtol=1e-12)
    # exp(a xi) exp(b xi) = exp((a + b) xi), also through the small-angle branch.
    for scale in (1.0, 1e-6):
        ra, ta = metric.se3_exp(twist, scale * theta)
        rb, tb = metric.se3_exp(twist, 0.5 * scale * theta)
        np.testing.assert_allclose(rb @ rb, ra, atol=1e-12)
        np.testing.assert_allclose((rb @ tb[:, :, None])[:, :, 0] + tb, ta, atol=1e-12)
    # Prismatic: a pure translation; zero twist: identity.
    rot, trans = metric.se3_exp([[0, 0, 0, 0, 0, 2.0], [0] * 6], [0.5, 3.0])
    np.testing.assert_allclose(rot, np.tile(np.eye(3), (2, 1, 1)))
    np.testing.assert_allclose(trans, [[0, 0, 1.0], [0, 0, 0]])


def test_configuration_discrepancy_equals_point_cloud_rms():
    rng = np.random.default_rng(1)
    points, masses, mass, com, inertia = _point_cloud(rng)
    twist = rng.normal(size=(5, 6))
    r1, t1 = metric.se3_exp(twist, rng.normal(size=5))
    r2, t2 = metric.se3_exp(twist[::-1], rng.normal(size=5))
    ours = metric.configuration_discrepancy(r1, t1, r2, t2, mass, com, inertia)
    for i in range(5):
        moved1 = points @ r1[i].T + t1[i]
        moved2 = points @ r2[i].T + t2[i]
        rms = np.sqrt((masses * ((moved1 - moved2) ** 2).sum(1)).sum() / mass)
        assert ours[i] == pytest.approx(rms, rel=1e-10)
    with pytest.raises(ValueError, match="mass"):
        metric.configuration_discrepancy(r1, t1, r2, t2, 0.0, com, inertia)


def test_kinetic_distance_linearizes_the_material_motion():
    """E_B(J, J') -> material-motion distance as the perturbation shrinks (same child link)."""
    rng = np.random.default_rng(2)
    _, _, mass, com, inertia = _point_cloud(rng)
    gram = metric.kinetic_norm(mass, com, inertia)
    joint = metric.Joints.from_parameters(["revolute"], [[0, 0, 1.0]], [[0.1, 0.0, 0.0]], -0.5, 0.6)
    for widen in (0.2, 0.02, 0.002):
        wider = metric.Joints(joint.twist, joint.lower, joint.upper + widen)
        e_b = metric.joint_distance(joint, wider, gram)[0]
        finite = metric.material_motion_distance(joint, wider, mass, com, inertia)[0]
        # A rotation by w moves each point along a chord 2 sin(w / 2) / w of its arc.
        assert finite / e_b == pytest.approx(2.0 * np.sin(widen / 2) / widen, rel=1e-9)
    prismatic = metric.Joints([0, 0, 0, 0, 1.0, 0], 0.0, 0.3)
    moved = metric.Joints([0, 0, 0, 0, 1.0, 0], 0.1, 0.5)
    assert metric.material_motion_distance(prismatic, moved, mass, com, inertia)[0] == (
        pytest.approx(metric.joint_distance(prismatic, moved, gram)[0], rel=1e-12)
    )
    reversed_ = metric.Joints(-joint.twist, -joint.upper, -joint.lower)
    assert metric.material_motion_distance(joint, reversed_, mass, com, inertia)[0] == (
        pytest.approx(0.0, abs=1e-12)
    )
    with pytest.raises(ValueError, match="infinite limits"):
        metric.material_motion_distance(
            joint, metric.Joints(joint.twist, [-np.inf], [np.inf]), mass, com, inertia
        )


def test_surrogates_tend_to_e_squared():
    rng = np.random.default_rng(3)
    lower = rng.normal(size=500)
    j1 = metric.Joints(rng.normal(size=(500, 6)), lower, lower + rng.exponential(size=500))
    j2 = metric.Joints(rng.normal(size=(500, 6)), lower, lower + rng.exponential(size=500))
    gram = metric.split_norm(0.5)
    exact = metric.joint_distance(j1, j2, gram) ** 2
    previous = np.inf
    for temperature in (1.0, 1e-1, 1e-2, 1e-4):
        soft = metric.softmin_surrogate(j1, j2, gram, temperature)
        assert np.all(soft <= exact + 1e-12)
        assert np.all(soft >= exact - temperature * np.log(2.0) - 1e-12)
        gap = np.max(exact - soft)
        assert gap <= previous
        previous = gap
    assert previous < 1e-4
    previous = np.inf
    for epsilon in (1e-1, 1e-3, 1e-6, 0.0):
        smooth = metric.invariant_surrogate(j1, j2, gram, epsilon)
        gap = np.max(np.abs(smooth - exact))
        assert gap <= previous + 1e-9
        previous = gap
    assert previous < 1e-9 * (1 + exact.max())
    # Under phi as well, with continuous joints.
    cont = metric.Joints(j1.twist, np.full(500, -np.inf), np.full(500, np.inf))
    compact = metric.joint_distance(cont, j2, gram, kappa=2.0) ** 2
    np.testing.assert_allclose(
        metric.softmin_surrogate(cont, j2, gram, 1e-6, kappa=2.0), compact, atol=1e-5
    )
    np.testing.assert_allclose(
        metric.invariant_surrogate(cont, j2, gram, 0.0, kappa=2.0), compact, atol=1e-12
    )
    with pytest.raises(ValueError, match="temperature"):
        metric.softmin_surrogate(j1, j2, gram, 0.0)


def test_swap_invariants_ignore_endpoint_order():
    rng = np.random.default_rng(4)
    twist = rng.normal(size=(10, 6))
    lower = rng.normal(size=10)
    joints = metric.Joints(twist, lower, lower + 1.0)
    reversed_ = metric.Joints(-twist, -joints.upper, -joints.lower)
    s1, d1 = metric.swap_invariants(joints)
    s2, d2 = metric.swap_invariants(reversed_)
    np.testing.assert_allclose(s1, s2, atol=1e-12)
    np.testing.assert_allclose(d1, d2, atol=1e-12)
