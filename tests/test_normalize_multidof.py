"""Multi-DOF joints decompose into exact chains of one-DOF joints, or are refused with a reason."""

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from normalize.errors import AssetError
from normalize.model import ArticulatedObject, Link
from normalize.multidof import decompose_joint
from normalize.transforms import axis_angle_matrix, make_transform

ORIGIN = make_transform((0.1, -0.2, 0.3), (0.4, -0.5, 0.6))


def build(kind, **kw):
    """The decomposed joint inside a two-link object, and its parts."""
    links, joints, change = decompose_joint(
        kind, name="j", parent="base", child="tip", origin=ORIGIN, **kw
    )
    obj = ArticulatedObject("t", [Link("base"), Link("tip"), *links], joints)
    return obj, links, joints, change


def tip_pose(obj, q):
    names = [j.name for j in obj.joints]
    return obj.link_poses(dict(zip(names, q, strict=True)))["tip"]


def rot(axis, angle):
    t = np.eye(4)
    t[:3, :3] = axis_angle_matrix(np.asarray(axis, float) / np.linalg.norm(axis), angle)
    return t


def trans(v):
    t = np.eye(4)
    t[:3, 3] = v
    return t


@pytest.mark.parametrize("kind", ["ball", "spherical"])
def test_ball_is_intrinsic_xyz_and_reaches_every_rotation(kind):
    obj, links, joints, change = build(kind)
    assert [j.name for j in joints] == ["j__dof0", "j__dof1", "j__dof2"]
    assert [link.name for link in links] == ["j__link0", "j__link1"]
    assert [j.type for j in joints] == ["continuous"] * 3
    assert [j.source_name for j in joints] == ["j"] * 3
    assert all(link.inertial is None and not link.visuals for link in links)
    assert np.array_equal(joints[0].origin, ORIGIN)
    assert all(np.array_equal(j.origin, np.eye(4)) for j in joints[1:])
    assert change.code == "joint.decomposed" and change.element == "joint j"
    assert "j__dof0" in change.message and kind in change.message
    rng = np.random.default_rng(0)
    for target in Rotation.random(20, random_state=rng):
        q = target.as_euler("XYZ")  # intrinsic x, then y, then z
        pose = tip_pose(obj, q)
        assert np.allclose(pose[:3, :3], ORIGIN[:3, :3] @ target.as_matrix(), atol=1e-12)
        assert np.allclose(pose[:3, 3], ORIGIN[:3, 3], atol=1e-15)


def test_bounded_ball_is_refused():
    with pytest.raises(AssetError) as info:
        build("ball", limits=[(-1, 1), None, None])
    assert info.value.code == "joint.unsupported"
    assert "joint j" in info.value.message and "cone" in info.value.message


def test_universal_defaults_to_x_then_y_and_keeps_per_axis_limits():
    obj, links, joints, _ = build("universal", limits=[(-1.0, 1.0), None])
    assert [j.type for j in joints] == ["revolute", "continuous"]
    assert (joints[0].lower, joints[0].upper) == (-1.0, 1.0)
    assert np.array_equal(joints[0].axis, [1, 0, 0]) and np.array_equal(joints[1].axis, [0, 1, 0])
    assert len(links) == 1
    q = (0.3, -0.7)
    expected = ORIGIN @ rot([1, 0, 0], q[0]) @ rot([0, 1, 0], q[1])
    assert np.allclose(tip_pose(obj, q), expected, atol=1e-14)


def test_revolute2_uses_given_axes_first_fixed_in_parent_second_in_child():
    a1, a2 = np.array([0.0, 0.0, 2.0]), np.array([1.0, 1.0, 0.0])
    obj, _, joints, _ = build("revolute2", axes=(a1, a2))
    q = (1.1, 0.4)
    expected = ORIGIN @ rot(a1, q[0]) @ rot(a2, q[1])
    assert np.allclose(tip_pose(obj, q), expected, atol=1e-14)
    assert np.allclose(np.linalg.norm([j.axis for j in joints], axis=1), 1.0)


