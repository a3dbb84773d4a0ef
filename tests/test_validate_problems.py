"""`arena validate` reports every independent problem of a file in one run, each with its
source file, line, element and a fix hint (issue 33 item 1)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

import schemas
from verify.validate import (
    candidates_for,
    problem_lines,
    report_document,
    validate_candidate,
    validate_command,
)

TETRA_OBJ = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 2 4\nf 1 3 4\nf 2 3 4\n"
FLAT_OBJ = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"

# line numbers below are those of this text (line 1 is <robot>)
THREE_PROBLEMS_URDF = """<robot name="r">
  <link name="base">
    <visual><geometry><mesh filename="meshes/gone.obj"/></geometry></visual>
  </link>
  <link name="lid">
    <visual><geometry><mesh filename="meshes/base.obj"/></geometry></visual>
  </link>
  <link name="door"/>
  <joint name="hinge" type="revolute">
    <parent link="base"/>
    <child link="lid"/>
    <axis xyz="0 0 0"/>
    <limit lower="-1" upper="1"/>
  </joint>
  <joint name="slide" type="prismatic">
    <parent link="base"/>
    <child link="door"/>
    <axis xyz="1 0 0"/>
    <limit lower="1" upper="-1"/>
  </joint>
</robot>
"""


def write(folder, files: dict):
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


def validated(tmp_path, path, **options):
    [candidate] = candidates_for([path], **options)
    return validate_candidate(candidate, tmp_path / "out")


def only(report, code):
    [check] = report.check(code)
    return check


def one_link_urdf(reference: str) -> str:
    """A link whose <mesh> element is on line 5."""
    return (
        '<robot name="r">\n  <link name="base">\n    <visual>\n      <geometry>\n'
        f'        <mesh filename="{reference}"/>\n'
        "      </geometry>\n    </visual>\n  </link>\n</robot>\n"
    )


def test_a_missing_mesh_a_zero_axis_and_reversed_limits_are_reported_in_one_run(tmp_path):
    folder = write(
        tmp_path / "obj", {"obj.urdf": THREE_PROBLEMS_URDF, "meshes/base.obj": TETRA_OBJ}
    )
    report = validated(tmp_path, folder / "obj.urdf")
    assert report.status == "fail"
    assert [c.id for c in report.failures] == ["mesh.missing", "model.zero_axis", "limits.reversed"]
    lines = {c.id: (c.file, c.line, c.element) for c in report.failures}
    assert lines == {
        "mesh.missing": ("obj.urdf", 3, "link base, <visual>"),
        "model.zero_axis": ("obj.urdf", 12, "joint hinge"),
        "limits.reversed": ("obj.urdf", 19, "joint slide"),
    }
    document = report_document([report], strict=False, seconds=0.0)
    schemas.validate(document, "validation_report")
    [entry] = document["objects"]
    assert [c["line"] for c in entry["checks"]] == [3, 12, 19]


def test_the_first_problem_stays_the_objects_first_check_and_stage(tmp_path):
    """What a build records as the reject (its code) is still the first problem found."""
    from normalize.errors import AssetError
    from normalize.run import normalize_candidate

    folder = write(
        tmp_path / "obj", {"obj.urdf": THREE_PROBLEMS_URDF, "meshes/base.obj": TETRA_OBJ}
    )
    [candidate] = candidates_for([folder / "obj.urdf"])
    with pytest.raises(AssetError) as raised:
        normalize_candidate(candidate, tmp_path / "build")
    assert raised.value.code == "mesh.missing" and raised.value.line == 3
    report = validated(tmp_path, folder / "obj.urdf")
    assert report.checks[0].id == raised.value.code and report.stage == raised.value.stage


def test_a_misspelt_mesh_name_hints_at_the_real_file(tmp_path):
    folder = write(
        tmp_path / "obj",
        {"obj.urdf": one_link_urdf("meshes/bse.obj"), "meshes/base.obj": TETRA_OBJ},
    )
    check = only(validated(tmp_path, folder / "obj.urdf"), "mesh.missing")
    assert check.hint == "did you mean meshes/base.obj?"
    assert (check.file, check.line) == ("obj.urdf", 5)


def test_a_missing_mesh_with_no_close_name_has_no_hint(tmp_path):
    folder = write(
        tmp_path / "obj",
        {"obj.urdf": one_link_urdf("meshes/gone.obj"), "meshes/base.obj": TETRA_OBJ},
    )
    assert only(validated(tmp_path, folder / "obj.urdf"), "mesh.missing").hint is None


def test_a_mesh_outside_the_folder_hints_at_root(tmp_path):
    write(tmp_path / "shared", {"base.obj": TETRA_OBJ})
    folder = write(tmp_path / "obj", {"obj.urdf": one_link_urdf("../shared/base.obj")})
    check = only(validated(tmp_path, folder / "obj.urdf"), "path.outside_root")
    assert check.hint.startswith("pass --root DIR")
    assert f"--root {tmp_path.resolve()}" in check.hint
    assert (check.file, check.line) == ("obj.urdf", 5)
    # the hint is true: with that --root the object passes this check
    report = validated(tmp_path, folder / "obj.urdf", root=tmp_path.resolve())
    assert not report.check("path.outside_root")


def test_an_unresolved_package_hints_at_package_root(tmp_path):
    reference = "package://other_pkg/meshes/base.obj"
    folder = write(tmp_path / "obj", {"obj.urdf": one_link_urdf(reference)})
    check = only(validated(tmp_path, folder / "obj.urdf"), "path.package_unresolved")
    assert "--package-root DIR" in check.hint and "'other_pkg'" in check.hint
    write(tmp_path / "pkgs" / "other_pkg", {"meshes/base.obj": TETRA_OBJ})
    report = validated(tmp_path, folder / "obj.urdf", package_roots=[tmp_path / "pkgs"])
    assert not report.check("path.package_unresolved")


def test_unknown_links_of_every_joint_are_reported(tmp_path):
    urdf = """<robot name="r">
  <link name="base"/>
  <link name="lid"/>
  <joint name="a" type="fixed"><parent link="base"/><child link="nothing"/></joint>
  <joint name="b" type="fixed"><parent link="ghost"/><child link="lid"/></joint>
