"""Helical joints: composed from coupled prismatic + rotational pairs, split back exactly."""

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from normalize.helical import compose_helical, split_helical
from normalize.model import ArticulatedObject, Geometry, Inertial, Joint, Link, Mimic
from normalize.transforms import make_transform

BOX = Geometry("box", origin=make_transform((0.1, 0.0, 0.2), (0.3, 0.0, 0.0)), size=(1, 2, 3))
HEAVY = Inertial(2.0, np.array([0.1, 0.2, 0.3]), np.diag([1.0, 2.0, 2.5]))


def same_object(a: ArticulatedObject, b: ArticulatedObject) -> None:
    """Field-by-field exact equality of two objects."""
    assert [link.name for link in a.links] == [link.name for link in b.links]
    for la, lb in zip(a.links, b.links, strict=True):
        assert len(la.visuals) == len(lb.visuals) and len(la.collisions) == len(lb.collisions)
        for ga, gb in zip(la.visuals + la.collisions, lb.visuals + lb.collisions, strict=True):
            assert np.array_equal(ga.origin, gb.origin) and ga.size == gb.size
        assert (la.inertial is None) == (lb.inertial is None)
        if la.inertial is not None:
            assert np.array_equal(la.inertial.com, lb.inertial.com)
            assert np.array_equal(la.inertial.inertia, lb.inertial.inertia)
    assert [j.name for j in a.joints] == [j.name for j in b.joints]
    for ja, jb in zip(a.joints, b.joints, strict=True):
        assert (ja.type, ja.parent, ja.child, ja.source_name) == (
            jb.type,
            jb.parent,
            jb.child,
            jb.source_name,
        )
        assert np.array_equal(ja.origin, jb.origin) and np.array_equal(ja.axis, jb.axis)
        assert (ja.lower, ja.upper, ja.pitch) == (jb.lower, jb.upper, jb.pitch)
        ma, mb = ja.mimic, jb.mimic
        assert (ma is None) == (mb is None)
        if ma is not None:
            assert (ma.joint, ma.multiplier, ma.offset) == (mb.joint, mb.multiplier, mb.offset)


def same_motion(a, b, configurations, links=None):
    for q in configurations:
        pa, pb = a.link_poses(q), b.link_poses(q)
        for name in links or pa:
            assert np.allclose(pa[name], pb[name], atol=1e-12), (name, q)


def unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


def pair(
    order="slide_first",
    *,
    flip=False,
    driver="rotational",
    m=0.01,
    offset=0.0,
    b_origin=None,
    middle=None,
    limits=(-1.0, 2.0),
):
    """base -(a)-> mid -(b)-> tip -(fixed)-> tail: a prismatic + revolute pair coupled by mimic."""
    axis = unit([0.2, -0.3, 0.9])
    b_origin = make_transform() if b_origin is None else b_origin
    # The b axis, in b's frame, parallel (or anti-parallel) to a's axis at rest.
    b_axis = (-1 if flip else 1) * (b_origin[:3, :3].T @ axis)
    rot_lim = dict(lower=limits[0], upper=limits[1])
    if order == "slide_first":
        pris_name, rot_name, pris_axis, rot_axis = "a", "b", axis, b_axis
    else:
        pris_name, rot_name, pris_axis, rot_axis = "b", "a", b_axis, axis
    if driver == "rotational":
        pris_mimic, rot_mimic = Mimic(rot_name, m, offset), None
        pris_lim = dict(lower=-5.0, upper=5.0)
    else:
        pris_mimic, rot_mimic = None, Mimic(pris_name, 1.0 / m, offset)
        pris_lim = dict(lower=-0.01, upper=0.02)
    joints = {
        pris_name: Joint(
            pris_name, "prismatic", "", "", axis=pris_axis, mimic=pris_mimic, **pris_lim
        ),
        rot_name: Joint(rot_name, "revolute", "", "", axis=rot_axis, mimic=rot_mimic, **rot_lim),
    }
    a = replace(
        joints["a"], parent="base", child="mid", origin=make_transform((1, 2, 3), (0.1, 0.2, 0.3))
    )
    b = replace(joints["b"], parent="mid", child="tip", origin=b_origin)
    tail = Joint("c", "fixed", "tip", "tail", origin=make_transform((0.5, 0, 0), (0, 0.4, 0)))
    links = [
        Link("base"),
        middle or Link("mid"),
        Link("tip", visuals=(BOX,), inertial=HEAVY),
        Link("tail", collisions=(BOX,)),
    ]
    return ArticulatedObject("pair", links, [a, b, tail])


