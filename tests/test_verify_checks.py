"""The checks of `verify.verify_object` on objects built by the tests: each check passes on a good
object and fails (with its id, element, value and threshold) on an object broken on purpose."""

from __future__ import annotations

import importlib.util
import os
import shutil
from dataclasses import replace

import numpy as np
import pytest
from verify_assets import CUBE_OBJ, box, door_urdf, hollow_cabinet_urdf, mesh, urdf_source, write

import metric
import schemas
from normalize.adapters import discover
from normalize.errors import AssetError
from normalize.model import ArticulatedObject, Inertial, Joint, Link
from normalize.run import normalize_candidate
from normalize.sources import Allowance
from normalize.urdf import read_object
from verify import rejection_report, verify_object
from verify import run as verify_run
from verify.checks import flagged, kinematics
from verify.report import CheckResult, VerificationReport
from verify.validate import report_document


def normalized(tmp_path, files: dict, **settings):
    """(NormalizeResult, SourceConfig) of the single URDF object written from `files`."""
    root = write(tmp_path / "src", files)
    source = urdf_source(root, **settings)
    [candidate] = discover(source)
    return normalize_candidate(candidate, tmp_path / "out"), source


def failing(report: VerificationReport) -> dict[str, CheckResult]:
    return {c.id: c for c in report.checks if not c.passed}


def edit_written(result, old: str, new: str) -> None:
    """Change the normalized URDF on disk (as a faulty normalizer would have written it)."""
    text = result.urdf_path.read_text(encoding="utf-8")
    assert old in text
    result.urdf_path.write_text(text.replace(old, new), encoding="utf-8")


def test_good_door_passes_every_check_family(tmp_path):
    result, source = normalized(tmp_path, {"cabinet.urdf": door_urdf()})
    report = verify_object(result, source)
    assert report.status == "pass", failing(report)
    assert report.moving_joints == 1
    ids = {c.id for c in report.checks}
    for expected in (
        "structure.read_back",
        "structure.single_root",
        "structure.tree",
        "structure.unique_names",
        "structure.axes",
        "structure.limits",
        "structure.mimic_loops",
        "metric.self_distance.split",
        "metric.self_distance.kinetic",
        "metric.joint_self_distance",
        "metric.swap.joint",
        "metric.swap.urdf",
        "metric.motion",
        "geometry.mesh_load",
        "geometry.bounds_finite",
        "geometry.extent",
        "inertia.mass_positive",
        "inertia.positive_definite",
        "inertia.triangle_inequality",
        "inertia.origin",
        "attachment.rest",
        "attachment.range",
        "attachment.axis",
        "simulator.compile",
        "simulator.kinematics",
        "simulator.load.pybullet",
        "simulator.load.yourdfpy",
        "simulator.printed",
        "simulator.agreement",
    ):
        assert expected in ids
    split = report.check("metric.self_distance.split")[0]
    assert split.value <= split.threshold < 1e-8
    origin = report.check("inertia.origin")[0]
    assert origin.severity == "info" and "box_formula" in origin.message
    schemas.validate(report_document([report], strict=False, seconds=0.1), "validation_report")


def test_yes_no_checks_pass_with_value_0_and_fail_once_per_offender(tmp_path):
    result, source = normalized(tmp_path, {"cabinet.urdf": door_urdf()})
    report = verify_object(result, source, simulator=False)
    for check_id in (
        "structure.joint_types",
        "structure.limits",
        "structure.mimic_loops",
        "geometry.mesh_missing",
        "geometry.mesh_degenerate",
        "inertia.missing",
    ):
        [check] = report.check(check_id)
        # Nothing offends, so no element is named (not an arbitrary first joint or link).
        assert check.passed and check.value == 0 and check.element is None, check
    failed = flagged("x.y", "warning", ["joint a", "joint b"], problem="bad", passed_message="ok")
    assert [(c.passed, c.element, c.message, c.value) for c in failed] == [
        (False, "joint a", "joint a: bad", 1.0),
        (False, "joint b", "joint b: bad", 1.0),
    ]


def test_a_door_whose_hinge_is_a_metre_away_goes_to_review_naming_the_source_joint(tmp_path):
    result, source = normalized(tmp_path, {"cabinet.urdf": door_urdf(hinge_offset=1.0)})
    report = verify_object(result, source)
    # A heuristic that can flag a valid asset (an elbow left out on purpose) warns and sends
    # the object to review; it does not refuse it.
    assert report.status == "warn" and report.review == ["attachment.axis"]
    assert report.as_dict()["review"] == ["attachment.axis"]
    axis = failing(report)["attachment.axis"]
    assert axis.severity == "warning" and axis.element == "joint joint_0"
    assert axis.message.startswith("joint joint_0 (source joint hinge): its axis passes")
    assert "attachment.axis allowance" in axis.message
    assert 0.95 < axis.value < 1.05 and axis.threshold < 0.2
    assert "attachment.range" in report.warnings  # it swings a metre away from the cabinet
    assert "attachment.rest" not in report.warnings  # at rest it is in place
    assert report.check("metric.self_distance.split")[0].passed


