"""fidelity.*: the shipped object against an independent reading of its source (yourdfpy for URDF,
MuJoCo for MJCF) and plausibility checks needing no second reader. Each test breaks one thing on
purpose: the adapter's reading (monkeypatched, so the written file agrees with the adapter and
every other check passes), or the asset itself (an inch mesh, an 80 m door)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from verify_assets import CUBE_OBJ, box, door_urdf, mesh, urdf_source, write

import normalize.adapters.mjcf as mjcf_adapter
import normalize.adapters.mjcf.reader as mjcf_reader
import normalize.adapters.sdf as sdf_adapter
import normalize.adapters.urdf as urdf_adapter
from normalize.adapters import discover
from normalize.errors import AssetError
from normalize.run import normalize_candidate
from normalize.sources import Allowance, SourceConfig
from verify import verify_object


def verified(tmp_path, files: dict, source=urdf_source, **settings):
    root = write(tmp_path / "src", files)
    config = source(root, **settings)
    [candidate] = discover(config)
    return verify_object(normalize_candidate(candidate, tmp_path / "out"), config)


def fidelity_failures(report) -> dict[str, list]:
    out: dict[str, list] = {}
    for check in report.checks:
        if check.id.startswith("fidelity.") and not check.passed:
            out.setdefault(check.id, []).append(check)
    return out


def corrupt_urdf_reading(monkeypatch, corrupt) -> None:
    """Make the URDF adapter misread: `corrupt(obj)` rewrites what it read."""
    read = urdf_adapter.load_urdf_candidate
    monkeypatch.setattr(urdf_adapter, "load_urdf_candidate", lambda *a: corrupt(read(*a)))


def test_a_faithful_door_passes_every_fidelity_check(tmp_path):
    report = verified(tmp_path, {"cabinet.urdf": door_urdf(extra="")})
    assert report.status == "pass", fidelity_failures(report)
    for check_id in ("fidelity.link_poses", "fidelity.geometry", "fidelity.mass"):
        [check] = report.check(check_id)
        assert check.passed
    assert report.check("fidelity.reader")[0].message == "compared with yourdfpy"


def test_a_misread_joint_origin_is_caught_by_yourdfpy_poses(tmp_path, monkeypatch):
    def shifted(obj):
        [joint] = obj.joints
        origin = joint.origin.copy()
        origin[0, 3] += 0.2
        return obj.replace(joints=(replace(joint, origin=origin),))

    corrupt_urdf_reading(monkeypatch, shifted)
    report = verified(tmp_path, {"cabinet.urdf": door_urdf()})
    # The written file moves exactly like the adapter's (wrong) reading ...
    assert report.check("metric.self_distance.split")[0].passed
    # ... but not like the source: the door's frame and shapes are 0.1 m off either way once
    # the placement is fitted, far over the tolerance, so the object is refused.
    failed = fidelity_failures(report)
    [pose] = failed["fidelity.link_poses"]
    assert pose.severity == "error" and pose.element == "link link_0"
    assert "(source link door)" in pose.message and "yourdfpy" in pose.message
    assert 0.05 < pose.value < 0.3
    assert "fidelity.geometry" in failed
    assert report.status == "fail"


def test_a_misread_axis_sign_and_limits_are_caught_over_the_range(tmp_path, monkeypatch):
    def reversed_hinge(obj):
        [joint] = obj.joints
        return obj.replace(joints=(replace(joint, axis=-joint.axis),))

    corrupt_urdf_reading(monkeypatch, reversed_hinge)
    report = verified(tmp_path, {"cabinet.urdf": door_urdf()})
    failed = fidelity_failures(report)
    # At rest everything agrees; over the range the door swings into the cabinet instead.
    assert failed["fidelity.link_poses"][0].severity == "error"
    assert "q = joint_0" in failed["fidelity.link_poses"][0].message


def test_a_dropped_declared_mass_is_caught(tmp_path, monkeypatch):
    inertial = (
        '<inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" '
        'iyz="0"/></inertial>'
    )
    text = door_urdf().replace('<link name="door">', f'<link name="door">{inertial}')

    def massless(obj):
        return obj.replace(
            links=tuple(
                replace(link, inertial=None) if link.name == "door" else link for link in obj.links
            )
        )

    corrupt_urdf_reading(monkeypatch, massless)
    report = verified(tmp_path, {"cabinet.urdf": text})
    [mass] = fidelity_failures(report)["fidelity.mass"]
    assert mass.element == "link link_0" and "declares 1 kg" in mass.message
    assert mass.severity == "error"  # 16 kg computed from the box instead of 1 kg


def test_a_misread_mesh_scale_is_caught_by_the_geometry_comparison(tmp_path, monkeypatch):
    def doubled(obj):
        links = []
        for link in obj.links:
            if link.name == "door":
                link = replace(
                    link, visuals=tuple(replace(g, scale=g.scale * 1.05) for g in link.visuals)
                )
            links.append(link)
        return obj.replace(links=tuple(links))

    corrupt_urdf_reading(monkeypatch, doubled)
    door = door_urdf(door_geometry=mesh("door.obj", xyz=(0.0, 0.4, 0.0), scale=(0.02, 0.8, 1.0)))
    report = verified(tmp_path, {"cabinet.urdf": door, "door.obj": CUBE_OBJ})
    [geometry] = fidelity_failures(report)["fidelity.geometry"]
    # 5 % larger: over the 1 % tolerance, under 10 times it: the object goes to review.
    assert geometry.element == "link link_0" and geometry.severity == "warning"
    assert report.status == "warn" and "fidelity.geometry" in report.review


def test_an_inch_visual_mesh_next_to_a_metre_collision_box_is_refused(tmp_path):
    inch = 0.0254
    shapes = (
        f'<visual><geometry><mesh filename="door.obj" scale="{0.02 / inch} {0.8 / inch} '
        f'{1.0 / inch}"/></geometry></visual>'
        '<collision><geometry><box size="0.02 0.8 1.0"/></geometry></collision>'
    )
    text = door_urdf(door_geometry=shapes)
    report = verified(tmp_path, {"cabinet.urdf": text, "door.obj": CUBE_OBJ})
    [check] = fidelity_failures(report)["fidelity.visual_collision"]
    assert check.element == "link link_0" and check.value == pytest.approx(1 / inch, rel=1e-6)
    assert check.severity == "error" and report.status == "fail"
    assert "(source link door)" in check.message


def test_a_collision_box_somewhat_larger_than_its_visual_goes_to_review(tmp_path):
    shapes = (
        '<visual><geometry><box size="0.02 0.8 1.0"/></geometry></visual>'
        '<collision><geometry><box size="0.08 3.2 4.0"/></geometry></collision>'
    )
    report = verified(tmp_path, {"cabinet.urdf": door_urdf(door_geometry=shapes)})
    [check] = fidelity_failures(report)["fidelity.visual_collision"]
    assert check.severity == "warning" and check.value == pytest.approx(4.0)
    assert "fidelity.visual_collision" in report.review


def test_an_80_metre_door_is_refused_and_a_3_metre_valve_reviewed(tmp_path):
    door = door_urdf(
        frame_geometry=box((40.0, 64.0, 80.0)), door_geometry=box((1.6, 64.0, 80.0), (0, -32, 0))
    )
    door = door.replace('<robot name="cabinet">', '<robot name="door">').replace(
        'origin xyz="0.26 0.4 0"', 'origin xyz="20.8 32 0"'
    )
    report = verified(tmp_path / "door", {"door.urdf": door})
    [size] = fidelity_failures(report)["fidelity.size"]
    assert size.severity == "error" and size.value == pytest.approx(16.0, rel=0.01)
    assert "category door" in size.message and "[0.2, 5] m" in size.message

    # The door hangs 1 cm in front of the 1 m deep frame (inside it, it would swing out
    # through the frame's walls: collision.range).
    valve = door_urdf(frame_geometry=box((1.0, 1.0, 3.0)), hinge_x=0.51).replace(
        '<robot name="cabinet">', '<robot name="ball_valve">'
    )
    report = verified(tmp_path / "valve", {"valve.urdf": valve})
    [size] = fidelity_failures(report)["fidelity.size"]
    assert size.severity == "warning" and size.value == pytest.approx(1.5)
    assert report.review == ["fidelity.size"]


def test_an_implausible_declared_density_goes_to_review(tmp_path):
    heavy = (
        '<inertial><mass value="{m}"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" '
        'iyz="0"/></inertial>'
    )
    text = (
        door_urdf()
        .replace('<link name="frame">', '<link name="frame">' + heavy.format(m=200_000))
        .replace('<link name="door">', '<link name="door">' + heavy.format(m=10))
    )
    report = verified(tmp_path, {"cabinet.urdf": text})
    [density] = fidelity_failures(report)["fidelity.density"]
    # 200,010 kg in a 0.52 x 0.8 x 1 m box: 4.8e5 kg/m^3, 19 times the densest plausible.
    assert density.severity == "error" and 15 < density.value < 25


MJCF_DOOR = """<mujoco model="door">
  <worldbody>
    <body name="frame">
      <geom type="box" size="0.25 0.4 0.5"/>
      <body name="door" pos="0.26 -0.4 0">
        <joint name="ARRx" type="hinge" axis="0 0 1" range="0 1.5"/>
        <geom type="box" size="0.01 0.4 0.5" pos="0 0.4 0"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def mjcf_source(root, **settings) -> SourceConfig:
    return SourceConfig(
        name="tests", format="mjcf", path=root.resolve(), license="test", **settings
    )


