"""The convention rules (docs/convention.md) on small hand-written objects, end to end through
`normalize_candidate`: placement, contraction, names, axis signs, re-anchoring, inertials,
helical storage, and the exact round trip of the written file."""

from __future__ import annotations

import logging
import math
import warnings

import numpy as np
import pytest
import yourdfpy
from lxml import etree
from verify_assets import write

from normalize.adapters import discover
from normalize.convention import CONVENTION_VERSION, needs_flip
from normalize.errors import AssetError
from normalize.meshes import MESH_DENSITY, WALL_THICKNESS
from normalize.run import normalize_candidate
from normalize.sources import Allowance, SourceConfig
from normalize.urdf import read_object
from verify.loaders import yourdfpy_problems


def normalize(tmp_path, text: str, files: dict | None = None, **config):
    root = write(tmp_path / "lib", {"thing.urdf": text, **(files or {})})
    source = SourceConfig(name="lib", format="urdf", path=root, license="x", **config)
    (candidate,) = discover(source)
    return normalize_candidate(candidate, tmp_path / "out")


def codes(result) -> list[str]:
    return [c.code for c in result.changes]


def assert_round_trip(result):
    back = read_object(result.urdf_path)
    obj = result.object
    assert [link.name for link in back.links] == [link.name for link in obj.links]
    for a, b in zip(obj.links, back.links, strict=True):
        for ga, gb in zip((*a.visuals, *a.collisions), (*b.visuals, *b.collisions), strict=True):
            assert (ga.kind, ga.filename, ga.size) == (gb.kind, gb.filename, gb.size)
            assert np.array_equal(ga.origin, gb.origin) and np.array_equal(ga.scale, gb.scale)
        assert (a.inertial is None) == (b.inertial is None)
        if a.inertial is not None:
            assert a.inertial.mass == b.inertial.mass
            assert np.array_equal(a.inertial.com, b.inertial.com)
            assert np.array_equal(a.inertial.inertia, b.inertial.inertia)
    for a, b in zip(obj.joints, back.joints, strict=True):
        assert (a.name, a.type, a.parent, a.child) == (b.name, b.type, b.parent, b.child)
        assert (a.lower, a.upper, a.pitch) == (b.lower, b.upper, b.pitch)
        assert np.array_equal(a.origin, b.origin) and np.array_equal(a.axis, b.axis)
        assert (a.mimic is None) == (b.mimic is None)
        if a.mimic is not None:
            assert (a.mimic.joint, a.mimic.multiplier, a.mimic.offset) == (
                b.mimic.joint,
                b.mimic.multiplier,
                b.mimic.offset,
            )
    assert len(obj.joints) == len(back.joints)


def load_yourdfpy(path, caplog, **kwargs):
    """Load with yourdfpy; fail on any warning or logged warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with caplog.at_level(logging.WARNING):
            caplog.clear()
            urdf = yourdfpy.URDF.load(str(path), **kwargs)
            assert yourdfpy_problems(urdf) == []
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    return urdf


CABINET = """<?xml version="1.0"?>
<robot name="cabinet">
  <link name="world"/>
  <link name="body"><visual><origin xyz="0 0 0.5"/><geometry><box size="1 0.6 1"/></geometry>
    </visual></link>
  <link name="handle_frame"/>
  <link name="door"><visual><origin xyz="0.25 0 0"/><geometry><box size="0.5 0.02 0.9"/>
    </geometry></visual></link>
  <link name="drawer"><visual><geometry><box size="0.4 0.5 0.1"/></geometry></visual>
    <inertial><mass value="3"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>
    </inertial></link>
  <link name="knob"><visual><geometry><sphere radius="0.02"/></geometry></visual></link>
  <joint name="mount" type="fixed"><parent link="world"/><child link="body"/>
    <origin xyz="3 4 5"/></joint>
  <joint name="z_frame" type="fixed"><parent link="body"/><child link="handle_frame"/>
    <origin xyz="0.5 0.3 0.1" rpy="0 0 0.3"/></joint>
  <joint name="door_hinge" type="revolute"><parent link="handle_frame"/><child link="door"/>
    <origin xyz="0 0 0.5"/><axis xyz="0 0 -1"/><limit lower="-0.2" upper="1.5"/></joint>
  <joint name="a_slide" type="prismatic"><parent link="body"/><child link="drawer"/>
    <origin xyz="0 0 0.9"/><axis xyz="1 0 0"/><limit lower="0" upper="0.4"/></joint>
  <joint name="knob_fix" type="fixed"><parent link="drawer"/><child link="knob"/>
    <origin xyz="0.2 0 0"/></joint>
