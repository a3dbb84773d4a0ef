"""The URDF reader: what it reads, what it fixes with a record, and every way it refuses."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from verify_assets import urdf_source, write

from normalize.adapters import discover
from normalize.errors import AssetError
from normalize.urdf import read_urdf

BOX_OBJ = """v 0 0 0
v 1 0 0
v 1 1 0
v 0 1 0
v 0 0 1
v 1 0 1
v 1 1 1
v 0 1 1
f 1 3 2
f 1 4 3
f 5 6 7
f 5 7 8
f 1 2 6
f 1 6 5
f 2 3 7
f 2 7 6
f 3 4 8
f 3 8 7
f 4 1 5
f 4 5 8
"""


def robot(body: str, name: str = "test") -> str:
    return f'<?xml version="1.0"?>\n<robot name="{name}">\n{body}\n</robot>\n'


def two_links(joint: str, child_visual: str = "") -> str:
    return robot(
        f"""<link name="a"/>
<link name="b">{child_visual}</link>
{joint}"""
    )


def hinge(attrs: str = 'type="revolute"', inner: str = '<limit lower="-1" upper="1"/>') -> str:
    return f"""<joint name="j" {attrs}>
  <parent link="a"/><child link="b"/>
  <origin xyz="0 0 1" rpy="0 0 0"/>
  <axis xyz="0 0 1"/>
  {inner}
</joint>"""


def read(tmp_path, text, name="robot.urdf", **kwargs):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    changes = []
    obj = read_urdf(path, root=tmp_path, changes=changes, **kwargs)
    return obj, changes


def refused(tmp_path, text, **kwargs) -> AssetError:
    with pytest.raises(AssetError) as info:
        read(tmp_path, text, **kwargs)
    err = info.value
    assert err.path and err.path.endswith(".urdf"), "the error names the file"
    return err


# ----------------------------------------------------------------------------- reading
def test_reads_links_joints_geometry_and_inertials(tmp_path):
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "box.obj").write_text(BOX_OBJ)
    visual = """<visual name="v"><origin xyz="0 0 0.5"/><geometry>
      <mesh filename="meshes/box.obj" scale="2 2 2"/></geometry></visual>
      <collision><geometry><cylinder radius="0.1" length="0.3"/></geometry></collision>
      <inertial><origin xyz="0 0 0.2" rpy="0 0 1.5707963267948966"/><mass value="2"/>
      <inertia ixx="1" iyy="2" izz="3" ixy="0" ixz="0" iyz="0"/></inertial>"""
    obj, changes = read(tmp_path, two_links(hinge(), visual))
    assert changes == []
    assert obj.root == "a" and obj.source.labels["robot_name"] == "test"
    b = obj.link_map["b"]
    assert b.visuals[0].kind == "mesh" and b.visuals[0].filename == str(tmp_path / "meshes/box.obj")
    assert b.visuals[0].scale.tolist() == [2.0, 2.0, 2.0]
    assert b.visuals[0].origin[:3, 3].tolist() == [0.0, 0.0, 0.5]
    assert b.collisions[0].kind == "cylinder" and b.collisions[0].size == (0.1, 0.3)
    # The inertia is rotated from the inertial frame (yaw 90 degrees) into the link frame.
    assert b.inertial.mass == 2.0
    np.testing.assert_allclose(np.diag(b.inertial.inertia), [2.0, 1.0, 3.0], atol=1e-12)
    joint = obj.joint_map["j"]
    assert (joint.type, joint.lower, joint.upper) == ("revolute", -1.0, 1.0)
    assert joint.origin[:3, 3].tolist() == [0.0, 0.0, 1.0]


def test_continuous_joint_has_no_limits_and_mimic_is_kept(tmp_path):
    text = robot(
        """<link name="a"/><link name="b"/><link name="c"/>
<joint name="spin" type="continuous"><parent link="a"/><child link="b"/><axis xyz="1 0 0"/>
  <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