def test_mjcf_compared_with_mujocos_own_compilation(tmp_path):
    report = verified(tmp_path, {"door.xml": MJCF_DOOR}, source=mjcf_source)
    assert report.check("fidelity.reader")[0].message == "compared with MuJoCo"
    assert not fidelity_failures(report)
    [mass] = report.check("fidelity.mass")
    assert mass.passed and mass.value is not None  # MuJoCo's body masses, from the geoms
    [geometry] = report.check("fidelity.geometry")
    assert geometry.passed and geometry.value < 1e-9


def test_a_misread_mjcf_body_is_caught_by_mujoco(tmp_path, monkeypatch):
    convert = mjcf_adapter.model_to_object

    def smaller(model, candidate, changes=()):
        obj = convert(model, candidate, changes)
        links = []
        for link in obj.links:
            if link.name == "door":
                link = replace(
                    link,
                    visuals=tuple(
                        replace(g, size=tuple(v / 2 for v in g.size)) for g in link.visuals
                    ),
                    collisions=tuple(
                        replace(g, size=tuple(v / 2 for v in g.size)) for g in link.collisions
                    ),
                )
            links.append(link)
        return obj.replace(links=tuple(links))

    monkeypatch.setattr(mjcf_reader, "model_to_object", smaller)  # where the adapter looks
    report = verified(tmp_path, {"door.xml": MJCF_DOOR}, source=mjcf_source)
    failed = fidelity_failures(report)
    [geometry] = failed["fidelity.geometry"]
    assert geometry.element == "link link_0" and "(source link door)" in geometry.message
    assert "MuJoCo" in geometry.message
    assert np.isfinite(geometry.value) and geometry.value > 0.2