def test_a_part_floating_at_rest_warns(tmp_path):
    result, source = normalized(tmp_path, {"cabinet.urdf": door_urdf(hinge_x=0.86)})
    report = verify_object(result, source)
    assert report.status == "warn"
    rest = failing(report)["attachment.rest"]
    assert rest.severity == "warning" and 0.55 < rest.value < 0.65
    assert report.check("attachment.axis")[0].passed


def test_self_distance_catches_a_normalization_that_changed_the_motion(tmp_path):
    result, source = normalized(tmp_path, {"cabinet.urdf": door_urdf()})
    edit_written(result, 'upper="1.5"', 'upper="1.25"')
    report = verify_object(result, source)
    bad = failing(report)
    for check_id in ("metric.self_distance.split", "metric.self_distance.kinetic"):
        assert bad[check_id].severity == "error"
        assert bad[check_id].value > 0.1 > bad[check_id].threshold
    # The file itself is consistent: swap invariance and MuJoCo agree with it.
    assert "metric.swap.urdf" not in bad and "simulator.kinematics" not in bad
    assert report.status == "fail"


def test_kinetic_self_distance_uses_the_normalized_joint_grams(tmp_path):
    result, source = normalized(tmp_path, {"cabinet.urdf": door_urdf()})
    reread = read_object(result.urdf_path)
    grams, massless = kinematics.kinetic_grams(reread)
    assert massless == 0
    mass, com, inertia = reread.child_mass_moments()
    assert np.allclose(grams[0], metric.kinetic_norm(mass[0], com[0], inertia[0]))
    placed = result.reference.transformed(result.placement, result.scale)
    sources = {j.name: j.source_name for j in result.object.joints}
    ref_grams = kinematics.reference_grams(placed, reread, grams, sources)
    hinge = [i for i, j in enumerate(placed.joints) if j.name == "hinge"][0]
    assert np.allclose(ref_grams[hinge], grams[0])


def test_kinetic_grams_fall_back_to_split_for_a_nearly_singular_inertia():
    # Smallest eigenvalue 1.7e-17 > 0 but no Cholesky factor: metric.kinetic_norm refuses it,
    # so the joint is measured in the split norm (an eigenvalue test used to let it through and
    # the metric checks crashed).
    inertia = [
        [0.9997101203867025, 0.015626221407588802, 0.0067540201086712355],
        [0.015626221407588802, 0.15765447351978745, -0.36408153167045854],
        [0.0067540201086712355, -0.36408153167045854, 0.8426354060935101],
    ]
    links = [Link("base"), Link("door", inertial=Inertial(1.0, [0.0, 0.0, 0.0], inertia))]
    hinge = Joint("hinge", "revolute", "base", "door", axis=[0, 0, 1], lower=0.0, upper=1.0)
    obj = ArticulatedObject("t", links, [hinge])
    assert np.linalg.eigvalsh(obj.child_mass_moments()[2][0])[0] > 0
    grams, massless = kinematics.kinetic_grams(obj)
    assert massless == 1 and np.array_equal(grams[0], kinematics.SPLIT)


def test_zero_range_revolute_is_written_fixed_and_flagged(tmp_path):
    result, source = normalized(tmp_path, {"cabinet.urdf": door_urdf(lower=0.0, upper=0.0)})
    assert "joint.zero_range_fixed" in {c.code for c in result.changes}
    report = verify_object(result, source)
    moving = failing(report)["structure.moving_joints"]
    assert moving.severity == "warning" and moving.value == 0
    assert report.status == "warn" and report.moving_joints == 0
    assert report.check("simulator.compile")[0].passed


