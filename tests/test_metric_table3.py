"""The paper's Table 3: where the per-component scores fail and E does not (rows 1-7)."""

from __future__ import annotations

import numpy as np
import pytest

import metric

ALPHA = metric.split_norm(1.0)


def _params(types, axis, origin, lower, upper) -> metric.JointParameters:
    return metric.JointParameters(
        np.atleast_1d(types), np.reshape(axis, (-1, 3)), np.reshape(origin, (-1, 3)), lower, upper
    )


def _joints(p: metric.JointParameters) -> metric.Joints:
    return metric.Joints.from_parameters(p.types, p.axis, p.origin, p.lower, p.upper)


def test_table3_row1_axis_reversed_limits_negated():
    """a = (1, 0, 0), [0, 1] against a = (-1, 0, 0), [-1, 0]: e_dir = 2 while E = 0."""
    gt = _params("revolute", [1, 0, 0], [0, 0, 0], [0.0], [1.0])
    pred = _params("revolute", [-1, 0, 0], [0, 0, 0], [-1.0], [0.0])
    scores = metric.component_scores(pred, gt)
    assert scores.axis_error[0] == 0.0
    assert scores.limit_direction[0] == 2.0  # maximal against itself
    assert metric.joint_distance(_joints(pred), _joints(gt), ALPHA)[0] == 0.0


def test_table3_row2_interval_shifted_same_width():
    """[0, 1] against [1, 2]: e_range = 0 and e_dir = 0, yet E = sqrt(2) ||xi|| > 0."""
    gt = _params("revolute", [0, 0, 1], [0.2, 0, 0], [0.0], [1.0])
    pred = _params("revolute", [0, 0, 1], [0.2, 0, 0], [1.0], [2.0])
    scores = metric.component_scores(pred, gt)
    assert scores.limit_range[0] == 0.0 and scores.limit_direction[0] == 0.0
    xi = _joints(gt).twist[0]
    expected = np.sqrt(2.0) * np.sqrt(xi @ ALPHA @ xi)
    assert metric.joint_distance(_joints(pred), _joints(gt), ALPHA)[0] == pytest.approx(expected)


def test_table3_row3_near_parallel_axes():
    """The skew-line origin score has no limit as the axes align (it depends on the direction
    the axis tilts from) and is undefined at parallel; E shrinks continuously."""
    gt = _params("revolute", [0, 0, 1], [0, 0, 0], [0.0], [1.0])
    offset = [0.1, 0.0, 0.0]
    for angle in (1e-2, 1e-4, 1e-6, 1e-8):
        per_direction_score, per_direction_e = [], []
        for tilt in (0.0, np.pi / 2):
            axis = [np.sin(angle) * np.cos(tilt), np.sin(angle) * np.sin(tilt), np.cos(angle)]
            pred = _params("revolute", axis, offset, [0.0], [1.0])
            per_direction_score.append(metric.component_scores(pred, gt).origin_error[0])
            per_direction_e.append(metric.joint_distance(_joints(pred), _joints(gt), ALPHA)[0])
        # The score jumps between 0 and the offset however small the angle: no limit.
        assert per_direction_score[0] == pytest.approx(0.0, abs=1e-12)
        assert per_direction_score[1] == pytest.approx(0.1, rel=1e-6)
        # E converges to the parallel value from every direction.
        np.testing.assert_allclose(per_direction_e, 0.1, rtol=0, atol=2 * angle)
    parallel = metric.component_scores(_params("revolute", [0, 0, 1], offset, [0.0], [1.0]), gt)
    assert parallel.origin_parallel[0] and np.isinf(parallel.origin_error[0])
    # With coincident origins E shrinks to 0 as the axes align.
    e = [
        metric.joint_distance(
            _joints(_params("revolute", [np.sin(a), 0, np.cos(a)], [0, 0, 0], [0.0], [1.0])),
            _joints(gt),
            ALPHA,
        )[0]
        for a in (1e-1, 1e-2, 1e-3, 0.0)
    ]
    assert e[0] > e[1] > e[2] > e[3] == 0.0


def test_parallel_axes_measured_as_line_distance_on_request():
    """parallel="line": parallel hinges 0.03 m apart (origins also moved 0.5 m along the axis)
    have origin error 0.03 and succeed; the default keeps the template's inf (a failure).
    Non-parallel pairs and an empty batch are scored the same either way."""
    gt = _params(["revolute", "revolute"], [[0, 0, 1], [0, 0, 1]], np.zeros((2, 3)), [0, 0], [1, 1])
    pred = _params(
        ["revolute", "revolute"],
        [[0, 0, -1], [0, 0.1, 1]],
        [[0.03, 0, 0.5], [0.02, 0, 0]],
        [0, 0],
        [1, 1],
    )
    default = metric.component_scores(pred, gt)
    line = metric.component_scores(pred, gt, parallel="line")
    assert np.isinf(default.origin_error[0]) and not default.success[0]
    assert line.origin_error[0] == pytest.approx(0.03, rel=1e-12) and line.success[0]
    assert default.origin_parallel.tolist() == line.origin_parallel.tolist() == [True, False]
    assert line.origin_error[1] == default.origin_error[1] == pytest.approx(0.02, rel=1e-12)
    assert line.success[1] == default.success[1]
    empty = _params(np.array([], dtype=str), np.zeros((0, 3)), np.zeros((0, 3)), [], [])
    none = metric.component_scores(empty, empty, parallel="line")
    assert none.origin_error.shape == none.success.shape == (0,)
    with pytest.raises(ValueError, match="parallel must be"):
        metric.component_scores(pred, gt, parallel="zero")


