"""SDF adapter: corpus objects loaded or refused with specific codes, SDFormat pose/axis/limit
semantics per version, screw pitch tags, multi-DOF joints, and hostile files."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import trimesh
from verify_assets import write

from normalize.adapters import discover, get_adapter
from normalize.adapters.sdf import read_joints
from normalize.discovery import Candidate
from normalize.errors import AssetError
from normalize.sources import Allowance, SourceConfig
from normalize.transforms import axis_angle_matrix

ADAPTER = get_adapter("sdf")


@pytest.fixture(scope="module")
def candidates(corpus_candidates) -> dict[str, Candidate]:
    """object_id -> Candidate of the corpus's SDF objects."""
    return {k: c for k, c in corpus_candidates.items() if c.source.format == "sdf"}


# Every SDF object of the corpus and the code it is refused with.
EXPECTED_CODES = {
    # an absolute mesh path, /meshes/link_0.stl, which leaves the source root
    "pybullet_data_sdf__kuka_iiwa__kuka_with_gripper2": "path.outside_root",
    # two separate trees (link2 -> link1 by a ball joint, link4 -> link3 by a prismatic one)
    "sdformat_tests__ball_prismatic_joint__ball_prismatic_joint": "model.root",
    # four revolute joints around a loop
    "sdformat_tests__four_bar__four_bar": "model.closed_loop",
    # five alternative screw joints between the same two links
    "sdformat_tests__joint_screw_thread_pitch__joint_screw_thread_pitch": "model.closed_loop",
}


# SDF objects of the corpus that load (gazebo_models: one model.sdf per model folder).
ACCEPTED = ("gazebo_models__drc_practice_ball_valve__model", "gazebo_models__simple_gripper__model")


def test_discovery_lists_the_sdf_files_only(candidates):
    assert sorted(candidates) == sorted([*EXPECTED_CODES, *ACCEPTED])


@pytest.mark.parametrize("object_id", sorted(EXPECTED_CODES))
def test_corpus_object_is_refused_with_its_code(object_id, candidates):
    with pytest.raises(AssetError) as info:
        ADAPTER.load(candidates[object_id])
    assert info.value.code == EXPECTED_CODES[object_id]
    assert info.value.path and info.value.element


def test_screw_thread_pitch_tags_give_the_same_helical_pitch(candidates):
    joints, changes = read_joints(
        candidates["sdformat_tests__joint_screw_thread_pitch__joint_screw_thread_pitch"]
    )
    assert joints["default_param"].code == "joint.screw_pitch_missing"
    per_turn = 0.5  # metres per revolution, right-handed
    for name in ("both_params", "new_param", "param_precedence"):
        (joint,) = joints[name]
        assert joint.type == "helical" and joint.pitch == per_turn / (2 * math.pi)
        assert np.array_equal(joint.axis, [0, 0, 1])
        assert np.allclose(joint.origin[:3, 3], [0, 0, 9])  # child link at z=10, parent at z=1
        assert (joint.lower, joint.upper) == (-math.inf, math.inf)
    # the deprecated tag alone: -12.566 rad/m (positive = left-handed) is the same thread
    (old,) = joints["old_param"]
    assert math.isclose(old.pitch, per_turn / (2 * math.pi), rel_tol=1e-4)
    # both tags agree in both_params; in param_precedence they do not, and the current tag wins
    conflicts = [c.element for c in changes if c.code == "sdf.thread_pitch_conflict"]
    assert conflicts == ["joint param_precedence"]


def test_ball_joint_of_ball_prismatic_is_decomposed(candidates):
    joints, changes = read_joints(
        candidates["sdformat_tests__ball_prismatic_joint__ball_prismatic_joint"]
    )
    ball = joints["ball_joint"]
    assert [j.type for j in ball] == ["continuous"] * 3
    assert (ball[0].parent, ball[-1].child) == ("link2", "link1")
    assert np.allclose(ball[0].origin[:3, 3], [0, 1, 0])  # joint pose relative to the child
    assert [j.type for j in joints["prismatic_joint"]] == ["prismatic"]
    assert [c.code for c in changes] == ["joint.decomposed"]


