"""The canonical object model: invariants raise typed errors, kinematics are right."""

import math

import numpy as np
import pytest

from normalize import errors
from normalize.model import ArticulatedObject, Geometry, Inertial, Joint, Link, Mimic
from normalize.transforms import make_transform, matrix_to_rpy, rpy_to_matrix


def chain(*joints, links=("base", "a", "b")):
    return ArticulatedObject("t", [Link(n) for n in links], list(joints))


def revolute(name="j0", parent="base", child="a", **kw):
    kw.setdefault("axis", [0, 0, 1])
    kw.setdefault("lower", -1.0)
    kw.setdefault("upper", 1.0)
    return Joint(name, "revolute", parent, child, **kw)


def test_valid_chain_has_one_root_and_topological_order():
    obj = chain(revolute("j1", "a", "b"), revolute("j0", "base", "a"))
    assert obj.root == "base"
    assert [j.name for j in obj.joints_topological] == ["j0", "j1"]


def test_cycle_is_a_cycle_error():
    with pytest.raises(errors.CycleError) as info:
        chain(revolute("j0", "a", "b"), revolute("j1", "b", "a"))
    assert info.value.code == "model.cycle"
    assert "joint j0" in info.value.element


def test_disconnected_cycle_without_root_link_is_reported():
    with pytest.raises(errors.CycleError):
        chain(revolute("j0", "a", "b"), revolute("j1", "b", "a"), links=("a", "b"))


def test_link_with_two_parents_is_a_closed_loop():
    with pytest.raises(errors.ClosedLoopError) as info:
        chain(revolute("j0", "base", "a"), revolute("j1", "a", "b"), revolute("j2", "base", "b"))
    assert info.value.code == "model.closed_loop"


def test_two_roots_is_a_root_error():
    with pytest.raises(errors.RootError) as info:
        chain(revolute("j0", "base", "a"))
    assert "2 root links" in info.value.message


def test_duplicate_link_and_joint_names():
    with pytest.raises(errors.DuplicateNameError, match="link"):
        ArticulatedObject("t", [Link("base"), Link("base")])
    with pytest.raises(errors.DuplicateNameError, match="joint"):
        chain(revolute("j0", "base", "a"), revolute("j0", "a", "b"))


def test_nan_and_inf_numbers_are_non_finite_errors():
    with pytest.raises(errors.NonFiniteError):
        revolute(origin=make_transform([math.nan, 0, 0]))
    with pytest.raises(errors.NonFiniteError):
        revolute(lower=math.nan)
    with pytest.raises(errors.NonFiniteError):
        Inertial(1.0, [0, 0, math.inf], np.eye(3))


def test_zero_and_non_unit_axes():
    with pytest.raises(errors.ZeroAxisError):
        revolute(axis=[0, 0, 0])
    with pytest.raises(errors.AxisNotUnitError):
        revolute(axis=[0, 0, 2])


def test_limits_are_checked_per_type():
    with pytest.raises(errors.LimitError):
        revolute(lower=1.0, upper=-1.0)
    with pytest.raises(errors.LimitError):
        revolute(lower=-math.inf, upper=math.inf)
    with pytest.raises(errors.LimitError):
        Joint("c", "continuous", "base", "a", axis=[0, 0, 1], lower=0, upper=1)
    with pytest.raises(errors.JointTypeError):
        Joint("s", "spherical", "base", "a")


def test_unknown_link_and_mimic_problems():
    with pytest.raises(errors.UnknownLinkError):
        chain(revolute("j0", "base", "nowhere"))
    with pytest.raises(errors.MimicError, match="does not exist"):
        chain(revolute("j0", mimic=Mimic("ghost")), revolute("j1", "a", "b"))
    with pytest.raises(errors.MimicError, match="loops"):
        chain(
            revolute("j0", mimic=Mimic("j1")),
            revolute("j1", "a", "b", mimic=Mimic("j0")),
        )


def test_screws_and_forward_kinematics():
    hinge = revolute("j0", origin=make_transform([1, 0, 0]), axis=[0, 1, 0])
    slide = Joint("j1", "prismatic", "a", "b", axis=[1, 0, 0], lower=0, upper=0.5)
    obj = chain(hinge, slide)
    s = obj.screws()
    np.testing.assert_allclose(s.twist[0], [0, 1, 0, *np.cross([1, 0, 0], [0, 1, 0])])
    np.testing.assert_allclose(s.twist[1], [0, 0, 0, 1, 0, 0])
    poses = obj.link_poses({"j0": math.pi / 2, "j1": 0.5})
    # Rotating +90 deg about y turns the slide's x axis into -z.
    np.testing.assert_allclose(poses["b"][:3, 3], [1, 0, -0.5], atol=1e-12)