def test_table3_row4_prismatic_origin_moved_along_the_part():
    gt = _params("prismatic", [0, 1, 0], [0, 0, 0], [0.0], [0.3])
    pred = _params("prismatic", [0, 1, 0], [0.5, 0.2, -0.1], [0.0], [0.3])
    assert metric.component_scores(pred, gt).origin_error[0] > 0.5
    assert metric.joint_distance(_joints(pred), _joints(gt), ALPHA)[0] == 0.0


def test_table3_row5_revolute_range_against_fixed():
    """[0, eps] revolute against fixed: e_type = 1 for every eps while E = eps ||xi|| -> 0."""
    fixed = _params("fixed", [0, 0, 1], [0, 0, 0], [0.0], [0.0])
    xi = _joints(_params("revolute", [0, 0, 1], [0.3, 0.1, 0], [0.0], [1.0])).twist[0]
    norm = np.sqrt(xi @ ALPHA @ xi)
    for eps in (1.0, 1e-2, 1e-4, 1e-8):
        pred = _params("revolute", [0, 0, 1], [0.3, 0.1, 0], [0.0], [eps])
        assert metric.component_scores(pred, fixed).type_error[0] == 1.0
        e = metric.joint_distance(_joints(pred), _joints(fixed), ALPHA)[0]
        assert e == pytest.approx(eps * norm, rel=1e-12)
        assert metric.distance_to_fixed(_joints(pred), ALPHA)[0] == pytest.approx(e, rel=1e-12)


def test_table3_row6_continuous_joints_are_scored():
    continuous = _params("continuous", [0, 0, 1], [0, 0, 0], [-np.inf], [np.inf])
    finite = _params("revolute", [0, 0, 1], [0, 0, 0], [-1.0], [1.0])
    assert np.isnan(metric.component_scores(finite, continuous).limit_range[0])  # undefined
    with pytest.raises(ValueError, match="1 joints have infinite limits.*pass kappa"):
        metric.joint_distance(_joints(finite), _joints(continuous), ALPHA)
    e = [
        metric.joint_distance(
            _joints(_params("revolute", [0, 0, 1], [0, 0, 0], [-half], [half])),
            _joints(continuous),
            ALPHA,
            kappa=np.pi,
        )[0]
        for half in (0.5, np.pi, 10.0, 100.0)
    ]
    assert all(np.isfinite(e)) and e[0] > e[1] > e[2] > e[3] and e[3] < 1e-12


def test_table3_row7_aggregation_and_loss():
    """Thresholded success discards magnitude; E is one metric that aggregates, with a smooth
    surrogate usable as a loss."""
    gt = _params("revolute", [0, 0, 1], [0, 0, 0], [0.0], [1.0])
    near = _params("revolute", [np.sin(0.26), 0, np.cos(0.26)], [0, 0, 0], [0.0], [1.0])
    far = _params("revolute", [1, 0, 0], [0, 0, 0], [0.0], [1.0])
    just_in = _params("revolute", [np.sin(0.24), 0, np.cos(0.24)], [0, 0, 0], [0.0], [1.0])
    success = [metric.component_scores(p, gt).success[0] for p in (near, far, just_in)]
    assert success == [False, False, True]  # 0.26 rad and 1.57 rad: the same failure
    e = [metric.joint_distance(_joints(p), _joints(gt), ALPHA)[0] for p in (near, far, just_in)]
    assert e[2] < e[0] < e[1]  # magnitude kept, ordered, and continuous across the threshold
    assert e[0] - e[2] < 0.05
    # One metric: the mean over joints is meaningful and obeys the triangle inequality.
    preds = metric.Joints.concatenate([_joints(p) for p in (near, far, just_in)])
    truth = metric.Joints.concatenate([_joints(gt)] * 3)
    between = metric.joint_distance(preds, _joints(near)[[0, 0, 0]], ALPHA)
    assert np.all(metric.joint_distance(preds, truth, ALPHA) <= between + e[0] + 1e-12)
    # The smooth surrogate is differentiable at a tie of the two swap branches, where E^2 has a
    # kink: {-z, z} against the same range about an axis tilted by theta has
    # E^2 = 4 - 4 |cos theta|, whose one-sided slopes at theta = pi / 2 are +4 and -4.
    base = metric.Joints([0, 0, 1, 0, 0, 0], -1.0, 1.0)

    def tilted(theta):
        return metric.Joints([np.sin(theta), 0, np.cos(theta), 0, 0, 0], -1.0, 1.0)

    h, tie = 1e-6, np.pi / 2
    exact = [metric.joint_distance(tilted(tie + t), base, ALPHA)[0] ** 2 for t in (-h, 0.0, h)]
    smooth = [
        metric.invariant_surrogate(tilted(tie + t), base, ALPHA, epsilon=1e-2)[0]
        for t in (-h, 0.0, h)
    ]
    assert (exact[1] - exact[0]) / h == pytest.approx(4.0, rel=1e-4)
    assert (exact[2] - exact[1]) / h == pytest.approx(-4.0, rel=1e-4)
    assert abs((smooth[1] - smooth[0]) / h - (smooth[2] - smooth[1]) / h) < 1e-3
    assert smooth[1] == pytest.approx(exact[1] - 0.1, rel=1e-9)  # sqrt(0 + epsilon) below