</robot>
"""


def test_placement_contraction_names_and_signs(tmp_path, caplog):
    result = normalize(tmp_path, CABINET)
    obj = result.object
    # Canonical names: base, then DFS pre-order with joints sorted by source name.
    assert [j.name for j in obj.joints] == ["joint_0", "joint_1"]
    assert [j.source_name for j in obj.joints] == ["a_slide", "door_hinge"]
    assert [link.name for link in obj.links] == ["base", "link_0", "link_1"]
    assert obj.link_map["base"].source_names == ("world", "body", "handle_frame")
    assert obj.link_map["link_0"].source_names == ("drawer", "knob")
    assert len(obj.link_map["link_0"].visuals) == 2  # the knob's sphere merged in
    assert codes(result).count("joint.fixed_contracted") == 3
    # Axis sign: the hinge axis points down in the world, so it is flipped with its limits.
    hinge = obj.joint_map["joint_1"]
    assert hinge.axis.tolist() == [0.0, 0.0, 1.0]
    assert (hinge.lower, hinge.upper) == (-1.5, 0.2)
    assert "axis.flipped" in codes(result)
    # Placement: rest visual box centred on z with its bottom at z = 0.
    from normalize.convention import rest_bounds

    low, high = rest_bounds(result.reference.transformed(result.placement, result.scale))
    np.testing.assert_allclose(
        [(low[0] + high[0]) / 2, (low[1] + high[1]) / 2, low[2]], 0, atol=1e-12
    )
    low2, high2 = rest_bounds(obj)
    np.testing.assert_allclose(low2, low, atol=1e-12)
    np.testing.assert_allclose(high2, high, atol=1e-12)
    # Same motion as the placed reference, including the flipped hinge.
    placed = result.reference.transformed(result.placement, result.scale)
    for q in (0.0, 0.3, -0.1):
        pa = placed.link_poses({"door_hinge": q, "a_slide": 0.2})
        pb = obj.link_poses({"joint_1": -q, "joint_0": 0.2})
        np.testing.assert_allclose(pa["door"], pb["link_1"], atol=1e-12)
        np.testing.assert_allclose(pa["drawer"], pb["link_0"], atol=1e-12)
    assert_round_trip(result)
    load_yourdfpy(result.urdf_path, caplog)
    assert result.urdf_path == tmp_path / "out" / "objects" / "lib__thing" / "object.urdf"


def test_inertials_source_when_valid_else_from_shapes(tmp_path):
    result = normalize(tmp_path, CABINET)
    obj = result.object
    drawer = obj.link_map["link_0"]  # valid source inertial (3 kg) + the knob computed
    knob_mass = MESH_DENSITY * 4 / 3 * math.pi * 0.02**3
    assert drawer.inertial.mass == pytest.approx(3 + knob_mass)
    assert drawer.inertial.method == "source+sphere_formula"
    door = obj.link_map["link_1"]
    assert door.inertial.mass == pytest.approx(MESH_DENSITY * 0.5 * 0.02 * 0.9)
    assert door.inertial.method == "box_formula"
    assert door.inertial.problems() == []
    computed = [c for c in result.changes if c.code == "inertial.computed"]
    assert {c.element for c in computed} == {"link body", "link door", "link knob"}
    # The base gets its mass from its shapes too: a 1 x 0.6 x 1 m box, 600 kg as a solid, is
    # taken for hollow and weighed as 15 mm walls.
    base = obj.link_map["base"].inertial
    assert base.method == "box_wall_shell"
    area = 2 * (1 * 0.6 + 0.6 * 1 + 1 * 1)
    assert base.mass == pytest.approx(MESH_DENSITY * area * WALL_THICKNESS)
    # PyBullet invents 1 kg for a link without <inertial>: every written link has one.
    root = etree.fromstring(result.urdf_path.read_bytes())
    assert all(link.find("inertial") is not None for link in root.iter("link"))


def test_rest_pose_outside_limits_is_reanchored(tmp_path):
    text = CABINET.replace('lower="0" upper="0.4"', 'lower="0.1" upper="0.4"')
    result = normalize(tmp_path, text)
    slide = result.reference.joint_map["a_slide"]
    assert (slide.lower, slide.upper) == (0.0, pytest.approx(0.3))
    assert slide.origin[:3, 3].tolist() == pytest.approx([0.1, 0.0, 0.9])
    raw = result.raw.joint_map["a_slide"]
    assert (raw.lower, raw.upper) == (0.1, 0.4)
    change = next(c for c in result.changes if c.code == "joint.reanchored")
    assert change.element == "joint a_slide" and "0.1" in change.message
    # The re-anchored reference at q is the raw object at q + 0.1.
    np.testing.assert_allclose(
        result.reference.link_poses({"a_slide": 0.2})["drawer"],
        result.raw.link_poses({"a_slide": 0.3})["drawer"],
        atol=1e-12,
    )


def test_full_turn_is_flagged(tmp_path):
    text = CABINET.replace('lower="-0.2" upper="1.5"', 'lower="-3.2" upper="3.2"')
    result = normalize(tmp_path, text)
    (flag,) = [c for c in result.changes if c.code == "limits.full_turn"]
    assert flag.element == "joint joint_1"


def test_up_axis_and_scale(tmp_path):
    result = normalize(tmp_path, CABINET, up_axis="y", scale=2.0)
    assert result.scale == 2.0
    # y up: the source's +y becomes +z.
    np.testing.assert_allclose(result.placement[:3, :3] @ [0, 1, 0], [0, 0, 1], atol=1e-15)
    slide = result.object.joint_map["joint_0"]
    assert slide.upper - slide.lower == pytest.approx(0.8)  # prismatic limits scale
    assert {"frame.up_axis", "frame.scale", "frame.placement"} <= set(codes(result))
    # The drawer slides along source x, which stays x.
    s = result.object.screws((slide,))
    np.testing.assert_allclose(s.twist[0], [0, 0, 0, 1, 0, 0], atol=1e-12)


def test_axis_sign_rule():
    assert not needs_flip(np.array([0.0, 0.0, 1.0]))
    assert needs_flip(np.array([0.0, -1.0, 0.0]))
    assert needs_flip(np.array([-0.6, 0.0, 0.8])) is False
    # Ties go to x first: (-a, a, 0) is flipped, (a, -a, 0) is not.
    s = math.sqrt(0.5)
    assert needs_flip(np.array([-s, s, 0.0]))
    assert not needs_flip(np.array([s, -s, 0.0]))


MIMIC = """<?xml version="1.0"?>
<robot name="gripper">
  <link name="palm"><visual><geometry><box size="0.1 0.1 0.1"/></geometry></visual></link>
  <link name="left"><visual><geometry><box size="0.01 0.02 0.05"/></geometry></visual></link>
  <link name="right"><visual><geometry><box size="0.01 0.02 0.05"/></geometry></visual></link>
  <joint name="left_slide" type="prismatic"><parent link="palm"/><child link="left"/>
    <origin xyz="0 0.05 0.1"/><axis xyz="0 -1 0"/><limit lower="0" upper="0.04"/></joint>
  <joint name="right_slide" type="prismatic"><parent link="palm"/><child link="right"/>
    <origin xyz="0 -0.05 0.1"/><axis xyz="0 1 0"/><limit lower="0" upper="0.04"/>
    <mimic joint="left_slide" multiplier="1" offset="0"/></joint>