def test_four_bar_joints_are_read_before_the_loop_is_refused(candidates):
    joints, _ = read_joints(candidates["sdformat_tests__four_bar__four_bar"])
    assert [j[0].type for j in joints.values()] == ["revolute"] * 4
    assert (joints["joint1"][0].lower, joints["joint1"][0].upper) == (-3.14, 3.14)


# --------------------------------------------------------------------------- synthetic files
def source_at(root: Path, **kw) -> SourceConfig:
    return SourceConfig(name="t", format="sdf", path=root, license="test", **kw)


def load(root: Path, entry: str, **kw):
    source_id = Path(entry).with_suffix("").as_posix()
    return ADAPTER.load(Candidate(source_at(root, **kw), source_id, root / entry))


def refused(root: Path, entry: str, **kw) -> AssetError:
    with pytest.raises(AssetError) as info:
        load(root, entry, **kw)
    return info.value


def sdf(body: str, version: str = "1.8", name: str = "m") -> str:
    return (
        f'<?xml version="1.0"?>\n<sdf version="{version}"><model name="{name}">{body}</model></sdf>'
    )


def link(name: str, pose: str = "", extra: str = "") -> str:
    pose_xml = f"<pose>{pose}</pose>" if pose else ""
    return f'<link name="{name}">{pose_xml}{extra}</link>'


def joint(name, kind, parent, child, axis="0 0 1", limit="", extra="", pose="") -> str:
    limit_xml = f"<limit>{limit}</limit>" if limit else ""
    axis_xml = f"<axis><xyz>{axis}</xyz>{limit_xml}</axis>" if axis is not None else ""
    pose_xml = f"<pose>{pose}</pose>" if pose else ""
    return (
        f'<joint name="{name}" type="{kind}">{pose_xml}<parent>{parent}</parent>'
        f"<child>{child}</child>{axis_xml}{extra}</joint>"
    )


BOUNDED = "<lower>-1</lower><upper>2</upper>"


def world_position(obj, link_name, point, q=None):
    pose = obj.link_poses(q)[link_name] @ obj.source.extra["source_frames"][link_name]
    return pose[:3, :3] @ np.asarray(point, float) + pose[:3, 3]


def test_link_and_joint_poses_follow_sdformat_defaults(tmp_path):
    # b sits at (1, 0, 0) rotated 90 degrees about z; the joint is 0.5 along b's own x axis,
    # i.e. at (1, 0.5, 0) in the model frame; the axis is b's x axis, i.e. the model's y axis.
    body = (
        link("a")
        + link("b", "1 0 0 0 0 1.5707963267948966")
        + joint("j", "revolute", "a", "b", axis="1 0 0", limit=BOUNDED, pose="0.5 0 0 0 0 0")
    )
    write(tmp_path, {"m.sdf": sdf(body)})
    obj = load(tmp_path, "m.sdf")
    j = obj.joint_map["j"]
    assert np.allclose(j.origin[:3, 3], [1, 0.5, 0])
    assert np.allclose(obj.screws().axis[0], [0, 1, 0])
    assert np.allclose(obj.screws().point[0], [1, 0.5, 0])
    # at rest every SDF link frame is where its <pose> says
    assert np.allclose(world_position(obj, "b", [0, 0, 0]), [1, 0, 0])
    # turning by 90 degrees about +y through (1, 0.5, 0) moves b's origin to (1, 0.5, 0) +
    # R_y(90) (0, -0.5, 0)
    moved = world_position(obj, "b", [0, 0, 0], {"j": math.pi / 2})
    expected = np.array([1, 0.5, 0]) + axis_angle_matrix([0, 1, 0], math.pi / 2) @ [0, -0.5, 0]
    assert np.allclose(moved, expected)
    assert obj.source.labels == {"robot_name": "m", "folder": "."}


