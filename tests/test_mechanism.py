"""`mechanism.penetration`: a drawer or door's collision geometry against its parent's in
MuJoCo, over the joint's range, on cabinets built by the tests."""

from __future__ import annotations

import pytest
from verify_assets import (
    CUBE_OBJ,
    door_urdf,
    hollow_cabinet_urdf,
    one_mesh_carcass,
    shell_obj,
    urdf_source,
    write,
)

from normalize import collision_parts
from normalize.adapters import discover
from normalize.collision_parts import CLEARANCE
from normalize.mechanism import DEPTH_TOLERANCE
from normalize.run import normalize_candidate
from verify import verify_object

pytest.importorskip("mujoco")


def report_of(tmp_path, files: dict):
    root = write(tmp_path / "src", files)
    source = urdf_source(root)
    [candidate] = discover(source)
    return verify_object(normalize_candidate(candidate, tmp_path / "out"), source)


def test_a_drawer_sliding_in_a_shell_of_five_boxes_passes_at_every_point(tmp_path):
    report = report_of(tmp_path, {"cabinet.urdf": hollow_cabinet_urdf("drawer")})
    [check] = report.check("mechanism.penetration")
    assert check.passed and check.severity == "warning"
    assert "1 joint(s)" in check.message
    assert check.value <= DEPTH_TOLERANCE and check.threshold == DEPTH_TOLERANCE


def test_a_drawer_in_a_one_mesh_shell_clears_the_convex_parts_of_its_hull(tmp_path):
    """The same carcass as one mesh: its convex hull would fill the cavity the drawer sits in
    (27.5 cm from the drawer's top to the hull's bottom face, at rest); it ships as convex
    parts that leave the drawer CLEARANCE of it at most."""
    files = {
        "cabinet.urdf": one_mesh_carcass(hollow_cabinet_urdf("drawer")),
        "shell.obj": shell_obj(),
    }
    report = report_of(tmp_path, files)
    [check] = report.check("mechanism.penetration")
    assert check.passed and check.value <= CLEARANCE + 1e-6
    assert "mechanism.penetration" not in report.review


def test_a_hull_normalization_could_not_split_is_named_as_ours_with_what_to_do(
    tmp_path, monkeypatch
):
    """With no round of cuts allowed, the one-mesh carcass ships as its hull around the drawer:
    the message says which geom is the hull of a visual mesh, and the hint that the parts
    could not clear it."""
    monkeypatch.setattr(collision_parts, "MAX_ROUNDS", 0)
    monkeypatch.setattr(collision_parts, "MAX_FEW_ROUNDS", 0)
    files = {
        "cabinet.urdf": one_mesh_carcass(hollow_cabinet_urdf("drawer")),
        "shell.obj": shell_obj(),
    }
    [check] = report_of(tmp_path, files).check("mechanism.penetration")
    assert not check.passed and check.value > 0.2
    assert (
        "base_collision_0: the convex hull of a visual mesh, shell_collision.obj" in check.message
    )
    assert "the source's box" in check.message  # the drawer
    assert check.hint.startswith("the convex parts normalization cuts could not clear")


def test_a_door_swinging_into_its_shell_fails_where_it_swings_in(tmp_path):
    """Closed shapes (boxes): the source's own overlap is measured inside them, a few mm, not
    how far the door swings into its carcass."""
    good = report_of(tmp_path / "good", {"cabinet.urdf": hollow_cabinet_urdf("door")})
    assert good.check("mechanism.penetration")[0].passed
    report = report_of(tmp_path / "bad", {"cabinet.urdf": hollow_cabinet_urdf("door", faulty=True)})
    [check] = report.check("mechanism.penetration")
    assert not check.passed and check.element == "joint joint_0"
    assert check.value > 0.1  # the 58 cm door swung 1.5 rad into a 40 cm deep carcass
    assert "of its range" in check.message and "on past touching" not in check.message
    assert "fix them or the joint's limits in the source" in check.hint


PLATE_OBJ = """v 0.25 -0.4 -0.5
v 0.25 0.4 -0.5
v 0.25 0.4 0.5
v 0.25 -0.4 0.5
f 1 2 3
f 1 3 4
"""


def test_a_door_swung_through_an_open_mesh_is_allowed_how_far_the_source_moves_it(tmp_path):
    """A door hinged 1 cm in front of a wall that is one open rectangle, swinging into it: the
    wall has no inside to measure a depth in, so the allowance is how far the door moves on
    past first touching it, and the message says the collision sweep judges that."""
    wall = '<geometry><mesh filename="plate.obj"/></geometry>'
    frame = f"<visual>{wall}</visual><collision>{wall}</collision>"
    into = door_urdf(hinge_x=0.27, lower=-1.5, upper=0.0, frame_geometry=frame)
    report = report_of(tmp_path / "into", {"cabinet.urdf": into, "plate.obj": PLATE_OBJ})
    [check] = report.check("mechanism.penetration")
    assert check.passed, check.message
    assert "on past touching its parent there (collision.range judges that)" in check.message
    # MuJoCo measures the door deep in the wall's slab; the door moved farther still past it
    assert DEPTH_TOLERANCE < check.value < check.threshold
    assert not report.check("collision.range")[0].passed

    # the same door swinging away from the wall never touches it: nothing to allow
    away = door_urdf(hinge_x=0.27, lower=0.0, upper=1.5, frame_geometry=frame)
    report = report_of(tmp_path / "away", {"cabinet.urdf": away, "plate.obj": PLATE_OBJ})
    [check] = report.check("mechanism.penetration")
    assert check.passed and "allowed" not in check.message