def test_helical_twist_and_motion():
    screw = Joint(
        "h", "helical", "base", "a", axis=[0, 0, 1], lower=0, upper=4 * math.pi, pitch=0.01
    )
    obj = chain(screw, links=("base", "a"))
    np.testing.assert_allclose(obj.screws().twist[0], [0, 0, 1, 0, 0, 0.01])
    np.testing.assert_allclose(
        obj.link_poses({"h": 2 * math.pi})["a"][:3, 3], [0, 0, 0.02 * math.pi]
    )


def test_mimic_joint_follows_its_target():
    obj = chain(revolute("j0"), revolute("j1", "a", "b", mimic=Mimic("j0", 2.0, 0.1)))
    assert obj.resolve_configuration({"j0": 0.3})["j1"] == pytest.approx(0.7)


def test_child_mass_moments_are_in_the_world_frame():
    inertia = np.diag([1.0, 2.0, 3.0])
    links = [Link("base"), Link("a", inertial=Inertial(2.0, [1, 0, 0], inertia))]
    rot = make_transform([0, 0, 1], [0, 0, math.pi / 2])
    obj = ArticulatedObject("t", links, [revolute(origin=rot)])
    mass, com, world_inertia = obj.child_mass_moments()
    assert mass[0] == 2.0
    np.testing.assert_allclose(com[0], [0, 1, 1], atol=1e-12)
    np.testing.assert_allclose(world_inertia[0], np.diag([2.0, 1.0, 3.0]), atol=1e-12)


def test_transformed_moves_twists_like_an_adjoint():
    obj = chain(
        revolute("j0", origin=make_transform([1, 0, 0]), axis=[0, 1, 0]), links=("base", "a")
    )
    move = make_transform([0, 0, 2], [0, 0, math.pi / 2])
    moved = obj.transformed(move, scale=2.0)
    twist = moved.screws().twist[0]
    a = move[:3, :3] @ np.array([0, 1, 0])
    o = move[:3, :3] @ np.array([2, 0, 0]) + move[:3, 3]
    np.testing.assert_allclose(twist, [*a, *np.cross(o, a)], atol=1e-12)


def test_transformed_scales_primitives_by_size_and_meshes_by_scale():
    box = Geometry("box", origin=make_transform([1, 0, 0]), size=(1, 2, 3))
    mesh = Geometry("mesh", filename="/m.obj", scale=[1, 1, 2])
    obj = ArticulatedObject("o", (Link("base", visuals=(box, mesh)),))
    scaled_box, scaled_mesh = obj.transformed(np.eye(4), scale=2.0).links[0].visuals
    assert scaled_box.size == (2, 4, 6) and scaled_box.scale.tolist() == [1, 1, 1]
    assert scaled_box.origin[:3, 3].tolist() == [2, 0, 0]
    assert scaled_mesh.scale.tolist() == [2, 2, 4]


def test_rpy_round_trip():
    rpy = np.array([0.3, -0.2, 1.1])
    np.testing.assert_allclose(matrix_to_rpy(rpy_to_matrix(rpy)), rpy)


@pytest.mark.parametrize(
    "rpy", [(1.595674, -math.pi / 2, -1.595674), (0.3, math.pi / 2, 0.2), (2.0, -math.pi / 2, 1.0)]
)
def test_rpy_of_a_rotation_at_gimbal_lock_reproduces_the_rotation(rpy):
    # At pitch +-pi/2 roll and yaw are not unique, but the rotation they give must be exact
    # (a generated SDF cart lost 1e-7 rad of its wheel axis here).
    rotation = rpy_to_matrix(rpy)
    np.testing.assert_allclose(rpy_to_matrix(matrix_to_rpy(rotation)), rotation, atol=1e-15)


def test_inertial_problems_detect_triangle_inequality():
    assert Inertial(1.0, [0, 0, 0], np.diag([1.0, 1.0, 1.5])).problems() == []
    assert "triangle" in Inertial(1.0, [0, 0, 0], np.diag([1.0, 1.0, 3.0])).problems()[0]
    assert "positive" in Inertial(0.0, [0, 0, 0], np.eye(3)).problems()[0]


def test_massless_child_link_takes_the_moments_of_what_it_carries():
    wheel = Inertial(2.0, [0, 0, 0], np.diag([1.0, 1.0, 1.0]))
    links = [Link("base"), Link("swivel"), Link("wheel", inertial=wheel)]
    swivel = Joint(
        "s", "continuous", "base", "swivel", axis=[0, 0, 1], lower=-math.inf, upper=math.inf
    )
    roll = Joint(
        "r",
        "continuous",
        "swivel",
        "wheel",
        origin=make_transform([0.1, 0, 0]),
        axis=[0, 1, 0],
        lower=-math.inf,
        upper=math.inf,
    )
    obj = ArticulatedObject("caster", links, [swivel, roll])
    mass, com, inertia = obj.child_mass_moments()
    assert mass.tolist() == [2.0, 2.0]
    np.testing.assert_allclose(com, [[0.1, 0, 0], [0.1, 0, 0]])
    np.testing.assert_allclose(inertia[0], np.eye(3))