def test_reversed_limits_accepted_by_an_allowance_compare_in_order(tmp_path):
    allowance = Allowance("limits.reversed", "authored upside down", ())
    report = verified(
        tmp_path, {"cabinet.urdf": door_urdf(lower=1.5, upper=0.0)}, allowances=(allowance,)
    )
    assert not fidelity_failures(report)
    assert report.check("fidelity.link_poses")[0].passed


def test_a_flat_panel_is_thickened_inside_its_own_link(tmp_path):
    """A door of a box and a flat panel on its back face (towards the cabinet, where the object's
    centre is): the panel's second layer goes into the door, so the door's box and the fitted
    placement stay as the source has them and every link frame is where yourdfpy puts it."""
    panel = "v 0 -0.4 -0.5\nv 0 0.4 -0.5\nv 0 0.4 0.5\nv 0 -0.4 0.5\nf 1 2 3\nf 1 3 4\n"
    door = box((0.02, 0.8, 1.0), (0.0, -0.4, 0.0)) + mesh("meshes/panel.obj", (-0.01, -0.4, 0.0))
    root = write(
        tmp_path / "src", {"cabinet.urdf": door_urdf(door_geometry=door), "meshes/panel.obj": panel}
    )
    config = urdf_source(root)
    [candidate] = discover(config)
    result = normalize_candidate(candidate, tmp_path / "out")
    assert any(c.code == "visual.doubled" for c in result.changes)
    written = (result.urdf_path.parent / "meshes").glob("panel*.obj")
    [layers] = [
        np.loadtxt([line[2:] for line in p.read_text().splitlines() if line.startswith("v ")])
        for p in written
    ]
    # Both layers lie within the door's 2 cm thickness (door frame: x from -0.01 to 0.01).
    assert layers[:, 0].min() == pytest.approx(0.0) and layers[:, 0].max() == pytest.approx(0.001)
    report = verify_object(result, config)
    assert report.check("fidelity.link_poses")[0].passed, fidelity_failures(report)
    assert report.check("fidelity.geometry")[0].passed