def driver_configurations(obj, driver_name):
    joint = obj.joint_map[driver_name]
    return [{driver_name: v} for v in (joint.lower, 0.0, 0.37 * joint.upper, joint.upper)]


@pytest.mark.parametrize("order", ["slide_first", "turn_first"])
@pytest.mark.parametrize("flip", [False, True])
@pytest.mark.parametrize("driver", ["rotational", "prismatic"])
def test_coupled_pair_composes_into_one_helical_joint_with_the_same_motion(order, flip, driver):
    obj = pair(order, flip=flip, driver=driver, m=0.01)
    composed, changes = compose_helical(obj)
    rot_name = "b" if order == "slide_first" else "a"
    pris_name = "a" if rot_name == "b" else "b"
    helical = composed.joint_map[rot_name]
    assert helical.type == "helical" and (helical.parent, helical.child) == ("base", "tip")
    assert [j.name for j in composed.joints] == [rot_name, "c"]
    assert "mid" not in composed.link_map
    assert math.isclose(helical.pitch, -0.01 if flip else 0.01, rel_tol=1e-12)
    if driver == "rotational":
        assert (helical.lower, helical.upper) == (-1.0, 2.0)
    else:
        assert np.allclose([helical.lower, helical.upper], [-1.0, 2.0])
    assert [c.code for c in changes] == ["joint.helical_composed"]
    assert rot_name in changes[0].message and pris_name in changes[0].message
    driver_name = rot_name if driver == "rotational" else pris_name
    for q in driver_configurations(obj, driver_name):
        theta = q.get(rot_name, 100.0 * q.get(pris_name, 0.0))
        before = obj.link_poses(q)
        after = composed.link_poses({rot_name: theta})
        for name in ("tip", "tail"):
            assert np.allclose(before[name], after[name], atol=1e-12)
    # Geometry and inertia stay put in the world.
    mass_before = obj.link_mass_moments_world(["tip"])
    mass_after = composed.link_mass_moments_world(["tip"])
    for x, y in zip(mass_before, mass_after, strict=True):
        assert np.allclose(x, y, atol=1e-12)


def test_rotate_then_slide_with_offset_prismatic_frame_moves_the_child_frame():
    b_origin = make_transform((0.3, -0.1, 0.05), (0.2, -0.4, 1.0))
    obj = pair("turn_first", b_origin=b_origin)
    composed, changes = compose_helical(obj)
    assert composed.joint_map["a"].type == "helical"
    assert "moved onto the screw axis" in changes[0].message
    for theta in (-1.0, 0.0, 0.5, 2.0):
        before, after = obj.link_poses({"a": theta}), composed.link_poses({"a": theta})
        assert np.allclose(before["tail"], after["tail"], atol=1e-12)

    def world_box(o):
        return o.link_poses({"a": 0.7})["tip"] @ o.link_map["tip"].visuals[0].origin

    assert np.allclose(world_box(obj), world_box(composed), atol=1e-12)


@pytest.mark.parametrize(
    "variant",
    ["uncoupled", "offset", "massive_middle", "not_parallel", "nearly_parallel", "middle_geometry"],
)
def test_pairs_that_are_not_one_screw_stay_as_they_are(variant):
    if variant == "uncoupled":
        obj = pair()
        a = obj.joint_map["a"]
        obj = obj.replace(joints=(replace(a, mimic=None), *obj.joints[1:]))
    elif variant == "offset":
        obj = pair(offset=0.001)
    elif variant == "massive_middle":
        obj = pair(middle=Link("mid", inertial=HEAVY))
    elif variant == "middle_geometry":
        obj = pair(middle=Link("mid", visuals=(BOX,)))
    else:
        obj = pair()
        b = obj.joint_map["b"]
        tilt = [0, 0, 1] if variant == "not_parallel" else unit(b.axis + [1e-7, 0, 0])
        obj = obj.replace(joints=(obj.joints[0], replace(b, axis=tilt), obj.joints[2]))
    composed, changes = compose_helical(obj)
    assert composed is obj and changes == []