</robot>
"""


def test_mimic_survives_axis_flips(tmp_path, caplog):
    result = normalize(tmp_path, MIMIC)
    obj = result.object
    left = next(j for j in obj.joints if j.source_name == "left_slide")
    right = next(j for j in obj.joints if j.source_name == "right_slide")
    assert left.axis.tolist() == [0.0, 1.0, 0.0] and right.mimic.joint == left.name
    assert right.mimic.multiplier == -1.0
    placed = result.reference.transformed(result.placement, result.scale)
    for q in (0.0, 0.01, 0.03):
        pa = placed.link_poses({"left_slide": q})
        pb = obj.link_poses({left.name: -q})
        for src, dst in (("left", left.child), ("right", right.child)):
            np.testing.assert_allclose(pa[src], pb[dst], atol=1e-12)
    assert_round_trip(result)
    load_yourdfpy(result.urdf_path, caplog)


SCREW = """<?xml version="1.0"?>
<robot xmlns:drake="http://drake.mit.edu" name="jar">
  <link name="jar"><visual><geometry><cylinder radius="0.05" length="0.1"/></geometry></visual>
  </link>
  <link name="lid"><visual><geometry><capsule radius="0.05" length="0.02"/></geometry></visual>
  </link>
  <drake:joint name="twist" type="screw"><parent link="jar"/><child link="lid"/>
    <origin xyz="0 0 0.06" rpy="0.1 -0.2 0.3"/><axis xyz="0 0 1"/>
    <drake:screw_thread_pitch value="0.005"/>
    <limit lower="-6" upper="0"/></drake:joint>