def test_quaternion_pose_equals_the_euler_pose(tmp_path):
    # rotation_format="quat_xyzw": position, then the quaternion x y z w (any non-zero length);
    # (0, 0, 3, 3) is 90 degrees about z, like the rpy (0, 0, pi/2) of link e.
    quat = '<pose rotation_format="quat_xyzw">1 2 3 0 0 3 3</pose>'
    body = (
        link("a")
        + f'<link name="q">{quat}</link>'
        + link("e", "1 2 3 0 0 1.5707963267948966")
        + joint("jq", "fixed", "a", "q", axis=None)
        + joint("je", "fixed", "a", "e", axis=None)
    )
    write(tmp_path, {"m.sdf": sdf(body)})
    obj = load(tmp_path, "m.sdf")
    for point in ([0, 0, 0], [1, 0, 0], [0, 0, 1]):
        assert np.allclose(world_position(obj, "q", point), world_position(obj, "e", point))
    assert np.allclose(world_position(obj, "q", [1, 0, 0]), [1, 3, 3])
    zero = body.replace("0 0 3 3</pose>", "0 0 0 0</pose>")
    write(tmp_path, {"zero.sdf": sdf(zero)})
    assert refused(tmp_path, "zero.sdf").code == "parse.vector"


@pytest.mark.parametrize(
    "version, axis_extra, expected",
    [
        ("1.4", "", [0, 1, 0]),  # 1.4: axis in the model frame
        ("1.5", "", [-1, 0, 0]),  # 1.5-1.6: joint frame by default
        ("1.6", "<use_parent_model_frame>true</use_parent_model_frame>", [0, 1, 0]),
        ("1.7", "", [-1, 0, 0]),
    ],
)
def test_axis_frame_depends_on_the_version(tmp_path, version, axis_extra, expected):
    # the child (and so the joint frame) is rotated 90 degrees about z; the axis reads 0 1 0
    body = link("a") + link("b", "0 0 0 0 0 1.5707963267948966")
    body += (
        '<joint name="j" type="continuous"><parent>a</parent><child>b</child>'
        f"<axis><xyz>0 1 0</xyz>{axis_extra}</axis></joint>"
    )
    write(tmp_path, {"m.sdf": sdf(body, version)})
    obj = load(tmp_path, "m.sdf")
    assert np.allclose(obj.screws().axis[0], expected, atol=1e-12)


def test_expressed_in_relative_to_frames_and_nested_models(tmp_path):
    body = (
        '<frame name="tilted"><pose>0 0 1 1.5707963267948966 0 0</pose></frame>'
        + link("base")
        + '<link name="arm"><pose relative_to="tilted">0 0 1 0 0 0</pose></link>'
        + '<joint name="shoulder" type="revolute"><parent>base</parent><child>arm</child>'
        '<axis><xyz expressed_in="__model__">1 0 0</xyz>' + f"<limit>{BOUNDED}</limit></axis>"
        "</joint>"
        + '<model name="tool"><pose relative_to="arm">0 0 0.5 0 0 0</pose>'
        + link("tip", "0.1 0 0 0 0 0")
        + "</model>"
        + joint("wrist", "prismatic", "arm", "tool::tip", axis="0 0 1", limit="<lower>0</lower>"
                "<upper>0.1</upper>")
    )  # fmt: skip
    write(tmp_path, {"m.sdf": sdf(body, "1.9")})
    obj = load(tmp_path, "m.sdf")
    # arm: 1 along the tilted frame's z (which is the model's -y) from (0, 0, 1)
    assert np.allclose(world_position(obj, "arm", [0, 0, 0]), [0, -1, 1])
    assert np.allclose(world_position(obj, "tool::tip", [0, 0, 0]), [0.1, -1.5, 1])
    screws = obj.screws()
    assert np.allclose(screws.axis[screws.names.index("shoulder")], [1, 0, 0])
    assert np.allclose(screws.axis[screws.names.index("wrist")], [0, -1, 0])  # tip's z
    assert set(obj.link_map) == {"base", "arm", "tool::tip"}


