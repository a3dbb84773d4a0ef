"""The USD beside each object (`object.usda` + `object_meshes.usdc`, normalize/usd_writer.py) and
its read-back check (verify/checks/usd.py): the demo's doors, drawers, continuous wheels and
screw caps read back with the URDF's joints, limits, axes, rest poses, masses and inertias; a
file broken on purpose fails the check on the joint or link concerned; usdchecker's rules pass.
Without usd-core the check reports itself skipped."""

from __future__ import annotations

import math
import shutil
from dataclasses import replace

import numpy as np
import pytest
from verify_assets import door_urdf, urdf_source, write

from normalize import usd_writer
from normalize.adapters import discover
from normalize.run import normalize_candidate
from normalize.sources import load_sources
from normalize.urdf import read_object
from normalize.usd_writer import GEOMETRY_NAME, USD_NAME, axis_frame, write_usd
from verify.checks import Context
from verify.checks import usd as usd_checks

needs_usd = pytest.mark.skipif(
    not usd_writer.installed(),
    reason="needs usd-core, the `usd` extra (pip install -e '.[usd]')",
)

CABINET = "sample_partnet__cabinet_0000"  # drawers (prismatic) and doors (revolute)
CART = "sample_urdf__cart_0016__cart_0016"  # continuous wheels
BOTTLE = "sample_partnet__bottle_0005"  # a helical screw cap


@pytest.fixture(scope="module")
def demo(sample_library, tmp_path_factory):
    """object_id -> NormalizeResult of the demo objects above."""
    out = tmp_path_factory.mktemp("usd")
    wanted = {CABINET, CART, BOTTLE}
    return {
        c.object_id: normalize_candidate(c, out)
        for source in load_sources(sample_library / "sources.yaml")
        for c in discover(source)
        if c.object_id in wanted
    }


def checks(result) -> dict[str, list]:
    ctx = Context(result=result, source=None, reread=read_object(result.urdf_path))
    out: dict[str, list] = {}
    for check in usd_checks.run(ctx):
        out.setdefault(check.id, []).append(check)
    return out


def stage_of(result):
    from pxr import Usd

    stage = Usd.Stage.Open(str(result.urdf_path.parent / USD_NAME))
    return stage, stage.GetDefaultPrim().GetPath()


def test_axis_frame_turns_the_nearest_coordinate_axis_onto_the_joint_axis():
    rng = np.random.default_rng(0)
    axes = [np.eye(3)[i] * s for i in range(3) for s in (1, -1)] + list(rng.normal(size=(50, 3)))
    for axis in axes:
        axis = axis / np.linalg.norm(axis)
        token, turn = axis_frame(axis)
        k = "XYZ".index(token)
        assert k == int(np.argmax(np.abs(axis)))
        assert np.allclose(turn @ np.eye(3)[k], axis, atol=1e-15)
        assert np.allclose(turn @ turn.T, np.eye(3), atol=1e-15)
        assert np.isclose(np.linalg.det(turn), 1.0)
    for k in range(3):
        assert np.array_equal(axis_frame(np.eye(3)[k])[1], np.eye(3))


@needs_usd
@pytest.mark.parametrize("object_id", [CABINET, CART, BOTTLE])
def test_demo_objects_read_back_as_their_urdf(demo, object_id):
    found = checks(demo[object_id])
    for check_id in (
        "simulator.load.usd",
        "simulator.usd.links",
        "simulator.usd.joints",
        "simulator.usd.rest_pose",
        "simulator.usd.compliance",
        "simulator.usd.compliance_warning",
    ):
        assert [c.passed for c in found[check_id]] == [True], found[check_id]
    assert found["simulator.usd.rest_pose"][0].value < 1e-6
    assert "simulator.printed" not in found