<joint name="slide" type="prismatic"><parent link="b"/><child link="c"/><axis xyz="1 0 0"/>
  <limit lower="0" upper="0.5"/><mimic joint="spin" multiplier="0.01" offset="0.1"/></joint>"""
    )
    obj, _ = read(tmp_path, text)
    spin, slide = obj.joint_map["spin"], obj.joint_map["slide"]
    assert (spin.lower, spin.upper) == (-math.inf, math.inf)
    assert (slide.mimic.joint, slide.mimic.multiplier, slide.mimic.offset) == ("spin", 0.01, 0.1)


def test_non_unit_axis_is_normalized_and_recorded(tmp_path):
    text = two_links(hinge().replace('<axis xyz="0 0 1"/>', '<axis xyz="0 0 2"/>'))
    obj, changes = read(tmp_path, text)
    assert obj.joint_map["j"].axis.tolist() == [0.0, 0.0, 1.0]
    assert [c.code for c in changes] == ["axis.normalized"]
    assert "length 2" in changes[0].message and changes[0].element == "joint j"


def test_remote_mesh_is_dropped_with_a_record_and_never_fetched(tmp_path):
    visual = """<visual><geometry><mesh filename="https://example.com/gear.dae"/></geometry>
    </visual><visual><geometry><box size="1 1 1"/></geometry></visual>"""
    obj, changes = read(tmp_path, two_links(hinge(), visual))
    assert [g.kind for g in obj.link_map["b"].visuals] == ["box"]
    assert [c.code for c in changes] == ["mesh.remote_dropped"]


def test_undeclared_world_parent_is_added_with_a_record(tmp_path):
    text = robot(
        """<link name="a"/>
<joint name="to_world" type="fixed"><parent link="world"/><child link="a"/></joint>"""
    )
    obj, changes = read(tmp_path, text)
    assert obj.root == "world"
    assert [c.code for c in changes] == ["link.world_added"]


def test_reversed_limits_are_refused_unless_allowed(tmp_path):
    text = two_links(hinge(inner='<limit lower="1" upper="-0.5"/>'))
    err = refused(tmp_path, text)
    assert (err.code, err.element) == ("limits.reversed", "joint j")
    obj, changes = read(tmp_path, text, allow_reversed_limits=True)
    assert (obj.joint_map["j"].lower, obj.joint_map["j"].upper) == (-0.5, 1.0)
    assert [c.code for c in changes] == ["limits.swapped"]


def test_planar_and_floating_joints_are_decomposed(tmp_path):
    text = robot(
        """<link name="a"/><link name="b"/><link name="c"/>
<joint name="slide_plane" type="planar"><parent link="a"/><child link="b"/>
  <axis xyz="0 0 1"/></joint>
<joint name="free" type="floating"><parent link="b"/><child link="c"/></joint>"""
    )
    obj, changes = read(tmp_path, text)
    assert [c.code for c in changes] == ["joint.decomposed", "joint.decomposed"]
    types = [j.type for j in obj.joints]
    assert (
        types == ["prismatic", "prismatic", "continuous"] + ["prismatic"] * 3 + ["continuous"] * 3
    )
    assert {j.source_name for j in obj.joints} == {"slide_plane", "free"}
    # The chain still ends at the declared child links.
    assert obj.joints[2].child == "b" and obj.joints[-1].child == "c"


DRAKE = """<?xml version="1.0"?>
<robot xmlns:drake="http://drake.mit.edu" name="d">
  <link name="a"/><link name="b"/>
  {joint}