def test_joint_pose_relative_to_the_parent_link(tmp_path):
    body = link("a", "0 0 1 0 0 0") + link("b", "5 5 5 0 0 0")
    body += (
        '<joint name="j" type="continuous"><pose relative_to="a">0.5 0 0 0 0 0</pose>'
        "<parent>a</parent><child>b</child><axis><xyz>0 1 0</xyz></axis></joint>"
    )
    write(tmp_path, {"m.sdf": sdf(body)})
    obj = load(tmp_path, "m.sdf")
    j = obj.joint_map["j"]
    assert (j.parent, j.child) == ("a", "b")
    # the world frame is the model frame: 0.5 along a's x, a at z = 1
    assert np.allclose(obj.screws().point[0], [0.5, 0, 1])
    assert np.allclose(world_position(obj, "b", [0, 0, 0]), [5, 5, 5])  # b's pose


def test_world_joint_makes_world_the_root_and_uses_the_model_pose(tmp_path):
    body = "<pose>0 0 2 0 0 0</pose>" + link("a", "1 0 0 0 0 0")
    body += joint("fix", "fixed", "world", "a", axis=None)
    write(tmp_path, {"m.sdf": sdf(body)})
    obj = load(tmp_path, "m.sdf")
    assert obj.root == "world"
    assert np.allclose(obj.link_poses()["a"][:3, 3], [1, 0, 2])


def test_limits_unbounded_one_sided_reversed_and_allowed(tmp_path):
    body = link("a") + link("b") + link("c") + link("d")
    body += joint("free_turn", "revolute", "a", "b")  # no <limit>: unbounded
    body += joint("huge", "prismatic", "b", "c", limit="<lower>-1e16</lower><upper>1e16</upper>")
    body += joint("turn", "continuous", "c", "d", limit=BOUNDED)  # limits ignored
    write(tmp_path, {"m.sdf": sdf(body)})
    obj = load(tmp_path, "m.sdf")
    assert obj.joint_map["free_turn"].type == "continuous"
    assert (obj.joint_map["huge"].lower, obj.joint_map["huge"].upper) == (-math.inf, math.inf)
    assert obj.joint_map["turn"].type == "continuous"
    assert [c.code for c in obj.source.changes] == ["sdf.revolute_unbounded"]

    write(tmp_path, {"one.sdf": sdf(link("a") + link("b") + joint(
        "j", "prismatic", "a", "b", limit="<lower>0</lower>"))})  # fmt: skip
    assert refused(tmp_path, "one.sdf").code == "limits.one_sided"
    reversed_body = (
        link("a")
        + link("b")
        + joint("j", "revolute", "a", "b", limit="<lower>1</lower><upper>-1</upper>")
    )
    write(tmp_path, {"rev.sdf": sdf(reversed_body)})
    assert refused(tmp_path, "rev.sdf").code == "limits.reversed"
    allowance = Allowance("limits.reversed", "written upper first", ("rev",))
    obj = load(tmp_path, "rev.sdf", allowances=(allowance,))
    assert (obj.joint_map["j"].lower, obj.joint_map["j"].upper) == (-1.0, 1.0)
    assert [c.code for c in obj.source.changes] == ["limits.swapped"]


def test_universal_revolute2_ball_and_screw_joints(tmp_path):
    body = "".join(link(n) for n in "abcde")
    body += (
        '<joint name="u" type="universal"><parent>a</parent><child>b</child>'
        f"<axis><xyz>1 0 0</xyz><limit>{BOUNDED}</limit></axis><axis2><xyz>0 1 0</xyz></axis2>"
        "</joint>"
        '<joint name="r2" type="revolute2"><parent>b</parent><child>c</child>'
        "<axis><xyz>0 0 1</xyz></axis><axis2><xyz>0 2 0</xyz></axis2></joint>"
    )
    body += joint("ball", "ball", "c", "d", axis=None)
    body += joint("nut", "screw", "d", "e", extra="<thread_pitch>-1000</thread_pitch>",
                  limit=BOUNDED)  # fmt: skip
    write(tmp_path, {"m.sdf": sdf(body)})
    obj = load(tmp_path, "m.sdf")
    types = {j.name: j.type for j in obj.joints}
    assert types == {
        "u__dof0": "revolute", "u__dof1": "continuous",
        "r2__dof0": "continuous", "r2__dof1": "continuous",
        "ball__dof0": "continuous", "ball__dof1": "continuous", "ball__dof2": "continuous",
        "nut": "helical",
    }  # fmt: skip
    assert obj.joint_map["nut"].pitch == 1e-3  # -1 / thread_pitch: 1 mm per radian
    assert (obj.joint_map["nut"].lower, obj.joint_map["nut"].upper) == (-1.0, 2.0)
    codes = [c.code for c in obj.source.changes]
    assert codes.count("joint.decomposed") == 3 and codes.count("axis.normalized") == 1