@needs_usd
def test_joint_types_limits_in_degrees_axes_and_couplings(demo):
    from pxr import UsdPhysics

    for object_id in (CABINET, CART, BOTTLE):
        result = demo[object_id]
        stage, root = stage_of(result)
        urdf = read_object(result.urdf_path)
        frames = urdf.joint_frames()
        for joint in urdf.joints:
            prim = stage.GetPrimAtPath(root.AppendPath(f"joints/{joint.name}"))
            usd_joint = UsdPhysics.Joint(prim)
            local0 = usd_joint.GetLocalPos0Attr().Get()
            assert np.allclose(local0, joint.origin[:3, 3], atol=1e-6)
            if joint.type in ("revolute", "continuous", "helical"):
                revolute = UsdPhysics.RevoluteJoint(prim)
                assert revolute, f"{object_id} {joint.name} is not a RevoluteJoint"
                lower = revolute.GetLowerLimitAttr()
                if joint.type == "revolute":
                    assert math.isclose(lower.Get(), math.degrees(joint.lower), abs_tol=1e-4)
                    upper = revolute.GetUpperLimitAttr().Get()
                    assert math.isclose(upper, math.degrees(joint.upper), abs_tol=1e-4)
                elif not math.isfinite(joint.lower):
                    assert not lower.HasAuthoredValue()  # continuous: no limits
                token = revolute.GetAxisAttr().Get()
            else:
                prismatic = UsdPhysics.PrismaticJoint(prim)
                assert prismatic and joint.type == "prismatic"
                assert math.isclose(prismatic.GetLowerLimitAttr().Get(), joint.lower, abs_tol=1e-7)
                token = prismatic.GetAxisAttr().Get()
            # the USD axis in the world at rest is the URDF's
            rotation = usd_checks.frame_pose(local0, usd_joint.GetLocalRot0Attr().Get())[:3, :3]
            world = frames[joint.name][:3, :3] @ joint.origin[:3, :3].T @ rotation
            axis = world @ np.eye(3)["XYZ".index(token)]
            assert np.allclose(axis, frames[joint.name][:3, :3] @ joint.axis, atol=1e-6)
    types = {j.type for r in demo.values() for j in read_object(r.urdf_path).joints}
    assert {"revolute", "prismatic", "continuous", "helical"} <= types


@needs_usd
def test_a_helical_joint_is_a_revolute_joint_and_a_coupled_prismatic_joint(demo):
    from pxr import UsdPhysics

    result = demo[BOTTLE]
    [helical] = [j for j in read_object(result.urdf_path).joints if j.type == "helical"]
    stage, root = stage_of(result)
    screw = stage.GetPrimAtPath(root.AppendPath(f"joints/{helical.name}__screw"))
    assert UsdPhysics.PrismaticJoint(screw)
    targets = screw.GetRelationship("arena:mimic:joint").GetTargets()
    assert [t.name for t in targets] == [helical.name]
    assert screw.GetAttribute("arena:mimic:multiplier").Get() == helical.pitch
    assert screw.GetAttribute("arena:mimic:offset").Get() == 0.0
    assert stage.GetPrimAtPath(root.AppendPath(f"{helical.child}__screw"))


@needs_usd
def test_masses_and_inertias_are_the_urdfs(demo):
    from pxr import UsdPhysics

    for result in demo.values():
        stage, root = stage_of(result)
        for link in read_object(result.urdf_path).links:
            prim = stage.GetPrimAtPath(root.AppendPath(link.name))
            assert UsdPhysics.RigidBodyAPI(prim)
            mass, com, inertia = usd_checks.mass_properties(prim)
            if link.inertial is None:
                assert mass == pytest.approx(1e-9)
                continue
            assert mass == pytest.approx(link.inertial.mass, rel=1e-7)
            assert np.allclose(com, link.inertial.com, atol=1e-7)
            scale = np.abs(link.inertial.inertia).max()
            assert np.allclose(inertia, link.inertial.inertia, atol=1e-6 * scale)


@needs_usd
def test_meshes_are_stored_once_and_collisions_are_convex_hulls(demo):
    from pxr import Usd, UsdGeom, UsdPhysics

    result = demo[CABINET]
    stage, root = stage_of(result)
    urdf = read_object(result.urdf_path)
    files = {g.filename for link in urdf.links for g in (*link.visuals, *link.collisions)}
    geometry = Usd.Stage.Open(str(result.urdf_path.parent / GEOMETRY_NAME))
    assert len(geometry.GetPseudoRoot().GetChildren()) == len(files)
    prims = Usd.PrimRange(stage.GetPrimAtPath(root))
    collisions = [p for p in prims if p.HasAPI(UsdPhysics.CollisionAPI)]
    assert len(collisions) == sum(len(link.collisions) for link in urdf.links)
    for prim in collisions:
        approximation = UsdPhysics.MeshCollisionAPI(prim).GetApproximationAttr().Get()
        assert approximation == "convexHull"
        assert UsdGeom.Imageable(prim).GetPurposeAttr().Get() == UsdGeom.Tokens.guide
        assert len(UsdGeom.Mesh(prim).GetPointsAttr().Get()) >= 4