def test_joints_mimicking_the_prismatic_follow_the_helical_joint():
    obj = pair(m=0.02)
    extra = Joint("d", "prismatic", "tail", "extra", lower=-1, upper=1, mimic=Mimic("a", 3.0, 0.1))
    obj = obj.replace(links=(*obj.links, Link("extra")), joints=(*obj.joints, extra))
    composed, _ = compose_helical(obj)
    mimic = composed.joint_map["d"].mimic
    assert mimic.joint == "b" and math.isclose(mimic.multiplier, 0.06) and mimic.offset == 0.1
    for theta in (-0.5, 1.5):
        before, after = obj.link_poses({"b": theta}), composed.link_poses({"b": theta})
        assert np.allclose(before["extra"], after["extra"], atol=1e-12)


def test_split_writes_a_rotational_and_a_mimicking_prismatic():
    helical = Joint(
        "screw",
        "helical",
        "base",
        "nut",
        origin=make_transform((0, 0, 1)),
        axis=[0, 0, 1],
        pitch=0.002,
        lower=-3.0,
        upper=6.0,
    )
    obj = ArticulatedObject("s", [Link("base"), Link("nut", visuals=(BOX,))], [helical])
    split = split_helical(obj)
    assert [(j.name, j.type, j.parent, j.child) for j in split.joints] == [
        ("screw", "revolute", "base", "nut__screw"),
        ("screw__screw", "prismatic", "nut__screw", "nut"),
    ]
    prismatic = split.joint_map["screw__screw"]
    assert prismatic.mimic.joint == "screw" and prismatic.mimic.multiplier == 0.002
    assert np.allclose([prismatic.lower, prismatic.upper], [-0.006, 0.012])
    assert split.link_map["nut__screw"].inertial is None
    assert split_helical(split) is split  # nothing left to split


# --------------------------------------------------------------------- round trip (hypothesis)
finite = st.floats(-3.0, 3.0, allow_nan=False)
angles = st.floats(-math.pi, math.pi, allow_nan=False)
vectors = st.tuples(finite, finite, finite).filter(lambda v: np.linalg.norm(v) > 1e-3)


@st.composite
def helical_objects(draw):
    """A chain of 1-3 helical joints, some revolute ones and one follower mimic."""
    n = draw(st.integers(1, 3))
    links, joints = [Link("base", visuals=(BOX,))], []
    parent = "base"
    for i in range(n):
        child = f"l{i}"
        links.append(Link(child, visuals=(BOX,), inertial=HEAVY))
        bounded = draw(st.booleans())
        lo = draw(st.floats(-6.0, 0.0))
        hi = draw(st.floats(0.0, 6.0))
        mimic = None
        if i > 0 and draw(st.booleans()):
            mimic = Mimic(joints[0].name, draw(finite), draw(finite))
        joints.append(
            Joint(
                f"h{i}",
                "helical",
                parent,
                child,
                origin=make_transform(draw(vectors), (draw(angles), draw(angles), draw(angles))),
                axis=unit(draw(vectors)),
                pitch=draw(st.floats(-0.1, 0.1, allow_nan=False)),
                lower=lo if bounded else -math.inf,
                upper=hi if bounded else math.inf,
                mimic=mimic,
            )
        )
        if draw(st.booleans()):
            links.append(Link(f"r{i}", collisions=(BOX,)))
            joints.append(
                Joint(f"r{i}", "revolute", child, f"r{i}", axis=[1, 0, 0], lower=-1, upper=1)
            )
        parent = child
    return ArticulatedObject("h", links, joints)


@settings(max_examples=60, deadline=None)
@given(helical_objects(), st.lists(st.floats(-2.0, 2.0), min_size=3, max_size=3))
def test_compose_undoes_split_exactly_with_the_same_motion(obj, values):
    split = split_helical(obj)
    assert not any(j.type == "helical" for j in split.joints)
    back, changes = compose_helical(split)
    same_object(back, obj)
    assert len(changes) == sum(j.type == "helical" for j in obj.joints)
    drivers = [j.name for j in obj.joints if j.mimic is None and j.moving]
    configurations = [{}, dict(zip(drivers, values, strict=False))]
    same_motion(obj, split, configurations, links=[link.name for link in obj.links])
    same_motion(obj, back, configurations)