def test_mimic_of_sdformat_1_11(tmp_path):
    body = link("a") + link("b") + link("c")
    body += joint("lead", "revolute", "a", "b", limit=BOUNDED)
    mimic = (
        '<mimic joint="lead" axis="axis"><multiplier>2</multiplier><offset>0.5</offset>'
        "<reference>0.1</reference></mimic>"
    )
    body += (
        '<joint name="follow" type="prismatic"><parent>b</parent><child>c</child>'
        f"<axis><xyz>0 0 1</xyz><limit>{BOUNDED}</limit>{mimic}</axis></joint>"
    )
    write(tmp_path, {"m.sdf": sdf(body, "1.11")})
    obj = load(tmp_path, "m.sdf")
    m = obj.joint_map["follow"].mimic
    assert (m.joint, m.multiplier) == ("lead", 2.0) and math.isclose(m.offset, 0.3)


def test_geometry_inertial_and_model_uri_meshes(tmp_path):
    stl = trimesh.creation.box((1, 1, 1)).export(file_type="stl")
    extra = (
        "<inertial><pose>0.1 0 0 0 0 1.5707963267948966</pose><mass>2</mass><inertia>"
        "<ixx>1</ixx><iyy>2</iyy><izz>3</izz></inertia></inertial>"
        '<visual name="v"><pose>0 0 1 0 0 0</pose><geometry><mesh><uri>model://widget/meshes/'
        "w.stl</uri><scale>2 2 2</scale></mesh></geometry></visual>"
        '<collision name="c"><geometry><cylinder><radius>0.1</radius><length>0.4</length>'
        "</cylinder></geometry></collision>"
        '<collision name="p"><geometry><plane><normal>0 0 1</normal></plane></geometry>'
        "</collision>"
    )
    write(tmp_path, {"widget/model.sdf": sdf(link("body", "0 0 1 0 0 0", extra)),
                     "widget/meshes/w.stl": stl})  # fmt: skip
    obj = load(tmp_path, "widget/model.sdf")
    body = obj.link_map["body"]
    assert body.visuals[0].filename == str(tmp_path / "widget/meshes/w.stl")
    assert np.array_equal(body.visuals[0].scale, [2, 2, 2])
    # the root link's frame is the model frame: its contents carry the link's pose (z = 1)
    assert np.allclose(body.visuals[0].origin[:3, 3], [0, 0, 2])
    assert body.collisions[0].kind == "cylinder" and body.collisions[0].size == (0.1, 0.4)
    assert len(body.collisions) == 1  # the plane is skipped and recorded
    assert np.allclose(body.inertial.inertia, np.diag([2, 1, 3]))
    assert np.allclose(body.inertial.com, [0.1, 0, 1])
    assert [c.code for c in obj.source.changes] == ["sdf.geom_skipped"]


