"""Hostile and broken assets, made here: each is a failed object with its own check id, never a
crash; a folder mixing them with good objects still validates the good ones."""

from __future__ import annotations

import os

import pytest
from verify_assets import CUBE_OBJ, box, door_urdf, mesh, write

from verify.validate import validate_paths


def robot(body: str) -> str:
    return f'<?xml version="1.0"?>\n<robot name="hostile">\n{body}\n</robot>\n'


def joint(
    name, parent, child, kind="revolute", axis="0 0 1", limit='lower="-1" upper="1"', extra=""
):
    limit_tag = f"<limit {limit}/>" if limit is not None else ""
    return (
        f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="0 0 0.1"/><axis xyz="{axis}"/>{limit_tag}{extra}</joint>'
    )


CUBE = box((0.1, 0.1, 0.1))
TWO_LINKS = f'<link name="a">{CUBE}</link><link name="b">{CUBE}</link>'
LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE robot [<!ENTITY a "hahahahahahahahahaha">'
    + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(8))
    + ']>\n<robot name="&i;"><link name="a"/></robot>\n'
)
SDF_LOOP = """<?xml version="1.0"?>
<sdf version="1.9"><model name="loop">
  <link name="a"/><link name="b"><pose>0 0 1 0 0 0</pose></link>
  <link name="c"><pose>0 0 2 0 0 0</pose></link>
  <joint name="ab" type="revolute"><parent>a</parent><child>b</child>
    <axis><xyz>0 0 1</xyz><limit><lower>-1</lower><upper>1</upper></limit></axis></joint>
  <joint name="bc" type="revolute"><parent>b</parent><child>c</child>
    <axis><xyz>0 0 1</xyz><limit><lower>-1</lower><upper>1</upper></limit></axis></joint>
  <joint name="ac" type="revolute"><parent>a</parent><child>c</child>
    <axis><xyz>0 0 1</xyz><limit><lower>-1</lower><upper>1</upper></limit></axis></joint>
</model></sdf>
"""

#: kind -> (files of the object folder, the check id it must fail with)
HOSTILE = {
    "malformed_xml": ({"m.urdf": '<robot name="x"><link name="a"></robot>'}, "xml.malformed"),
    "truncated_xml": (
        {"m.urdf": '<?xml version="1.0"?>\n<robot name="x"><link name="a">'},
        "xml.truncated",
    ),
    "entity_expansion": ({"m.urdf": LAUGHS}, "xml.entity"),
    "external_entity": (
        {
            "m.urdf": '<?xml version="1.0"?><!DOCTYPE robot [<!ENTITY x SYSTEM '
            '"file:///etc/passwd">]><robot name="&x;"><link name="a"/></robot>'
        },
        "xml.external_entity",
    ),
    "mesh_dotdot": (
        {"m.urdf": robot(f'<link name="a">{mesh("../../../secret.obj")}</link>')},
        "path.outside_root",
    ),
    "mesh_absolute": (
        {"m.urdf": robot('<link name="a">{}</link>')},  # filled in with the absolute path
        "path.outside_root",
    ),
    "symlink_leaving_root": (
        {"m.urdf": robot(f'<link name="a">{mesh("meshes/link.obj")}</link>')},
        "path.symlink_escape",
    ),
    "entry_symlink_leaving_root": ({}, "path.symlink_escape"),
    "joint_cycle": (
        {"m.urdf": robot(TWO_LINKS + joint("ab", "a", "b") + joint("ba", "b", "a"))},
        "model.cycle",
    ),
    "two_roots": (
        {"m.urdf": robot(TWO_LINKS + f'<link name="c">{CUBE}</link>' + joint("ab", "a", "b"))},
        "model.root",
    ),
    "duplicate_names": (
        {"m.urdf": robot(TWO_LINKS + f'<link name="b">{CUBE}</link>' + joint("ab", "a", "b"))},
        "model.duplicate_name",
    ),
    "nan": (
        {"m.urdf": robot(TWO_LINKS + joint("ab", "a", "b", limit='lower="nan" upper="1"'))},
        "parse.nan",
    ),
    "inf": (
        {"m.urdf": robot(TWO_LINKS + joint("ab", "a", "b", axis="inf 0 0"))},
        "parse.infinite",
    ),
    "zero_axis": (
        {"m.urdf": robot(TWO_LINKS + joint("ab", "a", "b", axis="0 0 0"))},
        "model.zero_axis",
    ),
    "lower_above_upper": (
        {"m.urdf": robot(TWO_LINKS + joint("ab", "a", "b", limit='lower="1" upper="-1"'))},
        "limits.reversed",
    ),
    "missing_limits": (
        {"m.urdf": robot(TWO_LINKS + joint("ab", "a", "b", limit=None))},
        "joint.limits_missing",
    ),
    "missing_mesh": (
        {"m.urdf": robot(f'<link name="a">{mesh("meshes/gone.obj")}</link>')},
        "mesh.missing",
    ),
    "corrupt_obj": (
        {
            "m.urdf": robot(f'<link name="a">{mesh("meshes/bad.obj")}</link>'),
            "meshes/bad.obj": "v 0 0 0\nv 1 0 0\nf 1 2 9\n",
        },
        "mesh.corrupt",
    ),
    "empty_file": ({"m.urdf": ""}, "xml.empty"),
    "non_utf8": (
        {"m.urdf": b'<robot name="\xff\xfe\xfa"><link name="a"/></robot>'},
        "xml.encoding",
    ),
    "mimic_loop": (
        {
            "m.urdf": robot(
                f'<link name="a">{CUBE}</link><link name="b">{CUBE}</link>'
                f'<link name="c">{CUBE}</link>'
                + joint("ab", "a", "b", extra='<mimic joint="ac"/>')
                + joint("ac", "a", "c", extra='<mimic joint="ab"/>')
            )
        },
        "model.mimic_loop",
    ),
    "sdf_closed_loop": ({"m.sdf": SDF_LOOP}, "model.closed_loop"),
    "unknown_joint_type": (
        {"m.urdf": robot(TWO_LINKS + joint("ab", "a", "b", kind="teleport"))},
        "joint.unsupported",
    ),
    "not_a_robot": ({"m.urdf": '<?xml version="1.0"?><mujoco model="x"/>'}, "urdf.not_robot"),
    "garbage_number": (
        {"m.urdf": robot(TWO_LINKS + joint("ab", "a", "b", limit='lower="-1" upper="$(arg u)"'))},
        "parse.number",
    ),
    "unknown_link": ({"m.urdf": robot(TWO_LINKS + joint("ab", "a", "z"))}, "model.unknown_link"),
    "mjcf_include_escape": (
        {
            "m.xml": '<mujoco model="m"><include file="../../../secret.xml"/><worldbody>'
            '<body name="a"><geom type="box" size="0.1 0.1 0.1"/><joint name="j" type="hinge"/>'
            "</body></worldbody></mujoco>"
        },
        "path.outside_root",
    ),
}