def test_a_drawer_built_into_its_side_walls_is_allowed_that_overlap_and_records_it(tmp_path):
    """A drawer 57 cm wide between walls 56 cm apart: the source itself overlaps 5 mm on each
    side, so 5 mm + 1 mm is allowed, and said; 2 mm more than the source is not."""
    wide = hollow_cabinet_urdf("drawer").replace('size="0.3 0.5 0.15"', 'size="0.3 0.57 0.15"')
    report = report_of(tmp_path / "built", {"cabinet.urdf": wide})
    [check] = report.check("mechanism.penetration")
    assert check.passed
    assert check.value == pytest.approx(0.005, abs=1e-4)
    assert check.threshold == pytest.approx(0.006, abs=1e-4)
    assert "already overlap by 5.0 mm there" in check.message

    # the collision box 4 mm wider still than the visual one: 7 mm deep, 6 mm allowed
    wider = wide.replace(
        '<collision><origin xyz="0.0 0.0 0.0"/><geometry><box size="0.3 0.57 0.15"/>',
        '<collision><origin xyz="0.0 0.0 0.0"/><geometry><box size="0.3 0.574 0.15"/>',
    )
    assert wider != wide
    report = report_of(tmp_path / "wider", {"cabinet.urdf": wider})
    [check] = report.check("mechanism.penetration")
    assert not check.passed
    assert check.value == pytest.approx(0.007, abs=1e-4)
    assert check.threshold == pytest.approx(0.006, abs=1e-4)


LID_OBJ = """v -0.3 -0.45 0
v 0.3 -0.45 0
v 0.3 0.45 0
v -0.3 0.45 0
f 1 2 3
f 1 3 4
"""


def lid_on_open_box_urdf(collision_z: float) -> str:
    """A lid whose visual is one plate overhanging an open box (no bottom face), sunk 5 mm
    below the box's top so that it crosses the box's sides; both links collide as boxes the
    source made for collision, the lid's centred at `collision_z` (0.505: 5 mm into the box's)."""
    frame_box = '<geometry><box size="0.5 0.8 1.0"/></geometry>'
    lid_box = f'<origin xyz="0 0 {collision_z}"/><geometry><box size="0.6 0.9 0.02"/></geometry>'
    return f"""<?xml version="1.0"?>
<robot name="chest">
  <link name="body">
    <visual><geometry><mesh filename="open_box.obj" scale="0.5 0.8 1.0"/></geometry></visual>
    <collision>{frame_box}</collision>
  </link>
  <link name="lid">
    <visual><origin xyz="0 0 0.495"/><geometry><mesh filename="lid.obj"/></geometry></visual>
    <collision>{lid_box}</collision>
  </link>
  <joint name="lift" type="prismatic">
    <parent link="body"/>
    <child link="lid"/>
    <axis xyz="0 0 1"/>
    <limit lower="0" upper="0.2" effort="1" velocity="1"/>
  </joint>
</robot>
"""


def test_collision_shapes_the_source_built_into_each_other_are_allowed_their_visual_overlap(
    tmp_path,
):
    """Open meshes have no inside to measure in: where the source's own collision shapes touch
    at rest, the allowance is how far its visual shapes cross there (they part after the lid
    moves 5 mm along the contact's normal), not the collision shapes' depth."""
    open_box = "\n".join(CUBE_OBJ.splitlines()[:8] + CUBE_OBJ.splitlines()[10:]) + "\n"
    files = {"open_box.obj": open_box, "lid.obj": LID_OBJ}
    report = report_of(tmp_path / "built", {"chest.urdf": lid_on_open_box_urdf(0.505), **files})
    [check] = report.check("mechanism.penetration")
    assert check.passed, check.message
    assert check.value == pytest.approx(0.005, abs=2e-4)
    assert "the source builds the two links 5.0 mm into each other at rest" in check.message

    # the lid's collision box 10 mm lower: 15 mm deep, the visual shapes still cross by 6 mm
    # (normalization gives the flat plate 1 mm of thickness, below it)
    report = report_of(tmp_path / "deeper", {"chest.urdf": lid_on_open_box_urdf(0.495), **files})
    [check] = report.check("mechanism.penetration")
    assert not check.passed and check.element == "joint joint_0"
    assert check.value == pytest.approx(0.015, abs=2e-4)
    assert check.threshold == pytest.approx(DEPTH_TOLERANCE + 0.006, abs=2e-4)
    assert "6.0 mm into each other at rest" in check.message


def test_an_object_allowance_waives_the_check_with_its_reason(tmp_path):
    allowances = (
        "allowances:\n  - check: mechanism.penetration\n"
        "    reason: collision hulls until the decomposition lands\n"
    )
    files = {
        "cabinet.urdf": hollow_cabinet_urdf("door", faulty=True),
        "arena-allowances.yaml": allowances,
    }
    report = report_of(tmp_path, files)
    [check] = report.check("mechanism.penetration")
    assert not check.passed and check.waived
    assert "decomposition lands" in check.waiver_reason
    assert "mechanism.penetration" not in report.review