</robot>"""


def test_drake_screw_joint_becomes_helical_with_pitch_per_radian(tmp_path):
    joint = """<drake:joint name="screw" type="screw"><parent link="a"/><child link="b"/>
      <axis xyz="0 0 1"/><drake:screw_thread_pitch value="0.04"/></drake:joint>"""
    obj, changes = read(tmp_path, DRAKE.format(joint=joint))
    screw = obj.joint_map["screw"]
    assert screw.type == "helical" and screw.pitch == 0.04 / (2 * math.pi)
    assert (screw.lower, screw.upper) == (-math.inf, math.inf)
    assert [c.code for c in changes] == ["joint.screw_helical"]


def test_drake_screw_joint_without_pitch_is_refused(tmp_path):
    joint = """<drake:joint name="screw" type="screw"><parent link="a"/><child link="b"/>
      <axis xyz="1 0 0"/></drake:joint>"""
    err = refused(tmp_path, DRAKE.format(joint=joint))
    assert (err.code, err.element) == ("joint.screw_pitch_missing", "joint screw")


@pytest.mark.parametrize(("kind", "dofs"), [("ball", 3), ("universal", 2), ("planar", 3)])
def test_drake_multi_dof_joints_are_decomposed_never_dropped(tmp_path, kind, dofs):
    joint = f"""<drake:joint name="m" type="{kind}"><parent link="a"/><child link="b"/>
      </drake:joint>"""
    obj, changes = read(tmp_path, DRAKE.format(joint=joint))
    assert len(obj.joints) == dofs and {j.source_name for j in obj.joints} == {"m"}
    assert [c.code for c in changes] == ["joint.decomposed"]


def test_bounded_spherical_joint_is_refused(tmp_path):
    text = two_links(hinge('type="spherical"', '<limit lower="0.2" upper="0.8"/>'))
    assert refused(tmp_path, text).code == "joint.unsupported"


# ----------------------------------------------------------------------------- refusals
@pytest.mark.parametrize(
    ("text", "code"),
    [
        (b"<robot name='x'><link name='a'>", "xml.truncated"),
        (b"<robot name='x'><link name='a'></robot>", "xml.malformed"),
        (b"<robot name='\xff\xfe'><link name='a'/></robot>", "xml.encoding"),
        (
            b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY e "x">]><robot name="&e;"/>',
            "xml.entity",
        ),
        (b"", "xml.empty"),
        (b"<sdf><model/></sdf>", "urdf.not_robot"),
    ],
)
def test_bad_xml_is_refused(tmp_path, text, code):
    assert refused(tmp_path, text).code == code


@pytest.mark.parametrize(
    ("joint", "code", "element"),
    [
        (hinge(inner=""), "joint.limits_missing", "joint j"),
        (hinge('type="prismatic"', ""), "joint.limits_missing", "joint j"),
        (hinge().replace('xyz="0 0 1" rpy', 'xyz="0.07, 0 1" rpy'), "parse.number", "joint j"),
        (
            hinge().replace('xyz="0 0 1" rpy', 'xyz="$(optenv X 0 0 1)" rpy'),
            "parse.number",
            "joint j",
        ),
        (hinge().replace('xyz="0 0 1" rpy', 'xyz="nan 0 1" rpy'), "parse.nan", "joint j"),
        (hinge(inner='<limit lower="-inf" upper="1"/>'), "parse.infinite", "joint j"),
        (hinge().replace('xyz="0 0 1" rpy', 'xyz="0 1" rpy'), "parse.vector", "joint j"),
        (
            hinge().replace('<axis xyz="0 0 1"/>', '<axis xyz="0 0 0"/>'),
            "model.zero_axis",
            "joint j",
        ),
        (hinge('type="screwy"'), "joint.unsupported", "joint j"),
    ],
)
def test_bad_joints_are_refused_naming_the_element(tmp_path, joint, code, element):
    err = refused(tmp_path, two_links(joint))
    assert (err.code, err.element) == (code, element)
    assert "j" in str(err) and "robot.urdf" in str(err)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        # a cycle: a -> b -> a
        (
            """<link name="a"/><link name="b"/>
            <joint name="j1" type="fixed"><parent link="a"/><child link="b"/></joint>
            <joint name="j2" type="fixed"><parent link="b"/><child link="a"/></joint>""",
            "model.cycle",
        ),
        ("""<link name="a"/><link name="b"/>""", "model.root"),
        ("""<link name="a"/><link name="a"/>""", "model.duplicate_name"),
        (
            """<link name="a"/><link name="b"/><link name="c"/>
            <joint name="j1" type="fixed"><parent link="a"/><child link="c"/></joint>
            <joint name="j2" type="fixed"><parent link="b"/><child link="c"/></joint>""",
            "model.closed_loop",
        ),
        (
            """<link name="a"/>
            <joint name="j" type="fixed"><parent link="a"/><child link="ghost"/></joint>""",
            "model.unknown_link",
        ),
    ],
)
def test_structural_errors_are_refused(tmp_path, body, code):
    assert refused(tmp_path, robot(body)).code == code


def test_mesh_references_never_leave_the_root(tmp_path):
    root = tmp_path / "library"
    root.mkdir()
    (tmp_path / "secret.obj").write_text(BOX_OBJ)
    (root / "link.obj").symlink_to(tmp_path / "secret.obj")
    cases = {
        "../secret.obj": "path.outside_root",
        str(tmp_path / "secret.obj"): "path.outside_root",
        f"file://{tmp_path / 'secret.obj'}": "path.outside_root",
        "link.obj": "path.symlink_escape",
    }
    for reference, code in cases.items():
        visual = f'<visual><geometry><mesh filename="{reference}"/></geometry></visual>'
        path = root / "robot.urdf"
        path.write_text(two_links(hinge(), visual))
        with pytest.raises(AssetError) as info:
            read_urdf(path, root=root)
        assert info.value.code == code, reference


def test_missing_mesh_and_unknown_format_are_refused(tmp_path):
    visual = '<visual><geometry><mesh filename="nowhere.obj"/></geometry></visual>'
    err = refused(tmp_path, two_links(hinge(), visual))
    assert (err.code, err.stage, err.element) == ("mesh.missing", "mesh", "link b, <visual>")
    (tmp_path / "torso.mesh").write_text("x")
    visual = '<visual><geometry><mesh filename="torso.mesh"/></geometry></visual>'
    assert refused(tmp_path, two_links(hinge(), visual)).code == "mesh.format"


def test_package_references_resolve_by_walking_up_to_the_root(tmp_path):
    mesh_dir = tmp_path / "my_robot" / "meshes"
    mesh_dir.mkdir(parents=True)
    (mesh_dir / "box.obj").write_text(BOX_OBJ)
    (tmp_path / "my_robot" / "urdf").mkdir()
    visual = (
        '<visual><geometry><mesh filename="package://my_robot/meshes/box.obj"/></geometry></visual>'
    )
    path = tmp_path / "my_robot" / "urdf" / "robot.urdf"
    path.write_text(two_links(hinge(), visual))
    obj = read_urdf(path, root=tmp_path)
    assert obj.link_map["b"].visuals[0].filename == str(mesh_dir / "box.obj")


def test_file_size_limit(tmp_path):
    text = two_links(hinge())
    assert refused(tmp_path, text, max_bytes=len(text) - 1).code == "file.too_large"


def test_infinite_prismatic_limits_only_when_asked(tmp_path):
    text = two_links(hinge('type="prismatic"', '<limit lower="-inf" upper="inf"/>'))
    assert refused(tmp_path, text).code == "parse.infinite"
    obj, _ = read(tmp_path, text, infinite_limits=True)
    assert (obj.joint_map["j"].lower, obj.joint_map["j"].upper) == (-math.inf, math.inf)


def test_entries_leaving_the_root_or_not_files_are_candidates_refused_on_load(tmp_path):
    """Discovery accounts for every match; loading refuses what it must never read."""
    from normalize.adapters import discover, get_adapter
    from normalize.sources import SourceConfig

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "robot.urdf").write_text(two_links(hinge()))
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "real.urdf").write_text(two_links(hinge()))
    (root / "folder.urdf").mkdir()
    os.symlink(outside / "robot.urdf", root / "escape.urdf")
    source = SourceConfig(name="lib", format="urdf", path=root, license="x")
    candidates = {c.source_id: c for c in discover(source)}
    assert sorted(candidates) == ["escape", "folder", "sub/real"]
    adapter = get_adapter("urdf")
    assert adapter.load(candidates["sub/real"]).moving_joints
    for source_id, code in (("escape", "path.symlink_escape"), ("folder", "file.is_directory")):
        with pytest.raises(AssetError) as info:
            adapter.load(candidates[source_id])
        assert info.value.code == code


def test_a_urdf_named_xml_is_discovered_by_its_root_element(tmp_path):
    """The suffix does not decide: an .xml whose root element is <robot> is a URDF entry of a
    `format: urdf` source (also when `include:` names it); other .xml files are not."""
    robot = '<robot name="r"><link name="a"/></robot>'
    root = write(
        tmp_path / "lib",
        {
            "arm/arm.xml": robot,
            "arm/package.xml": "<package><name>arm</name></package>",
            "plain/plain.urdf": robot,
            "scene.xml": '<mujoco model="m"/>',
        },
    )
    found = {c.source_id for c in discover(urdf_source(root))}
    assert found == {"arm/arm", "plain/plain"}
    only = {c.source_id for c in discover(urdf_source(root, include=("arm/*",)))}
    assert only == {"arm/arm"}