def test_swap_reversal_negates_twists_and_swaps_limits(tmp_path):
    result, source = normalized(tmp_path, {"cabinet.urdf": door_urdf(lower=-0.5, upper=1.5)})
    obj = read_object(result.urdf_path)
    flipped = kinematics.flipped(obj)
    assert np.allclose(flipped.screws().twist, -obj.screws().twist)
    assert (flipped.joints[0].lower, flipped.joints[0].upper) == (-1.5, 0.5)
    assert not any(link.visuals or link.collisions for link in flipped.links)
    # Flipping the axis without swapping the limits is a different joint: the check can fail.
    wrong = flipped.replace(joints=(replace(flipped.joints[0], lower=-0.5, upper=1.5),))
    t1, t2 = kinematics.metric_tree(obj), kinematics.metric_tree(wrong)
    assert metric.tree_distance(t1, t2, kinematics.SPLIT).value > 1.0
    report = verify_object(result, source)
    swap = report.check("metric.swap.urdf")[0]
    assert swap.passed and swap.value <= swap.threshold


def test_inertia_tensor_that_is_not_positive_definite_fails(tmp_path):
    result, source = normalized(tmp_path, {"cabinet.urdf": door_urdf()})
    text = result.urdf_path.read_text(encoding="utf-8")
    start = text.index('ixx="', text.index('<link name="link_0"')) + len('ixx="')
    end = text.index('"', start)
    result.urdf_path.write_text(text[:start] + "-1.0" + text[end:], encoding="utf-8")
    report = verify_object(result, source)
    bad = failing(report)["inertia.positive_definite"]
    assert bad.element == "link link_0" and bad.value < 0
    assert report.status == "fail"


def test_moving_link_without_mass_warns(tmp_path):
    result, source = normalized(tmp_path, {"cabinet.urdf": door_urdf(door_geometry="")})
    report = verify_object(result, source)
    assert failing(report)["inertia.missing"].element == "link link_0"
    assert "inertia.missing" in report.warnings
    assert "not measured" in report.check("attachment.axis")[0].message


def test_absurd_size_and_degenerate_mesh_and_missing_texture_are_warnings(tmp_path):
    triangle = "v 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nf 1 2 3\n"
    textured = "mtllib cube.mtl\n" + CUBE_OBJ
    files = {
        "cabinet.urdf": door_urdf(
            frame_geometry=box((30.0, 0.8, 1.0)),
            door_geometry=box((0.02, 0.8, 1.0), (0.0, -0.4, 0.0))
            + mesh("meshes/triangle.obj")
            + mesh("meshes/cube.obj", (0.0, -0.4, 0.0), (0.02, 0.8, 1.0)),
        ),
        "meshes/triangle.obj": triangle,
        "meshes/cube.obj": textured,
        "meshes/cube.mtl": "newmtl a\nmap_Kd wood.png\n",
    }
    result, source = normalized(tmp_path, files)
    report = verify_object(result, source)
    bad = failing(report)
    assert bad["geometry.extent"].value == pytest.approx(30.0)
    assert bad["geometry.mesh_degenerate"].element.endswith("triangle.obj")
    assert bad["geometry.texture_missing"].value == 1
    assert report.status == "warn"
    assert set(report.warnings) >= {
        "geometry.extent",
        "geometry.mesh_degenerate",
        "geometry.texture_missing",
    }
    # The shipped files load in every simulator as written: the flat triangle is written as two
    # layers (recorded), which MuJoCo accepts.
    assert report.check("simulator.compile")[0].passed
    assert report.check("simulator.printed")[0].passed
    assert any(c.code == "visual.doubled" for c in result.changes)


def test_simulator_comparison_detects_different_kinematics(tmp_path):
    from verify.checks import Context, simulator

    result, source = normalized(tmp_path, {"cabinet.urdf": door_urdf()})
    ctx = Context(result=result, source=source, reread=read_object(result.urdf_path))
    checks = {c.id: c for c in simulator.run(ctx)}
    assert checks["simulator.agreement"].passed and checks["simulator.kinematics"].passed
    joint = ctx.reread.joints[0]
    origin = joint.origin.copy()
    origin[0, 3] += 1e-3
    ctx.reread = ctx.reread.replace(joints=(replace(joint, origin=origin),))
    checks = {c.id: c for c in simulator.run(ctx)}
    for check_id in ("simulator.kinematics", "simulator.agreement"):
        assert not checks[check_id].passed
        assert checks[check_id].value == pytest.approx(1e-3, rel=1e-3)


def skewed_hinge_urdf() -> str:
    """Two boxes and a hinge with many significant digits in its origin and limits."""
    return f"""<?xml version="1.0"?>
<robot name="skewed">
  <link name="frame">{box((0.5, 0.8, 1.0))}</link>
  <link name="lid">{box((0.3, 0.2, 0.1), (0.1234567891, 0.0, 0.0))}</link>
  <joint name="hinge" type="revolute">
    <origin xyz="1.23456789123 0.345678912 0.987654321" rpy="0.3123456789 0.2 0.1"/>
    <parent link="frame"/>
    <child link="lid"/>
    <axis xyz="0.48 0.6 0.64"/>
    <limit lower="-2.718281828" upper="3.14159" effort="1" velocity="1"/>
  </joint>
</robot>
"""