@pytest.mark.parametrize("kind", ["universal", "revolute2"])
def test_parallel_axes_are_refused(kind):
    with pytest.raises(AssetError) as info:
        build(kind, axes=([0, 0, 1], [0, 0, -3]))
    assert info.value.code == "joint.unsupported" and "parallel" in info.value.message


def test_revolute2_needs_two_axes_and_zero_axis_is_a_zero_axis_error():
    with pytest.raises(AssetError) as info:
        build("revolute2")
    assert info.value.code == "joint.unsupported"
    with pytest.raises(AssetError) as info:
        build("universal", axes=([0, 0, 0], [0, 1, 0]))
    assert info.value.code == "model.zero_axis"


@pytest.mark.parametrize("normal", [(0, 0, 1), (0, 1, 0), (1, 2, 3), (-1, 0, 0)])
def test_planar_slides_in_the_plane_then_turns_about_the_normal(normal):
    kw = {} if normal == (0, 0, 1) else {"axes": (normal,)}
    obj, _, joints, _ = build("planar", **kw)
    n = np.asarray(normal, float) / np.linalg.norm(normal)
    u, v, w = (j.axis for j in joints)
    assert [j.type for j in joints] == ["prismatic", "prismatic", "continuous"]
    assert all((j.lower, j.upper) == (-math.inf, math.inf) for j in joints)
    assert np.allclose(w, n) and abs(u @ n) < 1e-15 and abs(v @ n) < 1e-15
    assert np.allclose(np.cross(u, v), n)  # right-handed
    if normal == (0, 0, 1):
        assert np.array_equal(u, [1, 0, 0]) and np.array_equal(v, [0, 1, 0])
    q = (0.2, -0.5, 2.0)
    expected = ORIGIN @ trans(q[0] * u + q[1] * v) @ rot(n, q[2])
    assert np.allclose(tip_pose(obj, q), expected, atol=1e-14)


def test_planar_with_bounded_slides_gives_bounded_prismatics():
    _, _, joints, _ = build("planar", limits=[(-0.1, 0.2), (0.0, 0.3), (-1.0, 1.0)])
    assert [(j.type, j.lower, j.upper) for j in joints] == [
        ("prismatic", -0.1, 0.2),
        ("prismatic", 0.0, 0.3),
        ("revolute", -1.0, 1.0),
    ]


@pytest.mark.parametrize("kind", ["floating", "free"])
def test_floating_reaches_any_rigid_pose(kind):
    obj, links, joints, _ = build(kind)
    assert [j.type for j in joints] == ["prismatic"] * 3 + ["continuous"] * 3
    assert len(links) == 5
    target = Rotation.from_rotvec([0.3, -1.2, 2.0])
    xyz = np.array([1.0, -2.0, 0.5])
    pose = tip_pose(obj, [*xyz, *target.as_euler("XYZ")])
    expected = ORIGIN @ trans(xyz)
    expected[:3, :3] = ORIGIN[:3, :3] @ target.as_matrix()
    assert np.allclose(pose, expected, atol=1e-12)


def test_bad_limits_and_unknown_kinds_are_refused():
    for kw, words in [
        ({"limits": [(-1, 1)]}, "1 limits"),
        ({"limits": [(0, math.inf), None]}, "one side"),
        ({"limits": [(1, -1), None]}, "lower"),
    ]:
        with pytest.raises(AssetError, match=words) as info:
            build("universal", **kw)
        assert info.value.code == "joint.unsupported"
    with pytest.raises(AssetError) as info:
        build("gearbox")
    assert info.value.code == "joint.unsupported" and "gearbox" in info.value.message


def test_decomposition_is_deterministic():
    first = build("planar", axes=((1, 2, 3),))
    second = build("planar", axes=((1, 2, 3),))
    for a, b in zip(first[2], second[2], strict=True):
        assert a.name == b.name and np.array_equal(a.axis, b.axis)
    assert first[3] == second[3]