def test_includes_are_nested_models_and_not_candidates(tmp_path):
    part = sdf(link("blade") + link("hub") + joint("spin", "continuous", "hub", "blade"), "1.7",
               "fan")  # fmt: skip
    main = sdf(
        link("frame")
        + "<include><uri>model://fan</uri><name>left_fan</name><pose>1 0 0 0 0 0</pose></include>"
        + joint("mount", "fixed", "frame", "left_fan::hub", axis=None)
    )
    write(
        tmp_path,
        {
            "robot/main.sdf": main,
            "robot/fan/model.sdf": part,
            "robot/fan/model.config": "<model><sdf version='1.7'>model.sdf</sdf></model>",
        },
    )
    assert [c.source_id for c in discover(source_at(tmp_path))] == ["robot/main"]
    obj = load(tmp_path, "robot/main.sdf")
    assert set(obj.link_map) == {"frame", "left_fan::blade", "left_fan::hub"}
    assert obj.joint_map["left_fan::spin"].type == "continuous"
    assert np.allclose(obj.link_poses()["left_fan::hub"][:3, 3], [1, 0, 0])


def test_discovery_follows_includes_through_package_roots(tmp_path):
    # model://fan lives in a configured package root, not beside or above the including file:
    # discovery must resolve it as loading does, so the fan is a part, not a candidate.
    part = sdf(link("blade") + link("hub") + joint("spin", "continuous", "hub", "blade"), "1.7",
               "fan")  # fmt: skip
    main = sdf(link("frame") + "<include><uri>model://fan</uri></include>"
               + joint("mount", "fixed", "frame", "fan::hub", axis=None))  # fmt: skip
    write(tmp_path, {"robot/main.sdf": main, "models/fan/model.sdf": part})
    source = source_at(tmp_path, package_roots=(tmp_path / "models",))
    assert [c.source_id for c in discover(source)] == ["robot/main"]
    obj = load(tmp_path, "robot/main.sdf", package_roots=(tmp_path / "models",))
    assert set(obj.link_map) == {"frame", "fan::blade", "fan::hub"}


def test_model_config_is_read_under_the_source_size_limit(tmp_path):
    part = sdf(link("hub"), "1.7", "fan")
    config = "<model><sdf version='1.7'>model.sdf</sdf><!--" + "x" * 4000 + "--></model>"
    main = sdf(link("frame") + "<include><uri>fan</uri></include>"
               + joint("mount", "fixed", "frame", "fan::hub", axis=None))  # fmt: skip
    write(tmp_path, {"main.sdf": main, "fan/model.sdf": part, "fan/model.config": config})
    assert set(load(tmp_path, "main.sdf").link_map) == {"frame", "fan::hub"}
    error = refused(tmp_path, "main.sdf", max_file_bytes=2000)
    assert error.code == "file.too_large" and error.path.endswith("model.config")


def test_a_bogus_xml_version_is_repaired_with_a_record(tmp_path):
    text = sdf(link("a")).replace('<?xml version="1.0"?>', '<?xml version="0.0"?>')
    write(tmp_path, {"m.sdf": text})
    changes = load(tmp_path, "m.sdf").source.changes
    assert [c.code for c in changes] == ["xml.version_repaired"]