def make_hostile(root, kind: str, secret):
    """Write one hostile object folder `root/kind`; returns the folder."""
    files, _ = HOSTILE[kind]
    folder = root / kind
    if kind == "mesh_absolute":
        files = {"m.urdf": robot(f'<link name="a">{mesh(str(secret))}</link>')}
    write(folder, files)
    if kind == "symlink_leaving_root":
        (folder / "meshes").mkdir()
        os.symlink(secret, folder / "meshes" / "link.obj")
    if kind == "entry_symlink_leaving_root":  # the URDF itself points outside: never opened
        folder.mkdir(parents=True, exist_ok=True)
        os.symlink(secret.with_suffix(".urdf"), folder / "m.urdf")
    return folder


@pytest.fixture
def secret(tmp_path):
    """A mesh file outside every object folder, which hostile objects try to reach."""
    path = tmp_path / "secret.obj"
    path.write_text(CUBE_OBJ, encoding="utf-8")
    (tmp_path / "secret.xml").write_text("<mujoco><worldbody/></mujoco>", encoding="utf-8")
    (tmp_path / "secret.urdf").write_text(door_urdf(), encoding="utf-8")
    return path


def test_at_least_twenty_hostile_kinds():
    assert len(HOSTILE) >= 20


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_each_hostile_kind_fails_with_its_own_check_id(tmp_path, secret, kind):
    folder = make_hostile(tmp_path / "lib", kind, secret)
    [report] = validate_paths([folder], workers=1)
    assert report.status == "fail"
    assert [c.id for c in report.failures] == [HOSTILE[kind][1]]
    assert report.failures[0].message  # says what is wrong, for people


def test_folder_mixing_hostile_and_good_objects_validates_the_good_ones(tmp_path, secret):
    library = tmp_path / "library"
    for kind in HOSTILE:
        make_hostile(library, kind, secret)
    write(library / "good_door", {"door.urdf": door_urdf()})
    write(
        library / "good_box",
        {
            "box.urdf": door_urdf(
                door_geometry=mesh("meshes/cube.obj", (0, -0.4, 0), (0.02, 0.8, 1))
            ),
            "meshes/cube.obj": CUBE_OBJ,
        },
    )
    write(library / "ros_package", {"package.xml": "<package><name>x</name></package>"})
    remote = mesh("https://example.com/door.obj")
    write(
        library / "remote_mesh",
        {
            "door.urdf": door_urdf(
                extra="", door_geometry=box((0.02, 0.8, 1.0), (0.0, -0.4, 0.0)) + remote
            )
        },
    )
    reports = validate_paths([library], workers=2)
    by_folder = {r.source_id.split("/")[0]: r for r in reports}
    good = {"good_door", "good_box", "remote_mesh"}
    assert set(by_folder) == set(HOSTILE) | good  # package.xml is no asset
    assert len(reports) == len(HOSTILE) + len(good)
    for kind, (_, code) in HOSTILE.items():
        assert by_folder[kind].status == "fail", kind
        assert [c.id for c in by_folder[kind].failures] == [code], kind
    for name in ("good_door", "good_box"):
        assert by_folder[name].status == "pass", by_folder[name].failures
        assert by_folder[name].moving_joints == 1
    # A mesh behind a URL is never fetched: the shape is dropped and the object warned.
    assert by_folder["remote_mesh"].status == "warn"
    assert by_folder["remote_mesh"].warnings == ["geometry.shape_dropped"]
    leftovers = [p for p in library.rglob("*") if p.name == "object.urdf"]
    assert leftovers == []  # nothing was written into the source