</robot>
"""
    folder = write(tmp_path / "obj", {"obj.urdf": urdf})
    report = validated(tmp_path, folder / "obj.urdf")
    unknown = [(c.element, c.line) for c in report.check("model.unknown_link")]
    assert unknown == [("joint a", 4), ("joint b", 5)]


def test_an_included_mjcf_file_is_named_with_its_lines(tmp_path):
    folder = write(
        tmp_path / "m",
        {
            "model.xml": '<mujoco model="box">\n  <include file="parts/body.xml"/>\n</mujoco>\n',
            "parts/body.xml": """<mujoco>
  <asset>
    <mesh name="lid" file="assets/lid.obj"/>
    <mesh name="base" file="assets/bas.obj"/>
  </asset>
  <worldbody>
    <body name="b"><geom type="mesh" mesh="base"/>
      <body name="l"><joint name="h" axis="0 0 1"/><geom type="mesh" mesh="lid"/></body>
    </body>
  </worldbody>
</mujoco>
""",
            "assets/base.obj": TETRA_OBJ,
        },
    )
    report = validated(tmp_path, folder / "model.xml")
    assert report.status == "fail"
    missing = [(c.file, c.line, c.hint) for c in report.check("mesh.missing")]
    assert missing == [
        ("parts/body.xml", 3, None),
        ("parts/body.xml", 4, "did you mean assets/base.obj?"),
    ]


def test_partnet_mobility_mesh_warnings_name_the_source_mesh(tmp_path):
    urdf = """<?xml version="1.0"?>