def mjcf_pose_error(result) -> float:
    """Largest difference of MuJoCo's link poses from the shipped MJCF and ours."""
    import mujoco

    from verify.checks import simulator

    obj = read_object(result.urdf_path)
    model = mujoco.MjModel.from_xml_path(str(result.urdf_path.parent / "object.xml"))
    poses = simulator.MuJoCoPoses(mujoco, model, [link.name for link in obj.links], ["joint_0"])
    worst = 0.0
    for _, q in simulator.configurations(obj):
        coords = obj.resolve_configuration(q)
        ours, theirs = obj.link_poses(coords), poses.poses(coords)
        worst = max(worst, max(float(np.abs(theirs[n] - ours[n]).max()) for n in ours))
    return worst


def test_the_mjcf_holds_the_urdf_numbers_and_joins_the_agreement(tmp_path, monkeypatch):
    """MuJoCo's XML writer at 17 digits: the MJCF puts every link where the URDF does to
    rounding (1e-12), so it joins yourdfpy, MuJoCo (URDF) and PyBullet in simulator.agreement
    at 1e-6. Written with MuJoCo's default 6 digits, it is off by more than 1e-6 and is held to
    1e-5 on its own (simulator.mjcf_kinematics)."""
    import normalize.mjcf_writer as mjcf_writer
    from verify.checks import Context, simulator

    result, source = normalized(tmp_path / "full", {"skewed.urdf": skewed_hinge_urdf()})
    assert mjcf_pose_error(result) < 1e-12
    ctx = Context(result=result, source=source, reread=read_object(result.urdf_path))
    checks = {c.id: c for c in simulator.run(ctx)}
    agreement = checks["simulator.agreement"]
    assert agreement.passed and agreement.threshold == 1e-6
    assert "MuJoCo (MJCF)" in agreement.message and "simulator.mjcf_kinematics" not in checks

    monkeypatch.setattr(mjcf_writer, "_setting", lambda mujoco: None)
    result, source = normalized(tmp_path / "six", {"skewed.urdf": skewed_hinge_urdf()})
    assert 1e-6 < mjcf_pose_error(result) < 1e-5
    ctx = Context(result=result, source=source, reread=read_object(result.urdf_path))
    checks = {c.id: c for c in simulator.run(ctx)}
    assert checks["simulator.mjcf_kinematics"].passed
    assert checks["simulator.mjcf_kinematics"].threshold == 1e-5
    assert "MuJoCo (MJCF)" not in checks["simulator.agreement"].message


def test_simulator_printed_output_fails_for_the_loader_that_printed(tmp_path):
    """Two visuals with one name: MuJoCo prints a warning from C++ (captured at the file
    descriptor), so the file as written would not load quietly."""
    from verify.checks import Context, simulator

    result, source = normalized(tmp_path, {"cabinet.urdf": door_urdf()})
    edit_written(result, 'name="link_0_visual_0"', 'name="base_visual_0"')
    ctx = Context(result=result, source=source, reread=read_object(result.urdf_path))
    [printed] = [c for c in simulator.run(ctx) if c.id == "simulator.printed"]
    assert not printed.passed and printed.element == "loader mujoco"
    assert "duplicate name" in printed.message


def test_printed_output_is_the_blocks_not_another_threads_logging(capfd):
    """A Dask worker logs from threads of its own (a lost peer, a heartbeat) while an object is
    verified: that is not what the loader printed, and goes where it went before."""
    import logging
    import threading

    from verify.printed import printed_output

    logger = logging.getLogger("a_worker_of_the_tests")
    stream = open(2, "w", closefd=False)  # noqa: SIM115 (fd 2 stays open)
    handler = logging.StreamHandler(stream)
    logger.addHandler(handler)
    logging.getLogger("a_worker_of_the_tests.child").addHandler(handler)  # one handler, twice
    try:
        with printed_output() as printed:
            worker = threading.Thread(target=logger.warning, args=("a peer was lost",))
            worker.start()
            worker.join()
            os.write(2, b"the loader's C code warns\n")
            with open(1, "w", closefd=False) as stdout:
                print("the loader prints", file=stdout, flush=True)
        assert handler.stream is stream, "the stream the handler held is back"
    finally:
        logger.removeHandler(handler)
        logging.getLogger("a_worker_of_the_tests.child").removeHandler(handler)
    assert printed == ["the loader's C code warns\nthe loader prints"]
    assert "a peer was lost" in capfd.readouterr().err


