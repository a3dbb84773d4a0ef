"""Convex collision geometry: each collision mesh ships as its convex hull (what MuJoCo, PyBullet
and SAPIEN collide it as), the source's collision meshes stay in object_source_collision.urdf,
links.parquet says how far each link's collision reaches beyond its visual shapes, and the
collision sweep still judges the source's meshes."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh
from verify_assets import hollow_cabinet_urdf, one_mesh_carcass, shell_obj, urdf_source, write

from export.manifests import link_rows
from normalize.adapters import discover
from normalize.run import normalize_candidate
from normalize.urdf import read_object
from normalize.urdf_writer import SOURCE_COLLISION_NAME
from verify import verify_object
from verify.checks import Context, collision


def normalized(tmp_path, files: dict, name: str = "src"):
    root = write(tmp_path / name, files)
    source = urdf_source(root)
    [candidate] = discover(source)
    return normalize_candidate(candidate, tmp_path / f"{name}_out"), source


def collision_file(urdf, link: str) -> str:
    [shape] = read_object(urdf).link_map[link].collisions
    return shape.filename


def one_mesh_cabinet(tmp_path, name: str = "src"):
    files = {
        "cabinet.urdf": one_mesh_carcass(hollow_cabinet_urdf("drawer")),
        "shell.obj": shell_obj(),
    }
    return normalized(tmp_path, files, name)


def test_a_concave_collision_mesh_ships_as_its_hull_and_the_source_mesh_stays_beside_it(tmp_path):
    result, _ = one_mesh_cabinet(tmp_path)
    folder = result.urdf_path.parent
    hull_name = collision_file(result.urdf_path, "base")
    assert hull_name.endswith("_collision.obj")
    hull = trimesh.load(folder / hull_name, force="mesh")
    assert hull.is_watertight and hull.is_convex
    shell = trimesh.load(folder / "meshes" / "shell.obj", force="mesh")
    assert hull.volume == pytest.approx(shell.convex_hull.volume, rel=1e-9)
    # The source's collision mesh (here its visual mesh) in the URDF beside it, all else equal.
    source_urdf = folder / SOURCE_COLLISION_NAME
    assert collision_file(source_urdf, "base") == "meshes/shell.obj"
    shipped, kept = read_object(result.urdf_path), read_object(source_urdf)
    assert [j.name for j in shipped.joints] == [j.name for j in kept.joints]
    assert [g.filename for g in shipped.link_map["base"].visuals] == ["meshes/shell.obj"]
    assert [g.filename for g in kept.link_map["base"].visuals] == ["meshes/shell.obj"]
    [change] = [c for c in result.changes if c.code == "collision.convex_hull"]
    assert "shell.obj" in change.message and SOURCE_COLLISION_NAME in change.message


def test_convex_meshes_and_primitives_ship_as_they_are(tmp_path):
    box = trimesh.creation.box(extents=(0.3, 0.5, 0.15)).export(file_type="obj")
    urdf = hollow_cabinet_urdf("drawer").replace(
        '<link name="drawer">',
        '<link name="drawer"><collision><geometry><mesh filename="box.obj"/></geometry>'
        "</collision>",
    )
    result, _ = normalized(tmp_path, {"cabinet.urdf": urdf, "box.obj": box})
    folder = result.urdf_path.parent
    shipped = read_object(result.urdf_path)
    drawer = [g.filename for g in shipped.link_map["link_0"].collisions if g.kind == "mesh"]
    assert drawer == ["meshes/box.obj"]
    assert {g.kind for g in shipped.link_map["base"].collisions} == {"box"}
    assert not (folder / SOURCE_COLLISION_NAME).exists()
    assert "collision.convex_hull" not in {c.code for c in result.changes}


def test_normalizing_a_written_object_again_keeps_its_hulls(tmp_path):
    result, _ = one_mesh_cabinet(tmp_path)
    folder = result.urdf_path.parent
    files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*.obj")}
    files["cabinet.urdf"] = result.urdf_path.read_text()
    again, _ = normalized(tmp_path, files, "again")
    hull_name = collision_file(result.urdf_path, "base")
    assert collision_file(again.urdf_path, "base") == hull_name
    written = again.urdf_path.parent / hull_name
    assert written.read_bytes() == (folder / hull_name).read_bytes()
    assert not (again.urdf_path.parent / SOURCE_COLLISION_NAME).exists()


def test_links_record_how_far_collision_reaches_beyond_the_visual_shapes(tmp_path):
    """The carcass's hull spans the opening, whose centre lies 0.28 m from the nearest wall;
    a tube's hull fills its bore (its volume ratio is R^2 / (R^2 - r^2))."""
    tube = trimesh.creation.annulus(r_min=0.1, r_max=0.2, height=0.15).export(file_type="obj")
    shape = '<geometry><mesh filename="tube.obj"/></geometry>'
    urdf = one_mesh_carcass(hollow_cabinet_urdf("drawer"))
    start = urdf.index('<link name="drawer">') + len('<link name="drawer">')
    end = urdf.index("</link>", start)
    urdf = f"{urdf[:start]}<visual>{shape}</visual><collision>{shape}</collision>{urdf[end:]}"
    result, _ = normalized(
        tmp_path, {"cabinet.urdf": urdf, "shell.obj": shell_obj(), "tube.obj": tube}
    )
    folder = result.urdf_path.parent
    rows = {r["link_name"]: r for r in link_rows(result.object, "lib__cab", folder)}
    carcass, drawer = rows["base"], rows["link_0"]  # canonical link names
    assert carcass["collision_shapes"] == 1
    diagonal = float(np.linalg.norm([0.4, 0.6, 0.8]))
    assert carcass["collision_hausdorff"] == pytest.approx(0.28 / diagonal, abs=0.02)
    assert carcass["collision_volume_ratio"] is None  # walls touching: no closed visual mesh
    assert drawer["collision_shapes"] == 1
    assert drawer["collision_volume_ratio"] == pytest.approx(0.2**2 / (0.2**2 - 0.1**2), rel=0.02)
    tube_diagonal = float(np.linalg.norm([0.4, 0.4, 0.15]))  # sampled: within 2 cm
    assert drawer["collision_hausdorff"] == pytest.approx(
        0.1 / tube_diagonal, abs=0.02 / tube_diagonal
    )


def test_the_collision_sweep_judges_the_source_collision_meshes(tmp_path):
    """The drawer slides out through the hull's front face: the hull's triangles would cross the
    drawer's, so the sweep reads object_source_collision.urdf, where it leaves the walls."""
    pytest.importorskip("mujoco")
    result, source = one_mesh_cabinet(tmp_path)
    report = verify_object(result, source)
    [swept] = report.check("collision.range")
    assert swept.passed, swept.message
    [penetration] = report.check("mechanism.penetration")
    assert not penetration.passed  # MuJoCo collides the hull, which fills the cavity

    (result.urdf_path.parent / SOURCE_COLLISION_NAME).unlink()
    ctx = Context(result=result, source=source, reread=read_object(result.urdf_path))
    from verify.checks import geometry

    geometry.run(ctx)
    [on_hulls] = [c for c in collision.run(ctx) if c.id == "collision.range"]
    assert not on_hulls.passed and on_hulls.element == "joint joint_0"