HOSTILE = [
    ({"a.sdf": sdf("<include><uri>b.sdf</uri></include>"),
      "b.sdf": sdf("<include><uri>a.sdf</uri></include>", name="n")}, "a.sdf",
     "sdf.include_cycle"),
    ({"src/a.sdf": sdf("<include><uri>../out.sdf</uri></include>"), "out.sdf": sdf("")},
     "src/a.sdf", "path.outside_root"),
    ({"src/a.sdf": sdf(link("a", extra='<visual name="v"><geometry><mesh><uri>/etc/x.stl'
                                       "</uri></mesh></geometry></visual>"))},
     "src/a.sdf", "path.outside_root"),
    ({"src/a.sdf": sdf(link("a", extra='<visual name="v"><geometry><mesh><uri>model://nowhere/'
                                       "m.stl</uri></mesh></geometry></visual>"))},
     "src/a.sdf", "path.remote"),
    ({"src/a.sdf": '<?xml version="1.0"?><!DOCTYPE s [<!ENTITY e "x">]><sdf>&e;</sdf>'},
     "src/a.sdf", "xml.entity"),
    ({"src/a.sdf": '<sdf version="1.8"><model name="m"><link name="a">'}, "src/a.sdf",
     "xml.truncated"),
    ({"src/a.sdf": sdf(link("a") + link("b") + joint("s", "screw", "a", "b"))}, "src/a.sdf",
     "joint.screw_pitch_missing"),
    ({"src/a.sdf": sdf(link("a") + link("b") + link("c")
                       + joint("j1", "revolute", "a", "b", limit=BOUNDED)
                       + joint("j2", "revolute", "b", "c", limit=BOUNDED)
                       + joint("j3", "revolute", "c", "a", limit=BOUNDED))},
     "src/a.sdf", "model.closed_loop"),
    ({"src/a.sdf": sdf(link("a") + link("b") + joint("g", "gearbox", "a", "b"))}, "src/a.sdf",
     "joint.unsupported"),
    ({"src/a.sdf": sdf(link("a"), version="2.0")}, "src/a.sdf", "sdf.version"),
    ({"src/a.sdf": "<robot name='r'/>"}, "src/a.sdf", "sdf.not_sdf"),
    ({"src/a.sdf": '<sdf version="1.8"><world name="w"/></sdf>'}, "src/a.sdf", "sdf.no_model"),
    ({"src/a.sdf": sdf('<frame name="f" attached_to="g"/><frame name="g" attached_to="f"/>'
                       + link("a") + link("b")
                       + '<joint name="j" type="fixed"><pose relative_to="f"/><parent>a</parent>'
                       "<child>b</child></joint>")}, "src/a.sdf", "sdf.pose_cycle"),
    ({"src/a.sdf": sdf('<link name="a"><pose relative_to="nope"/></link>')}, "src/a.sdf",
     "sdf.unknown_name"),
    ({"src/a.sdf": sdf(link("a", "0.07, 0 0 0 0 0"))}, "src/a.sdf", "parse.number"),
    ({"src/a.sdf": sdf(link("a") + link("b") + joint("j", "revolute", "a", "b", axis="0 0 0",
                                                     limit=BOUNDED))}, "src/a.sdf",
     "model.zero_axis"),
]  # fmt: skip


@pytest.mark.parametrize("files, entry, code", HOSTILE)
def test_hostile_files_are_refused_with_their_own_code(tmp_path, files, entry, code):
    write(tmp_path, files)
    root = tmp_path / "src" if entry.startswith("src/") else tmp_path
    error = refused(root, Path(entry).relative_to(root.relative_to(tmp_path)).as_posix())
    assert error.code == code, error
    assert error.path


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        ("<effort>12.5</effort><velocity>3</velocity>", (12.5, 3.0)),
        ("<effort>-1</effort><velocity>-1</velocity>", (None, None)),  # SDFormat: no limit
        ("", (None, None)),
    ],
)
def test_limit_effort_and_velocity_are_carried(tmp_path, limit, expected):
    bounds = f"<lower>-1</lower><upper>1</upper>{limit}"
    body = link("a") + link("b", "0 0 1 0 0 0") + joint("j", "revolute", "a", "b", limit=bounds)
    write(tmp_path, {"m.sdf": sdf(body)})
    [moving] = [j for j in load(tmp_path, "m.sdf").joints if j.moving]
    assert (moving.effort, moving.velocity) == expected


def test_an_undeclared_namespace_prefix_is_read_as_sdformat_does(tmp_path):
    """`<drake:...>` without xmlns:drake: libsdformat and Drake load the file; it is read, the
    prefixed elements ignored like any unknown element, and the reading recorded."""
    body = link("a") + link("b", "0 0 1 0 0 0") + '<drake:proximity_properties scale="2"/>'
    body += joint("j", "revolute", "a", "b", limit="<lower>-1</lower><upper>1</upper>")
    write(tmp_path, {"m.sdf": sdf(body)})
    obj = load(tmp_path, "m.sdf")
    assert [j.name for j in obj.joints if j.moving] == ["j"]
    assert "xml.undeclared_prefix" in [c.code for c in obj.source.changes]
    write(tmp_path, {"bad.sdf": sdf(body).replace("</model>", "</modle>")})
    assert refused(tmp_path, "bad.sdf").code == "xml.malformed"  # not every error is recovered