def test_missing_simulator_is_reported_skipped_not_passed(tmp_path, monkeypatch):
    from verify.checks import Context, simulator

    result, source = normalized(tmp_path, {"cabinet.urdf": door_urdf()})
    monkeypatch.setattr(simulator, "_installed", lambda module: module != "pybullet")
    ctx = Context(result=result, source=source, reread=read_object(result.urdf_path))
    checks = simulator.run(ctx)
    [skipped] = [c for c in checks if c.id == "simulator.skipped"]
    assert skipped.severity == "info" and not skipped.passed
    assert skipped.element == "loader pybullet"
    assert not any(c.id == "simulator.load.pybullet" for c in checks)


needs_sapien = pytest.mark.skipif(
    importlib.util.find_spec("sapien") is None,
    reason="SAPIEN is not installed (the `sapien` extra: pip install -e '.[sapien]')",
)


@needs_sapien
def test_sapien_loads_steps_and_agrees_with_mujoco(tmp_path):
    from verify.sapien_process import shared

    result, source = normalized(tmp_path, {"cabinet.urdf": door_urdf()})
    report = verify_object(result, source)
    assert report.status == "pass", failing(report)
    [load] = report.check("simulator.load.sapien")
    [step] = report.check("simulator.step.sapien")
    [agreement] = report.check("simulator.sapien_agreement")
    assert load.passed and step.passed and agreement.passed
    physics_only = "physics only, no render device: collision geometry loaded"
    assert (physics_only in load.message) == shared().physics_only
    assert agreement.threshold == 1e-5 and agreement.value < 1e-6
    assert "SAPIEN and MuJoCo's (URDF)" in agreement.message
    [printed] = report.check("simulator.printed")
    assert printed.passed and "SAPIEN printed nothing" in printed.message


@needs_sapien
def test_sapien_disagreeing_with_mujoco_fails_naming_the_link(tmp_path, monkeypatch):
    """SAPIEN given a copy of the shipped file whose hinge axis was changed after writing, MuJoCo
    the shipped file: their poses differ by the door's swing, and the link is named."""
    from verify.checks import Context, simulator

    result, source = normalized(tmp_path, {"cabinet.urdf": door_urdf()})
    broken = tmp_path / "broken"
    shutil.copytree(result.urdf_path.parent, broken)
    text = (broken / "object.urdf").read_text(encoding="utf-8")
    assert 'axis xyz="0.0 0.0 1.0"' in text
    (broken / "object.urdf").write_text(
        text.replace('axis xyz="0.0 0.0 1.0"', 'axis xyz="1.0 0.0 0.0"')
    )
    load_sapien = simulator._load_sapien
    monkeypatch.setattr(
        simulator, "_load_sapien", lambda path, obj: load_sapien(broken / path.name, obj)
    )
    ctx = Context(result=result, source=source, reread=read_object(result.urdf_path))
    checks = {c.id: c for c in simulator.run(ctx)}
    assert checks["simulator.load.sapien"].passed and checks["simulator.agreement"].passed
    agreement = checks["simulator.sapien_agreement"]
    assert not agreement.passed and agreement.value > 0.1
    assert agreement.element == "link link_0" and "worst: link link_0" in agreement.message


@needs_sapien
def test_a_collision_shape_sapien_skips_fails_its_load_naming_the_link(tmp_path):
    """SAPIEN drops a collision mesh it cannot cook (here one without faces) without raising:
    the shapes it built are counted against the file's."""
    from verify.checks import Context, simulator

    result, source = normalized(tmp_path, {"cabinet.urdf": door_urdf()})
    ctx = Context(result=result, source=source, reread=read_object(result.urdf_path))
    (result.urdf_path.parent / "no_faces.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\n")
    text = result.urdf_path.read_text(encoding="utf-8")
    door = text.index('<collision name="link_0_collision_0">')
    text = text[:door] + text[door:].replace(
        '<box size="0.02 0.8 1.0"/>', '<mesh filename="no_faces.obj"/>', 1
    )
    result.urdf_path.write_text(text, encoding="utf-8")
    checks = simulator.run(ctx)
    [load] = [c for c in checks if c.id == "simulator.load.sapien"]
    assert not load.passed and load.element == "link link_0"
    assert "skips the collision shapes it could not cook: 1 of link link_0" in load.message
    [printed] = [c for c in checks if c.id == "simulator.printed" and c.element == "loader sapien"]
    assert "cookConvexMesh" in printed.message