</robot>
"""


def test_helical_joint_written_as_mimic_pair_and_read_back(tmp_path, caplog):
    result = normalize(tmp_path, SCREW)
    (joint,) = result.object.joints
    assert joint.type == "helical" and joint.source_name == "twist"
    assert abs(joint.pitch) == pytest.approx(0.005 / (2 * math.pi))
    assert_round_trip(result)
    urdf = load_yourdfpy(result.urdf_path, caplog)
    types = sorted(j.type for j in urdf.robot.joints)
    assert types == ["prismatic", "revolute"]
    mimic = next(j for j in urdf.robot.joints if j.type == "prismatic").mimic
    assert mimic.joint == joint.name and mimic.multiplier == joint.pitch
    # The capsule is written as a mesh, recorded.
    lid = result.object.link_map[joint.child]
    assert lid.visuals[0].kind == "mesh" and lid.visuals[0].filename.startswith("meshes/")
    assert "geometry.capsule_meshed" in codes(result)
    load_yourdfpy(result.urdf_path, caplog, load_meshes=True)
    # MuJoCo loads the pair (massless middle link allowed by the file's <mujoco> hint) and turns
    # the mimic into a joint equality.
    import mujoco

    model = mujoco.MjModel.from_xml_path(str(result.urdf_path))
    assert (model.njnt, model.neq) == (2, 1)
    assert model.jnt_range[0].tolist() == [joint.lower, joint.upper]


def test_rotations_round_trip_bit_for_bit(tmp_path):
    rng = np.random.default_rng(7)
    joints, links = [], ['<link name="l0"/>']
    for i in range(1, 30):
        xyz = " ".join(repr(float(v)) for v in rng.normal(size=3))
        rpy = " ".join(repr(float(v)) for v in rng.uniform(-3.2, 3.2, size=3))
        if i % 5 == 0:
            rpy = f"0.1 {math.pi / 2} -0.4"  # gimbal lock
        axis = " ".join(repr(float(v)) for v in rng.normal(size=3))
        links.append(
            f'<link name="l{i}"><visual><origin xyz="{xyz}" rpy="{rpy}"/>'
            f'<geometry><box size="0.1 0.2 0.3"/></geometry></visual></link>'
        )
        kind = ("revolute", "continuous", "prismatic", "fixed")[i % 4]
        joints.append(
            f'<joint name="j{i:02d}" type="{kind}"><parent link="l{int(rng.integers(0, i))}"/>'
            f'<child link="l{i}"/><origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>'
            f'<limit lower="-0.5" upper="0.7"/></joint>'
        )
    text = '<robot name="r">' + "".join(links + joints) + "</robot>"
    result = normalize(tmp_path, text)
    assert_round_trip(result)
    placed = result.reference.transformed(result.placement, result.scale)
    a = placed.screws(placed.moving_joints)
    b = result.object.screws(result.object.moving_joints)
    order = [a.names.index(j.source_name) for j in result.object.moving_joints]
    for k, i in enumerate(order):
        gap = min(np.abs(a.twist[i] - b.twist[k]).max(), np.abs(a.twist[i] + b.twist[k]).max())
        assert gap < 1e-12


def test_reversed_limits_swapped_only_with_an_allowance(tmp_path):
    text = CABINET.replace('lower="0" upper="0.4"', 'lower="0.4" upper="0"')
    with pytest.raises(AssetError) as info:
        normalize(tmp_path, text)
    assert info.value.code == "limits.reversed"
    assert not (tmp_path / "out" / "objects" / "lib__thing").exists()
    allowance = Allowance("limits.reversed", "upper first on purpose", ("thing",))
    result = normalize(tmp_path, text, allowances=(allowance,))
    assert "limits.swapped" in codes(result)
    assert CONVENTION_VERSION


@pytest.mark.parametrize(
    "shape",
    ['<sphere radius="0"/>', '<box size="0 0.2 0.2"/>', '<cylinder radius="0.1" length="0"/>'],
)
def test_a_zero_size_primitive_is_dropped_and_recorded(tmp_path, shape):
    """MuJoCo refuses a primitive whose size is not positive (it crashed the MJCF writer): it
    is dropped, recorded as geometry.shape_dropped, and the object ships."""
    geometry = f"<geometry>{shape}</geometry>"
    text = f"""<robot name="r">
      <link name="a"><visual><geometry><box size="0.2 0.2 0.2"/></geometry></visual></link>
      <link name="b"><visual>{geometry}</visual><collision>{geometry}</collision>
        <visual><geometry><box size="0.1 0.1 0.1"/></geometry></visual></link>
      <joint name="j" type="revolute"><parent link="a"/><child link="b"/>
        <origin xyz="0 0 0.3"/><axis xyz="0 0 1"/>
        <limit lower="0" upper="1" effort="1" velocity="1"/></joint>
    </robot>"""
    result = normalize(tmp_path, text)
    assert codes(result).count("geometry.shape_dropped") == 2
    moving = result.object.links[1]
    assert len(moving.visuals) == 1 and moving.collisions == ()
    assert (result.urdf_path.parent / "object.xml").is_file()


def test_an_undeclared_drake_prefix_is_read_as_drake_reads_it(tmp_path):
    """A `<drake:joint>` in a file without xmlns:drake: Drake loads it, so it is read (here a
    planar joint, decomposed as with the declaration) and the reading recorded."""
    text = """<robot name="r">
      <link name="a"><visual><geometry><box size="0.2 0.2 0.2"/></geometry></visual></link>
      <link name="b"><visual><geometry><box size="0.1 0.1 0.1"/></geometry></visual></link>
      <drake:joint name="slide" type="planar"><parent link="a"/><child link="b"/>
        <origin xyz="0 0 0.3"/><axis xyz="0 0 1"/></drake:joint>
    </robot>"""
    result = normalize(tmp_path, text)
    assert "xml.undeclared_prefix" in codes(result)
    assert len([j for j in result.object.joints if j.moving]) == 3  # x, y and the turn
