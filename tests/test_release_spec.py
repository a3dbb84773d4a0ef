"""Every shipped file meets its format's specification, read by reference validators: each
`object.urdf` passes yourdfpy's `validate()` and has every element and attribute the URDF
specification requires (`verify.urdf_spec`), each `object.xml` compiles in MuJoCo without
printing anything, and each `object.usda` passes usdchecker's rules (with usd-core). On the demo
release here, on the corpus release in test_release_corpus.py."""

from __future__ import annotations

import pytest
from lxml import etree
from shipped_support import assert_files_meet_their_specifications

from normalize.convention import unspecified_actuation
from normalize.urdf import read_urdf
from normalize.urdf_writer import write_object
from verify.urdf_spec import urdf_spec_problems

ROBOT = """<robot name="r">
  <link name="base"><inertial><mass value="1"/>
    <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
  <link name="lid"><inertial><mass value="1"/>
    <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
  <link name="wheel"><inertial><mass value="1"/>
    <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="lid"/>
    <axis xyz="0 0 1"/><limit lower="0" upper="1" {actuation}/></joint>
  <joint name="spin" type="continuous"><parent link="base"/><child link="wheel"/>
    <axis xyz="1 0 0"/></joint>
</robot>"""


def test_the_demo_release_meets_the_specifications(sample_release):
    assert_files_meet_their_specifications(sample_release)


def test_limits_always_carry_effort_and_velocity_and_defaults_are_recorded(tmp_path):
    source = tmp_path / "source.urdf"
    source.write_text(ROBOT.format(actuation='effort="-3" velocity="2.5"'))
    changes = []
    obj = read_urdf(source, root=tmp_path, changes=changes)
    assert [c.code for c in changes].count("limits.actuation_negative") == 1
    written = write_object(obj, tmp_path / "out")
    hinge = etree.parse(str(written)).find("joint[@name='hinge']/limit")
    assert (hinge.get("effort"), hinge.get("velocity")) == ("0.0", "2.5")
    assert etree.parse(str(written)).find("joint[@name='spin']/limit") is None
    recorded = unspecified_actuation(obj)
    assert [(c.code, c.element) for c in recorded] == [
        ("limits.actuation_unspecified", "joint hinge")
    ]
    assert "effort" in recorded[0].message and "velocity" not in recorded[0].message.split(";")[0]


@pytest.mark.parametrize(
    ("mutation", "expected"),
    [
        (
            lambda r: r.find("joint/limit").attrib.pop("effort"),
            "lacks the required attribute 'effort'",
        ),
        (lambda r: r.find("joint").remove(r.find("joint/limit")), "needs a <limit>"),
        (lambda r: r.find("link/inertial/inertia").attrib.pop("iyz"), "'iyz'"),
        (lambda r: r.find("joint").set("type", "hinge"), "is not one of"),
        (lambda r: r.find("joint/child").attrib.pop("link"), "'link'"),
    ],
)
def test_the_specification_check_names_each_missing_requirement(mutation, expected):
    robot = etree.fromstring(ROBOT.format(actuation='effort="1" velocity="1"'))
    assert urdf_spec_problems(robot) == []
    mutation(robot)
    problems = urdf_spec_problems(robot)
    assert len(problems) == 1 and expected in problems[0], problems