def keys_urdf(keys: int) -> str:
    """A board with `keys` prismatic keys on a 16-wide grid (keys + 1 links)."""
    links = [f'<link name="board">{box((0.7, 0.7, 0.02))}</link>']
    joints = []
    for i in range(keys):
        x, y = (i % 16) * 0.04 - 0.3, (i // 16) * 0.04 - 0.3
        links.append(f'<link name="key{i}">{box((0.03, 0.03, 0.01))}</link>')
        joints.append(
            f'<joint name="press{i}" type="prismatic"><parent link="board"/>'
            f'<child link="key{i}"/><origin xyz="{x:.2f} {y:.2f} 0.015"/><axis xyz="0 0 -1"/>'
            '<limit lower="0" upper="0.004" effort="1" velocity="1"/></joint>'
        )
    return f'<?xml version="1.0"?><robot name="keys">{"".join(links + joints)}</robot>'


@needs_sapien
def test_sapien_skips_256_links_where_it_crashes_and_a_crash_ends_only_its_child(
    tmp_path, monkeypatch
):
    """Stepping an articulation of 256 links crashes SAPIEN (SIGSEGV): it is skipped for such an
    object. Forced past that bound, the crash fails that object's SAPIEN load only (the other
    loaders' checks stand), and the next object loads in a new child."""
    from verify.checks import Context, simulator

    result, source = normalized(tmp_path / "keys", {"keys.urdf": keys_urdf(255)})
    keys = Context(result=result, source=source, reread=read_object(result.urdf_path))
    checks = simulator.run(keys)
    [skipped] = [c for c in checks if c.id == "simulator.skipped" and "SAPIEN" in c.message]
    assert skipped.element == "loader sapien" and "256 links" in skipped.message
    assert not any("sapien" in c.id for c in checks)

    monkeypatch.setattr(simulator, "SAPIEN_MAX_LINKS", 1000)
    checks = {c.id: c for c in simulator.run(keys)}
    load = checks["simulator.load.sapien"]
    assert not load.passed and "its process died (SIGSEGV)" in load.message
    assert checks["simulator.agreement"].passed and "simulator.sapien_agreement" not in checks
    result, source = normalized(tmp_path / "door", {"cabinet.urdf": door_urdf()})
    door = Context(result=result, source=source, reread=read_object(result.urdf_path))
    checks = {c.id: c for c in simulator.run(door)}
    assert checks["simulator.load.sapien"].passed and checks["simulator.sapien_agreement"].passed


def test_missing_sapien_is_reported_skipped(tmp_path, monkeypatch):
    from verify.checks import Context, simulator

    result, source = normalized(tmp_path, {"cabinet.urdf": door_urdf()})
    monkeypatch.setattr(simulator, "_installed", lambda module: module != "sapien")
    ctx = Context(result=result, source=source, reread=read_object(result.urdf_path))
    checks = simulator.run(ctx)
    [skipped] = [c for c in checks if c.id == "simulator.skipped"]
    assert skipped.element == "loader sapien" and "`sapien` package" in skipped.message
    assert not any("sapien" in c.id for c in checks)


@needs_sapien
def test_sapien_without_mujoco_is_held_to_our_poses(tmp_path, monkeypatch):
    from verify.checks import Context, simulator

    result, source = normalized(tmp_path, {"cabinet.urdf": door_urdf()})
    monkeypatch.setattr(simulator, "_installed", lambda module: module != "mujoco")
    ctx = Context(result=result, source=source, reread=read_object(result.urdf_path))
    agreement = {c.id: c for c in simulator.run(ctx)}["simulator.sapien_agreement"]
    assert agreement.passed and "SAPIEN and ours" in agreement.message


def test_per_object_allowance_waives_a_check_and_keeps_it_listed(tmp_path):
    allowances = (
        "allowances:\n  - check: attachment.axis\n    reason: the hinge is far on purpose\n"
    )
    files = {"cabinet.urdf": door_urdf(hinge_offset=1.0), "arena-allowances.yaml": allowances}
    result, source = normalized(tmp_path, files)
    report = verify_object(result, source)
    axis = report.check("attachment.axis")[0]
    assert not axis.passed and axis.waived
    assert "far on purpose" in axis.waiver_reason and "arena-allowances.yaml" in axis.waiver_reason
    assert report.status == "warn"  # the range warning is not waived
    assert report.check("allowances.file")[0].passed


def test_source_allowance_waives_only_the_named_objects(tmp_path):
    reason = "known hinge placement"
    for objects, waived in (((), True), (("cabinet",), True), (("other*",), False)):
        allowance = Allowance("attachment.axis", reason, objects)
        folder = tmp_path / f"case{len(objects)}{waived}"
        result, source = normalized(
            folder, {"cabinet.urdf": door_urdf(hinge_offset=1.0)}, allowances=(allowance,)
        )
        report = verify_object(result, source)
        axis = report.check("attachment.axis")[0]
        assert axis.waived is waived
        assert report.review == ([] if waived else ["attachment.axis"])
        if waived:
            assert "source tests" in axis.waiver_reason


def test_unusable_allowances_file_fails_the_object(tmp_path):
    files = {
        "cabinet.urdf": door_urdf(),
        "arena-allowances.yaml": "allowances:\n  - check: Not A Check Id\n    reason: x\n",
    }
    result, source = normalized(tmp_path, files)
    report = verify_object(result, source)
    bad = failing(report)["allowances.file"]
    assert bad.severity == "error" and "unusable" in bad.message
    assert report.status == "fail"


def test_a_crashing_check_is_reported_not_raised(tmp_path, monkeypatch):
    result, source = normalized(tmp_path, {"cabinet.urdf": door_urdf()})

    def broken(ctx):
        raise RuntimeError("boom")

    families = [(n, broken if n == "inertia" else f) for n, f in verify_run.FAMILIES]
    monkeypatch.setattr(verify_run, "FAMILIES", tuple(families))
    report = verify_object(result, source, simulator=False)
    bad = failing(report)["verify.internal_error"]
    assert "inertia" in bad.message and "boom" in bad.message
    assert report.check("attachment.axis")[0].passed  # later families still ran
    assert report.check("simulator.skipped")[0].severity == "info"


def test_verdict_follows_severity_and_waivers():
    def report(*checks):
        return VerificationReport("x", checks=list(checks))

    ok = CheckResult("a.b", "error", True)
    warn = CheckResult("c.d", "warning", False)
    error = CheckResult("e.f", "error", False)
    info = CheckResult("g.h", "info", False)
    waived = CheckResult("e.f", "error", False, waived=True, waiver_reason="why")
    assert report(ok, info).status == "pass"
    assert report(ok, warn).status == "warn" and report(ok, warn).warnings == ["c.d"]
    assert report(warn, error).status == "fail"
    assert report(warn, waived).status == "warn"
    assert report(waived).status == "pass"
    with pytest.raises(ValueError):
        CheckResult("a.b", "fatal", False)


def test_rejection_report_uses_the_rejection_code(tmp_path):
    root = write(tmp_path / "src", {"cabinet.urdf": door_urdf(lower=1.0, upper=0.0)})
    source = urdf_source(root)
    [candidate] = discover(source)
    with pytest.raises(AssetError) as caught:
        normalize_candidate(candidate, tmp_path / "out")
    report = rejection_report(candidate, caught.value)
    assert report.status == "fail" and report.stage == "parse"
    assert [c.id for c in report.failures] == ["limits.reversed"]
    assert report.failures[0].element == "joint hinge"
    entry = report.as_dict()
    assert entry["failures"] == ["limits.reversed"] and entry["moving_joints"] is None


def test_a_crash_outside_the_checks_is_a_failed_internal_report(tmp_path, monkeypatch):
    import normalize.run
    from verify.validate import validate_candidate

    root = write(tmp_path / "src", {"cabinet.urdf": door_urdf()})
    [candidate] = discover(urdf_source(root))

    def broken(candidate, out):
        raise RuntimeError("boom")

    monkeypatch.setattr(normalize.run, "normalize_candidate", broken)
    report = validate_candidate(candidate, tmp_path / "out")
    assert report.status == "fail" and report.stage == "internal"
    assert report.object_id == candidate.object_id and report.source_id == candidate.source_id
    assert [c.id for c in report.failures] == ["internal.error"]
    assert "RuntimeError: boom" in report.failures[0].message


@pytest.mark.parametrize("part", ["door", "drawer"])
def test_collision_range_flags_parts_passing_through_the_carcass(tmp_path, part):
    """A door whose hinge axis is reversed swings into its cabinet, a drawer whose travel goes
    0.3 m back through a back wall 3 cm away: new intersections; the correct ones are clean."""
    good, _ = normalized(tmp_path / "good", {"cabinet.urdf": hollow_cabinet_urdf(part)})
    bad, source = normalized(
        tmp_path / "bad", {"cabinet.urdf": hollow_cabinet_urdf(part, faulty=True)}
    )
    [clean] = verify_object(good, source).check("collision.range")
    assert clean.passed and "1 joint(s)" in clean.message
    report = verify_object(bad, source)
    [flagged] = report.check("collision.range")
    assert not flagged.passed and flagged.severity == "warning"
    assert flagged.element == "joint joint_0" and flagged.value == 1
    assert f"link link_0 (source link {part}) intersects link base (source link carcass)" in (
        flagged.message
    )
    assert "collision.range" in report.warnings


def test_collision_range_flags_defects_planted_in_a_generated_cabinet(sample_library, tmp_path):
    """The sample library's URDF cabinet passes; with its left door's hinge axis reversed (the
    door swings into the carcass) and its bottom drawer free to go 0.3 m into a 0.4 m deep
    carcass (through the back wall), exactly those two joints are flagged."""
    folder = tmp_path / "src" / "cabinet_0010"
    shutil.copytree(sample_library / "sample_urdf" / "cabinet_0010", folder)
    source = urdf_source(tmp_path / "src")
    [candidate] = discover(source)
    [clean] = verify_object(normalize_candidate(candidate, tmp_path / "good"), source).check(
        "collision.range"
    )
    assert clean.passed and "5 joint(s)" in clean.message
    urdf = folder / "cabinet_0010.urdf"
    text = urdf.read_text(encoding="utf-8")
    door = text.index('<joint name="door_0_hinge"')
    drawer = text.index('<joint name="drawer_2_slide"')
    door_axis, drawer_limit = (
        text.index('<axis xyz="0 0 -1"/>', door),
        text.index('<limit lower="0" upper="0.301"', drawer),
    )
    text = text[:door_axis] + text[door_axis:].replace(
        '<axis xyz="0 0 -1"/>', '<axis xyz="0 0 1"/>', 1
    )
    text = text[:drawer_limit] + text[drawer_limit:].replace(
        'lower="0" upper="0.301"', 'lower="-0.3" upper="0.301"', 1
    )
    urdf.write_text(text, encoding="utf-8")
    report = verify_object(normalize_candidate(candidate, tmp_path / "bad"), source)
    flagged_parts = report.check("collision.range")
    assert all(not c.passed and c.severity == "warning" for c in flagged_parts)
    assert sorted(c.message.split("(source link ")[1].split(")")[0] for c in flagged_parts) == [
        "door_0, door_0_handle",
        "drawer_2, drawer_2_handle",
    ]
    assert all("intersects link base (source link body)" in c.message for c in flagged_parts)
    assert "collision.range" in report.review


@pytest.mark.parametrize(("multiplier", "review"), [("0", ["structure.mimic_frozen"]), ("1", [])])
def test_a_mimic_joint_with_multiplier_0_goes_to_review(tmp_path, multiplier, review):
    """A second door that mimics the first with multiplier 0 can never move: a warning that
    sends the object to review, naming the joint."""
    second = (
        f'<link name="door2">{box((0.02, 0.8, 1.0), (0.0, 0.4, 0.0))}</link>'
        '<joint name="hinge2" type="revolute"><origin xyz="0.26 -0.4 0"/>'
        '<parent link="frame"/><child link="door2"/><axis xyz="0 0 -1"/>'
        '<limit lower="0" upper="1.5" effort="1" velocity="1"/>'
        f'<mimic joint="hinge" multiplier="{multiplier}" offset="0"/></joint>'
    )
    result, source = normalized(tmp_path, {"cabinet.urdf": door_urdf(extra=second)})
    report = verify_object(result, source, simulator=False)
    [check] = report.check("structure.mimic_frozen")
    assert check.passed == (not review) and report.review == review
    if review:
        assert check.severity == "warning" and check.element.startswith("joint ")


def test_a_computed_mass_implausible_for_its_category_goes_to_review(tmp_path):
    """A small cabinet of solid shapes (22 kg, below the hollow threshold) fills its box at
    the density of water: far above what storage furniture weighs for its size, so the object
    goes to review with the figures; the normal-sized one (hollow, weighed as walls) passes."""
    solid = door_urdf(
        frame_geometry=box((0.25, 0.25, 0.35)),
        door_geometry=box((0.01, 0.25, 0.35), (0.0, -0.125, 0.0)),
        hinge_x=0.13,
    ).replace('<origin xyz="0.13 0.4 0"/>', '<origin xyz="0.13 0.125 0"/>')
    result, source = normalized(tmp_path / "solid", {"cabinet.urdf": solid})
    report = verify_object(result, source, simulator=False)
    [check] = report.check("fidelity.computed_density")
    assert not check.passed and "fidelity.computed_density" in report.review
    assert "Storage Furniture" in check.message and "kg/m^3" in check.message
    result, source = normalized(tmp_path / "hollow", {"cabinet.urdf": door_urdf()})
    [check] = verify_object(result, source, simulator=False).check("fidelity.computed_density")
    assert check.passed and "box_wall_shell" in check.message