def test_a_curators_category_sets_the_size_range_the_build_checks(tmp_path):
    """The build categorizes once, curators' overrides applied, and verification judges the size
    against that category: a 5 m cabinet is plausible furniture but not a pen."""
    from pipeline import chain

    tall = door_urdf(
        frame_geometry=box((0.5, 0.8, 5.0)), door_geometry=box((0.02, 0.8, 5.0), (0.0, -0.4, 0.0))
    )
    root = write(tmp_path / "src", {"cabinet.urdf": tall})
    [candidate] = discover(urdf_source(root))

    def warnings(overrides) -> list[str]:
        staging = tmp_path / f"staging-{len(overrides)}"
        (staging / "objects").mkdir(parents=True)
        settings = chain.BatchSettings(
            staging=staging, cache_dir=None, overrides=overrides, versions=chain.current_versions()
        )
        outcome = chain.computed_outcome(candidate, settings, None)
        assert outcome.accepted, outcome.reject
        [row] = outcome.rows["objects"]
        return row["warnings"]

    assert "fidelity.size" not in warnings(())
    assert "fidelity.size" in warnings(((candidate.object_id, "pen"),))


SDF_DOOR = """<?xml version="1.0"?>
<sdf version="1.9"><model name="cabinet">
  <link name="frame"><visual name="v"><geometry><box><size>0.5 0.8 1.0</size></box></geometry>
    </visual></link>
  <link name="door"><pose>0.26 0 0 0 0 0</pose>
    <visual name="v"><geometry><box><size>0.02 0.8 1.0</size></box></geometry></visual></link>
  <joint name="hinge" type="revolute"><pose>0 0.4 0 0 0 0</pose><parent>frame</parent>
    <child>door</child><axis><xyz>0 0 1</xyz><limit><lower>0</lower><upper>1.5</upper>
    </limit></axis></joint>
</model></sdf>"""


def sdf_source(root, **settings):
    return SourceConfig(name="t", format="sdf", path=root, license="test", **settings)


def test_sdf_compared_with_drakes_reading(tmp_path):
    pytest.importorskip("pydrake", reason="Drake is the `sdf` extra (pip install drake)")
    report = verified(tmp_path, {"cabinet.sdf": SDF_DOOR}, source=sdf_source)
    assert report.check("fidelity.reader")[0].message == "compared with Drake"
    [poses] = report.check("fidelity.link_poses")
    assert poses.passed, fidelity_failures(report)


def test_a_misread_sdf_axis_is_caught_by_drake(tmp_path, monkeypatch):
    pytest.importorskip("pydrake", reason="Drake is the `sdf` extra (pip install drake)")
    load = sdf_adapter.SdfAdapter.load

    def tilted(self, candidate):  # the hinge read about x instead of z
        obj = load(self, candidate)
        moved = [replace(j, axis=np.array([1.0, 0.0, 0.0])) if j.moving else j for j in obj.joints]
        return obj.replace(joints=tuple(moved))

    monkeypatch.setattr(sdf_adapter.SdfAdapter, "load", tilted)
    report = verified(tmp_path, {"cabinet.sdf": SDF_DOOR}, source=sdf_source)
    failed = fidelity_failures(report)
    [pose] = failed["fidelity.link_poses"]
    assert "(source link door)" in pose.message and "Drake" in pose.message
    assert report.status == "fail"


def test_every_sdf_object_of_the_corpus_agrees_with_drake(corpus_sources):
    pytest.importorskip("pydrake", reason="Drake is the `sdf` extra (pip install drake)")
    import tempfile

    compared = 0
    for source in corpus_sources.values():
        if source.format != "sdf":
            continue
        for candidate in discover(source):
            if candidate.refusal is not None:
                continue
            try:
                result = normalize_candidate(candidate, Path(tempfile.mkdtemp()))
            except AssetError:
                continue  # refused by the adapter (tests/test_normalize_sdf.py)
            report = verify_object(result, source, simulator=False)
            assert report.check("fidelity.reader")[0].message == "compared with Drake"
            assert report.check("fidelity.link_poses")[0].passed, fidelity_failures(report)
            compared += 1
    assert compared >= 2