@needs_usd
def test_writing_twice_gives_the_same_bytes(demo, tmp_path):
    result = demo[CABINET]
    folder = result.urdf_path.parent
    before = {n: (folder / n).read_bytes() for n in (USD_NAME, GEOMETRY_NAME)}
    write_usd(result.object, folder)
    assert {n: (folder / n).read_bytes() for n in (USD_NAME, GEOMETRY_NAME)} == before


def _copy_to_break(result, tmp_path):
    """(the result pointing at a copy of its object folder, the copy's USD stage, its root path)."""
    from pxr import Usd

    copy = tmp_path / "copy"
    shutil.copytree(result.urdf_path.parent, copy)
    stage = Usd.Stage.Open(str(copy / USD_NAME))
    return (
        replace(result, urdf_path=copy / result.urdf_path.name),
        stage,
        stage.GetDefaultPrim().GetPath(),
    )


@needs_usd
def test_a_flipped_axis_fails_the_check_on_its_joint(demo, tmp_path):
    from pxr import UsdPhysics

    broken, stage, root = _copy_to_break(demo[CABINET], tmp_path)
    joint = UsdPhysics.RevoluteJoint(stage.GetPrimAtPath(root.AppendPath("joints/joint_3")))
    token = joint.GetAxisAttr().Get()
    joint.GetAxisAttr().Set({"X": "Y", "Y": "Z", "Z": "X"}[token])
    mass = UsdPhysics.MassAPI(stage.GetPrimAtPath(root.AppendPath("link_1"))).GetMassAttr()
    mass.Set(mass.Get() * 2.0)
    stage.Save()
    found = checks(broken)
    [axis] = found["simulator.usd.joints"]
    assert not axis.passed and axis.element == "joint joint_3" and "axis" in axis.message
    [heavy] = found["simulator.usd.links"]
    assert not heavy.passed and heavy.element == "link link_1" and "mass" in heavy.message
    assert found["simulator.usd.rest_pose"][0].passed  # the rest pose does not depend on it


@needs_usd
def test_a_moved_joint_frame_fails_the_rest_pose_of_the_links_it_carries(demo, tmp_path):
    from pxr import Gf, UsdPhysics

    broken, stage, root = _copy_to_break(demo[CART], tmp_path)
    joint = UsdPhysics.Joint(stage.GetPrimAtPath(root.AppendPath("joints/joint_0")))
    joint.GetLocalPos1Attr().Set(Gf.Vec3f(0.0, 0.0, 0.01))
    stage.Save()
    failed = [c for c in checks(broken)["simulator.usd.rest_pose"] if not c.passed]
    child = read_object(broken.urdf_path).joint_map["joint_0"].child
    assert f"link {child}" in {c.element for c in failed}
    # moved by 1 cm: the largest coordinate of the move is 1 cm / sqrt(3) to 1 cm
    assert all(0.01 / math.sqrt(3) - 1e-6 <= c.value <= 0.01 + 1e-6 for c in failed)


@needs_usd
def test_primitive_shapes_pass_and_checker_runs_on_the_door(tmp_path):
    from pxr import UsdGeom, UsdPhysics

    root = write(tmp_path / "src", {"cabinet.urdf": door_urdf()})
    [candidate] = discover(urdf_source(root))
    result = normalize_candidate(candidate, tmp_path / "out")
    found = checks(result)
    assert all(c.passed for group in found.values() for c in group), found
    stage, path = stage_of(result)
    cube = stage.GetPrimAtPath(path.AppendPath("link_0/collisions/link_0_collision_0"))
    assert UsdGeom.Cube(cube) and cube.HasAPI(UsdPhysics.CollisionAPI)
    assert not cube.HasAPI(UsdPhysics.MeshCollisionAPI)
    assert not (result.urdf_path.parent / GEOMETRY_NAME).exists()  # no meshes, no mesh file


def test_without_usd_core_the_check_is_skipped_and_nothing_is_written(tmp_path, monkeypatch):
    root = write(tmp_path / "src", {"cabinet.urdf": door_urdf()})
    [candidate] = discover(urdf_source(root))
    monkeypatch.setattr(usd_writer, "installed", lambda: False)
    result = normalize_candidate(candidate, tmp_path / "out")
    assert not (result.urdf_path.parent / USD_NAME).exists()
    monkeypatch.setattr(usd_checks, "installed", lambda: False)
    [skipped] = checks(result)["simulator.skipped"]
    assert skipped.severity == "info" and not skipped.passed
    assert skipped.element == "loader usd" and "usd-core" in skipped.message
