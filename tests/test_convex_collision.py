"""Convex collision geometry: each collision mesh ships as its convex hull (what MuJoCo, PyBullet
and SAPIEN collide it as), split into convex parts where a moving part needs the room, the
source's collision meshes stay in object_source_collision.urdf, links.parquet says how far each
link's collision reaches beyond its visual shapes, and the collision sweep still judges the
source's meshes."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh
from verify_assets import box, hollow_cabinet_urdf, one_mesh_carcass, shell_obj, urdf_source, write

from export.manifests import link_rows
from normalize import collision_parts
from normalize.adapters import discover
from normalize.collision_parts import (
    FEW_PAIRS,
    MAX_FEW_ROUNDS,
    MAX_ROUNDS,
    PRIMITIVE_CORNERS,
    Shape,
    _Contact,
    _split_round,
    clear_mechanisms,
)
from normalize.mechanism import DEPTH_TOLERANCE, judged_joints
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


def one_mesh_cabinet(tmp_path, name: str = "src", part: str = "door"):
    """The carcass as one mesh with a door in front of it (its hull stays whole: the door never
    enters it) or a drawer inside it (its hull is split so that the drawer fits)."""
    files = {
        "cabinet.urdf": one_mesh_carcass(hollow_cabinet_urdf(part)),
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


def open_box(extents, centre, open_towards: int) -> trimesh.Trimesh:
    """A box mesh without the face towards axis `open_towards` (+x 0, +z 2): a carcass without
    its front, a drawer without its top."""
    box = trimesh.creation.box(extents=extents)
    box.apply_translation(centre)
    kept = (
        box.triangles_center[:, open_towards]
        < centre[open_towards] + extents[open_towards] / 2 - 1e-3
    )
    return trimesh.Trimesh(box.vertices, box.faces[kept], process=False)


@pytest.mark.parametrize("sides", ["one side", "both sides"])
def test_an_open_box_is_not_convex_already(tmp_path, sides):
    """A carcass modelled as a box without its front: every vertex a corner of its hull and every
    face on it, yet its hull fills the opening. It ships as convex parts the drawer clears, not as
    it is (MuJoCo would collide its hull: 275 mm deep at rest), with its faces given once or on
    both sides."""
    pytest.importorskip("mujoco")
    shell = open_box((0.4, 0.6, 0.8), (0.0, 0.0, 0.4), 0)
    if sides == "both sides":
        shell.faces = np.concatenate([shell.faces, shell.faces[:, ::-1]])
    urdf = one_mesh_carcass(hollow_cabinet_urdf("drawer"))
    files = {"cabinet.urdf": urdf, "shell.obj": shell.export(file_type="obj")}
    result, source = normalized(tmp_path, files)
    parts = [g.filename for g in read_object(result.urdf_path).link_map["base"].collisions]
    assert len(parts) > 1 and all(collision_parts.COLLISION_PART.search(p) for p in parts)
    assert verify_object(result, source).check("mechanism.penetration")[0].passed


def block_behind(part: str, tmp_path):
    """The carcass with its shell as the visual and, as the source's collision, one convex block
    (a decomposition that filled the cavity) and a foot the source gives as a box; the drawer an
    open box mesh."""
    block = trimesh.creation.box(extents=(0.4, 0.6, 0.8))
    block.apply_translation((0.0, 0.0, 0.4))
    urdf = one_mesh_carcass(hollow_cabinet_urdf(part)).replace(
        '<collision><geometry><mesh filename="shell.obj"/>',
        '<collision><geometry><mesh filename="block.obj"/>',
    )
    foot = '<collision><origin xyz="0 0 -0.05"/><geometry><box size="0.1 0.1 0.1"/></geometry>'
    urdf = urdf.replace('<link name="carcass">', f'<link name="carcass">{foot}</collision>')
    drawer = '<geometry><mesh filename="drawer.obj"/></geometry>'
    urdf = urdf.replace(
        '<link name="drawer">' + box((0.3, 0.5, 0.15)),
        f'<link name="drawer"><visual>{drawer}</visual><collision>{drawer}</collision>',
    )
    files = {
        "cabinet.urdf": urdf,
        "shell.obj": shell_obj(),
        "block.obj": block.export(file_type="obj"),
        "drawer.obj": open_box((0.3, 0.5, 0.15), (0.0, 0.0, 0.0), 2).export(file_type="obj"),
    }
    return normalized(tmp_path, files)


def test_a_source_collision_block_that_holds_the_drawer_gives_way_to_the_visual_meshes(tmp_path):
    """No cut of the drawer's parts clears the source's block: the carcass then collides as
    the convex parts of its visual shell and its foot, still a box; the block stays in
    object_source_collision.urdf and a change says so."""
    pytest.importorskip("mujoco")
    result, source = block_behind("drawer", tmp_path)
    shipped = read_object(result.urdf_path).link_map["base"].collisions
    parts = [g.filename for g in shipped if g.kind == "mesh"]
    assert len(parts) > 1 and all(p.startswith("meshes/shell_part") for p in parts)
    assert [g.kind for g in shipped if g.kind != "mesh"] == ["box"]
    kept = read_object(result.urdf_path.parent / SOURCE_COLLISION_NAME).link_map["base"]
    assert [g.filename for g in kept.collisions if g.kind == "mesh"] == ["meshes/block.obj"]
    [change] = [c for c in result.changes if c.code == "collision.from_visuals"]
    assert "block.obj" in change.message
    assert verify_object(result, source).check("mechanism.penetration")[0].passed


def test_a_source_collision_mesh_that_holds_nothing_stays(tmp_path):
    """The same block behind a door that never enters the carcass ships as it is."""
    result, _ = block_behind("door", tmp_path)
    shipped = read_object(result.urdf_path).link_map["base"].collisions
    assert [g.filename for g in shipped if g.kind == "mesh"] == ["meshes/block.obj"]
    assert "collision.from_visuals" not in {c.code for c in result.changes}


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
    urdf = one_mesh_carcass(hollow_cabinet_urdf("door")).replace(
        "</robot>",
        f'<link name="tube"><visual>{shape}</visual><collision>{shape}</collision></link>'
        '<joint name="beside" type="prismatic"><origin xyz="3 0 0"/><parent link="carcass"/>'
        '<child link="tube"/><axis xyz="1 0 0"/>'
        '<limit lower="0" upper="0.1" effort="1" velocity="1"/></joint></robot>',
    )
    result, _ = normalized(
        tmp_path, {"cabinet.urdf": urdf, "shell.obj": shell_obj(), "tube.obj": tube}
    )
    folder = result.urdf_path.parent
    rows = {r["link_name"]: r for r in link_rows(result.object, "lib__cab", folder)}
    carcass = rows["base"]  # canonical link names
    tube = max(rows.values(), key=lambda r: r["collision_volume_ratio"] or 0.0)  # the tube
    assert carcass["collision_shapes"] == 1
    diagonal = float(np.linalg.norm([0.4, 0.6, 0.8]))
    assert carcass["collision_hausdorff"] == pytest.approx(0.28 / diagonal, abs=0.02)
    assert carcass["collision_volume_ratio"] is None  # walls touching: no closed visual mesh
    assert tube["collision_shapes"] == 1
    assert tube["collision_volume_ratio"] == pytest.approx(0.2**2 / (0.2**2 - 0.1**2), rel=0.02)
    tube_diagonal = float(np.linalg.norm([0.4, 0.4, 0.15]))  # sampled: within 2 cm
    assert tube["collision_hausdorff"] == pytest.approx(
        0.1 / tube_diagonal, abs=0.02 / tube_diagonal
    )


def test_the_collision_sweep_judges_the_source_collision_meshes(tmp_path):
    """The door swings out past the carcass's hull; the sweep reads object_source_collision.urdf
    (the source's meshes), and the hull it would read otherwise is the shipped collision."""
    pytest.importorskip("mujoco")
    result, source = one_mesh_cabinet(tmp_path)
    ctx = Context(result=result, source=source, reread=read_object(result.urdf_path))
    obj, meshes = collision.source_collision(ctx)
    assert [g.filename for g in obj.link_map["base"].collisions] == ["meshes/shell.obj"]
    assert collision_file(result.urdf_path, "base").endswith("_collision.obj")
    report = verify_object(result, source)
    assert report.check("collision.range")[0].passed
    assert report.check("mechanism.penetration")[0].passed


def test_a_one_mesh_carcass_ships_as_convex_parts_that_clear_its_drawer(tmp_path):
    """Its hull would fill the cavity the drawer sits in (27.5 cm deep at rest): the carcass
    ships as convex parts around the drawer instead, recorded, and normalizing the written
    object again keeps them byte for byte."""
    pytest.importorskip("mujoco")
    result, source = one_mesh_cabinet(tmp_path, part="drawer")
    folder = result.urdf_path.parent
    parts = [g.filename for g in read_object(result.urdf_path).link_map["base"].collisions]
    assert len(parts) > 5 and all("_part" in name for name in parts)
    shell_hull = trimesh.load(folder / "meshes" / "shell.obj", force="mesh").convex_hull
    volume = 0.0
    for name in parts:
        part = trimesh.load(folder / name, force="mesh")
        assert part.is_watertight and part.is_convex
        volume += part.volume
    assert volume < 0.5 * shell_hull.volume  # the walls, not the box around them
    assert not (folder / "meshes" / "shell_collision.obj").exists()  # no unused whole hull
    assert collision_file(folder / SOURCE_COLLISION_NAME, "base") == "meshes/shell.obj"
    [change] = [c for c in result.changes if c.code == "collision.convex_parts"]
    assert f"into {len(parts)} convex parts" in change.message and "left" not in change.message
    [check] = verify_object(result, source).check("mechanism.penetration")
    assert check.passed and check.value <= DEPTH_TOLERANCE

    files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*.obj")}
    files["cabinet.urdf"] = result.urdf_path.read_text()
    again, _ = normalized(tmp_path, files, "again")
    shipped = [g.filename for g in read_object(again.urdf_path).link_map["base"].collisions]
    assert shipped == parts
    for name in parts:
        assert (again.urdf_path.parent / name).read_bytes() == (folder / name).read_bytes()


def test_a_collision_mesh_the_source_made_for_collision_keeps_its_hull(tmp_path):
    """The same carcass whose collision mesh is its own file (as a robot's are): the source
    designed it for collision, so it ships as its hull, and the check says the drawer is in it."""
    pytest.importorskip("mujoco")
    urdf = one_mesh_carcass(hollow_cabinet_urdf("drawer")).replace(
        '<collision><geometry><mesh filename="shell.obj"/>',
        '<collision><geometry><mesh filename="shell_for_collision.obj"/>',
    )
    files = {"cabinet.urdf": urdf, "shell.obj": shell_obj(), "shell_for_collision.obj": shell_obj()}
    result, source = normalized(tmp_path, files)
    assert collision_file(result.urdf_path, "base").endswith("_collision.obj")
    assert "collision.convex_parts" not in {c.code for c in result.changes}
    [check] = verify_object(result, source).check("mechanism.penetration")
    assert not check.passed and check.value == pytest.approx(0.275, abs=0.01)
    assert "the convex hull of the source's collision mesh" in check.message
    assert check.hint.startswith("the source's own collision shapes overlap at rest")


def plates_under_drawers(one_mesh: bool):
    """Two plates 4 m apart, each touched by its own box drawer: (shapes, pieces, contacts) for
    `_split_round`, the plates as parts of one mesh of ours or as two meshes of ours."""
    plates = []
    for x in (-2.0, 2.0):
        plate = trimesh.creation.box(extents=(1.0, 1.0, 0.1))
        plate.apply_translation((x, 0.0, 0.0))
        plates.append((np.asarray(plate.vertices), np.asarray(plate.faces)))
    if one_mesh:
        points = np.concatenate([v for v, _ in plates])
        shapes = {"carcass": Shape("base", points, parts=plates)}
        pieces = [("carcass", 0), ("carcass", 1)]
    else:
        shapes = {f"plate{i}": Shape("base", v, parts=[(v, f)]) for i, (v, f) in enumerate(plates)}
        pieces = [("plate0", 0), ("plate1", 0)]
    for i, x in enumerate((-2.0, 2.0)):
        origin = np.eye(4)
        origin[0, 3] = x
        corners = PRIMITIVE_CORNERS["box"]((0.3, 0.3, 0.3)) + origin[:3, 3]
        shapes[f"drawer{i}"] = Shape(f"drawer{i}", corners, primitive=("box", (0.3,) * 3, origin))
    contacts = [
        _Contact("joint_0", 0, 2, np.eye(4), 0.05),
        _Contact("joint_1", 1, 3, np.eye(4), 0.04),
    ]
    return shapes, [*pieces, ("drawer0", 0), ("drawer1", 0)], contacts


def test_a_round_of_cuts_keeps_each_mesh_within_max_parts(monkeypatch):
    """Two parts of one mesh, each touched by its own drawer in the same round: each box cut
    makes five parts of a plate, and the second would take the mesh past MAX_PARTS, so that
    part is halved instead."""
    monkeypatch.setattr(collision_parts, "MAX_PARTS", 9)
    shapes, pieces, contacts = plates_under_drawers(one_mesh=True)
    assert _split_round(shapes, contacts, pieces, set())
    assert len(shapes["carcass"].parts) == 5 + 2  # the first plate cut, the second halved


def test_a_round_of_cuts_keeps_the_object_within_max_object_parts(monkeypatch):
    """The same two plates as two meshes of ours (each within MAX_PARTS): the first cut makes
    five parts, and the second would take the object past MAX_OBJECT_PARTS, so it is not made."""
    monkeypatch.setattr(collision_parts, "MAX_OBJECT_PARTS", 8)
    shapes, pieces, contacts = plates_under_drawers(one_mesh=False)
    assert _split_round(shapes, contacts, pieces, set())
    assert [len(shapes[f"plate{i}"].parts) for i in (0, 1)] == [5, 1]


def test_a_small_piece_inside_a_larger_ones_box_is_not_halved(monkeypatch):
    """A key of ours inside the box of a lid's piece of ours: no cut of the key separates
    anything. With room for parts the lid is cut; with its mesh at MAX_PARTS it is not, and the
    key is not halved in its place: its halves would stay inside the lid's box, as deep as
    before (a laptop's keys were halved round after round under its lid)."""
    monkeypatch.setattr(collision_parts, "MAX_PARTS", 3)
    lid = trimesh.creation.box(extents=(0.3, 0.2, 0.03))
    key = trimesh.creation.box(extents=(0.015, 0.015, 0.008))
    key_points = np.asarray(key.vertices) + (0.0, 0.0, -0.002)
    far = np.asarray(lid.vertices) + (1.0, 0.0, 0.0)
    for others, cut in (([], True), ([far, far + (1.0, 0.0, 0.0)], False)):
        parts = [(v, np.asarray(lid.faces)) for v in (np.asarray(lid.vertices), *others)]
        shapes = {
            "lid": Shape("lid", np.concatenate([v for v, _ in parts]), parts=parts),
            "key": Shape("base", key_points, parts=[(key_points, np.asarray(key.faces))]),
        }
        pieces = [("key", 0), ("lid", 0)]
        contacts = [_Contact("joint_0", 0, 1, np.eye(4), 0.005)]
        assert _split_round(shapes, contacts, pieces, set()) == cut
        assert len(shapes["key"].parts) == 1
        assert (len(shapes["lid"].parts) > len(parts)) == cut


def test_a_part_inside_a_shape_the_source_gives_is_not_cut_for_nothing():
    """A drawer front of ours wholly inside a panel the source gives as one convex mesh (a
    PartNet carcass with a solid panel where the drawer sits): no cut of the front clears it,
    so it is left whole (the contact stays, for the check to report) instead of being halved
    round after round. Half outside the panel, it is cut as before."""
    panel = trimesh.creation.box(extents=(0.05, 0.6, 0.6))
    front = trimesh.creation.box(extents=(0.04, 0.3, 0.3))
    for offset, cut in ((0.0, False), (0.3, True)):
        moved = np.asarray(front.vertices) + (0.0, offset, 0.0)
        shapes = {
            "panel": Shape("base", np.asarray(panel.vertices)),
            "front": Shape("drawer", moved, parts=[(moved, np.asarray(front.faces))]),
        }
        pieces = [("panel", 0), ("front", 0)]
        contacts = [_Contact("joint_0", 0, 1, np.eye(4), 0.04)]
        assert _split_round(shapes, contacts, pieces, set()) == cut, offset
        assert (len(shapes["front"].parts) > 1) == cut


@pytest.mark.parametrize(
    ("pairs", "rounds"),
    [(1, MAX_FEW_ROUNDS), (FEW_PAIRS, MAX_FEW_ROUNDS), (FEW_PAIRS + 1, MAX_ROUNDS)],
)
def test_rounds_go_on_while_the_contacts_left_are_few(tmp_path, monkeypatch, pairs, rounds):
    """A lid and the rim around it, cut in turn, lose a millimetre or so each round (the corpus's
    kettle needs 7): while the contacts left are between at most FEW_PAIRS pairs of pieces, the
    rounds go on to MAX_FEW_ROUNDS; between more, they stop after MAX_ROUNDS, where each round
    costs more and clears less."""
    pytest.importorskip("mujoco")
    result, _ = one_mesh_cabinet(tmp_path, part="drawer")
    cube = trimesh.creation.box()
    part = (np.asarray(cube.vertices), np.asarray(cube.faces))
    shapes = {"carcass": Shape("base", part[0], parts=[part] * (2 * FEW_PAIRS + 2))}
    [joint] = judged_joints(result.object)
    contacts = [_Contact(joint.name, k, k + FEW_PAIRS + 1, np.eye(4), 0.002) for k in range(pairs)]
    splits = []
    monkeypatch.setattr(collision_parts, "_model", lambda *args: None)
    monkeypatch.setattr(collision_parts, "_contacts", lambda *args: contacts)
    monkeypatch.setattr(collision_parts, "_split_round", lambda *args: splits.append(1) or True)
    cleared = clear_mechanisms(result.object, shapes)
    assert cleared.rounds == len(splits) == rounds
    assert cleared.contacts_left == pairs


def test_a_cut_part_holding_pieces_apart_is_split_into_them():
    """A tube of ours around a button (a cylinder the source gives): the box around the button
    holds four arcs of the tube, at its corners. As one part their hull would fill the tube's
    bore and hold the button; each arc as its own part stays outside it."""
    tube = trimesh.creation.annulus(r_min=0.5, r_max=0.55, height=0.2, sections=64)
    part = (np.asarray(tube.vertices), np.asarray(tube.faces))
    radius, height = 0.45, 1.0
    button = PRIMITIVE_CORNERS["cylinder"]((radius, height))
    shapes = {
        "tube": Shape("base", part[0], parts=[part]),
        "button": Shape("button", button, primitive=("cylinder", (radius, height), np.eye(4))),
    }
    contacts = [_Contact("joint_0", 0, 1, np.eye(4), 0.05)]
    assert _split_round(shapes, contacts, [("tube", 0), ("button", 0)], set())
    from scipy.spatial import ConvexHull

    for vertices, faces in shapes["tube"].parts:
        outline = ConvexHull(vertices[np.unique(faces)][:, :2])
        # how far the part's hull stays from the button's axis (its outline's nearest edge)
        assert outline.equations[:, 2].max() >= radius - collision_parts.CLEARANCE - 1e-9


@pytest.mark.parametrize(
    ("pieces", "flat", "kept_whole"),
    [
        (2, False, False),
        (collision_parts.MAX_APART, False, False),
        (2, True, True),
        (collision_parts.MAX_APART + 1, False, True),
        (1, False, True),
    ],
)
def test_pieces_apart_are_split_unless_flat_or_too_many(pieces, flat, kept_whole):
    """Flat pieces stay together: each would be thickened towards the shape's centre, into the
    room the cut made; so do more than MAX_APART pieces (a mesh of many loose triangles)."""
    extents = (0.1, 0.1, 0.0) if flat else (0.1, 0.1, 0.1)
    meshes = [trimesh.creation.box(extents=extents) for _ in range(pieces)]
    for k, mesh in enumerate(meshes):
        mesh.apply_translation((0.5 * k, 0.0, 0.0))
    joined = trimesh.util.concatenate(meshes)
    found = collision_parts._apart(np.asarray(joined.vertices), np.asarray(joined.faces))
    assert len(found) == (1 if kept_whole else pieces)
    assert sum(len(f) for _, f in found) == len(joined.faces)


def test_a_flat_pieces_box_cuts_around_the_thickness_it_collides_with():
    """A flat strip of ours (a rail) inside a piece of ours: the strip's box has no inside once
    shrunk by CLEARANCE, and the cut was refused, leaving the larger piece's hull around the
    strip round after round. The box is grown by PART_THICKNESS along its flat side instead:
    the parts around it stay clear of the strip as it collides, thickened."""
    cube = trimesh.creation.box(extents=(2.0, 2.0, 2.0))
    low, high = np.array([-0.5, -0.5, 0.0]), np.array([0.5, 0.5, 0.0])
    parts = collision_parts._cut_by_box(
        np.asarray(cube.vertices), np.asarray(cube.faces), np.eye(4), low, high
    )
    assert len(parts) == 6  # beyond the strip along x and y, above and below it
    for vertices, faces in parts:
        points = vertices[np.unique(faces)]
        over = np.all(np.abs(points[:, :2]) < 0.5 - collision_parts.CLEARANCE - 1e-9, axis=1)
        assert np.all(np.abs(points[over, 2]) >= collision_parts.PART_THICKNESS - 1e-12)