<robot name="partnet_100">
  <link name="base"/>
  <link name="link_0">
    <visual><geometry><mesh filename="textured_objs/original-1.obj"/></geometry></visual>
    <visual><geometry><mesh filename="textured_objs/original-2.obj"/></geometry></visual>
    <collision><geometry><mesh filename="textured_objs/original-2.obj"/></geometry></collision>
  </link>
  <joint name="joint_0" type="fixed"><parent link="base"/><child link="link_0"/></joint>
  <link name="link_1">
    <visual><geometry><mesh filename="textured_objs/original-2.obj"/></geometry></visual>
    <collision><geometry><mesh filename="textured_objs/original-2.obj"/></geometry></collision>
  </link>
  <joint name="joint_1" type="revolute">
    <parent link="link_0"/><child link="link_1"/>
    <axis xyz="0 0 1"/><limit lower="0" upper="1"/>
  </joint>
</robot>
"""
    folder = write(
        tmp_path / "100",
        {
            "mobility.urdf": urdf,
            "textured_objs/original-1.obj": FLAT_OBJ,
            "textured_objs/original-2.obj": TETRA_OBJ,
        },
    )
    report = validated(tmp_path, folder)
    assert report.format == "partnet_mobility"
    [flat] = [c for c in report.check("geometry.mesh_degenerate") if not c.passed]
    assert flat.file == "textured_objs/original-1.obj"
    assert "textured_objs/original-1.obj" in flat.message
    assert any(line.startswith("textured_objs/original-1.obj  ") for line in problem_lines([flat]))


def test_the_table_groups_problems_per_file_with_line_and_hint(tmp_path, capsys):
    misspelt = THREE_PROBLEMS_URDF.replace("gone.obj", "bse.obj")
    folder = write(tmp_path / "obj", {"obj.urdf": misspelt, "meshes/base.obj": TETRA_OBJ})
    assert validate_command([folder / "obj.urdf"], json_output=True) == 1
    document = json.loads(capsys.readouterr().out)
    checks = document["objects"][0]["checks"]
    assert [(c["id"], c["file"], c["line"]) for c in checks] == [
        ("mesh.missing", "obj.urdf", 3),
        ("model.zero_axis", "obj.urdf", 12),
        ("limits.reversed", "obj.urdf", 19),
    ]
    report = validated(tmp_path, folder / "obj.urdf")
    assert problem_lines(report.failures)[0] == (
        "obj.urdf:3  link base, <visual>  mesh.missing  mesh 'meshes/bse.obj' does not exist "
        f"(looked for {folder / 'meshes' / 'bse.obj'})  (did you mean meshes/base.obj?)"
    )


def test_corpus_objects_the_adapters_read_have_no_collected_problem(corpus_candidates):
    """The collecting readings agree with the readings that raise, on every real object: no
    problem where the adapter reads the object; for URDF and PartNet-Mobility, the problem
    that refuses it among the ones collected (an MJCF or SDF may be refused by a step the
    collecting pass does not repeat, such as MuJoCo's compiler)."""
    from normalize.adapters import get_adapter
    from normalize.errors import AssetError

    checked = Counter()
    for candidate in corpus_candidates.values():
        adapter = get_adapter(candidate.source.format)
        try:
            adapter.load(candidate)
            refused = None
        except AssetError as exc:
            refused = exc
        problems = adapter.problems(candidate)
        if refused is None:
            assert problems == [], (candidate.object_id, [str(p) for p in problems])
        elif candidate.source.format in ("urdf", "partnet_mobility"):
            found = {(p.code, p.element) for p in problems}
            assert (refused.code, refused.element) in found, candidate.object_id
        checked[candidate.source.format] += 1
    assert min(checked.values()) > 0 and len(checked) == 4, checked


def test_the_html_report_shows_file_line_and_hint():
    from previews.report import _checks
    from verify.report import CheckResult

    check = CheckResult(
        "mesh.missing",
        "error",
        False,
        "mesh 'meshes/bse.obj' does not exist",
        element="link base, <visual>",
        file="obj.urdf",
        line=3,
        hint="did you mean meshes/base.obj?",
    )
    page = "\n".join(_checks("Failing checks", [check]))
    assert "<code>obj.urdf:3</code>" in page and "did you mean meshes/base.obj?" in page


DOOR_SDF = """<?xml version="1.0"?>
<sdf version="1.9">
  <model name="door">
    <link name="frame">
      <visual name="v"><geometry><mesh><uri>meshes/pannel.obj</uri></mesh></geometry></visual>
      <collision name="c"><geometry><mesh><uri>meshes/gone.obj</uri></mesh></geometry></collision>
    </link>
    <link name="panel">
      <visual name="v"><geometry><box><size>1 1 1</size></box></geometry></visual>
    </link>
    <joint name="hinge" type="revolute">
      <parent>frame</parent><child>panel</child>
      <axis><xyz>0 0 0</xyz><limit><lower>0</lower><upper>1</upper></limit></axis>
    </joint>
  </model>
</sdf>
"""

SCENE_SDF = """<?xml version="1.0"?>
<sdf version="1.9">
  <model name="scene">
    <link name="floor"/>
    <include><uri>door</uri><name>door</name></include>
    <joint name="fix" type="fixed"><parent>floor</parent><child>door::frame</child></joint>
  </model>
</sdf>
"""


def test_an_included_sdf_model_is_named_with_its_lines(tmp_path):
    folder = write(
        tmp_path / "s",
        {
            "scene.sdf": SCENE_SDF,
            "door/model.config": "<model><name>door</name><sdf>model.sdf</sdf></model>",
            "door/model.sdf": DOOR_SDF,
            "door/meshes/panel.obj": TETRA_OBJ,
        },
    )
    report = validated(tmp_path, folder / "scene.sdf", root=folder)
    found = [(c.id, c.file, c.line, c.hint) for c in report.failures]
    assert found == [
        ("mesh.missing", "door/model.sdf", 5, "did you mean meshes/panel.obj?"),
        ("mesh.missing", "door/model.sdf", 6, None),
        ("model.zero_axis", "door/model.sdf", 11, None),
    ]


def test_malformed_xml_names_the_line_of_the_error(tmp_path):
    folder = write(
        tmp_path / "obj", {"obj.urdf": '<robot name="r">\n  <link name="a">\n</robot>\n'}
    )
    [check] = validated(tmp_path, folder / "obj.urdf").failures
    assert (check.id, check.file, check.line) == ("xml.malformed", "obj.urdf", 3)


def test_a_crash_while_collecting_keeps_the_first_problem_and_says_so(tmp_path, monkeypatch):
    from normalize.adapters import get_adapter

    folder = write(tmp_path / "obj", {"obj.urdf": one_link_urdf("meshes/gone.obj")})

    def broken(candidate):
        raise RuntimeError("boom")

    monkeypatch.setattr(get_adapter("urdf"), "problems", broken)
    report = validated(tmp_path, folder / "obj.urdf")
    assert [c.id for c in report.failures] == ["mesh.missing", "verify.internal_error"]
    assert "boom" in report.failures[1].message


def test_a_failed_read_back_says_which_families_did_not_run(tmp_path, monkeypatch):
    from normalize.errors import AssetError
    from verify.checks import structure

    def unreadable(path):
        raise AssetError("cannot be read", code="xml.malformed", path=str(path))

    monkeypatch.setattr(structure, "read_object", unreadable)
    folder = write(
        tmp_path / "obj",
        {"obj.urdf": one_link_urdf("meshes/base.obj"), "meshes/base.obj": TETRA_OBJ},
    )
    report = validated(tmp_path, folder / "obj.urdf")
    assert [c.id for c in report.failures] == ["structure.read_back"]
    [skipped] = report.check("verify.skipped")
    assert (skipped.severity, skipped.passed) == ("info", False) and "geometry" in skipped.message
