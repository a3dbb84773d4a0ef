"""Faithful ingest (issue 14): the defect classes where an accepted object did not match its
source. Each class is tested on generated fixtures and, where the corpus has one, on the real
example from gazebo_models."""

from __future__ import annotations

import io
import logging
import math

import numpy as np
import pytest
from verify_assets import write

from normalize import meshes
from normalize.adapters import discover, get_adapter
from normalize.convention import HOLLOW_ABOVE_KG, rest_bounds
from normalize.errors import AssetError
from normalize.meshes import WALL_THICKNESS
from normalize.run import normalize_candidate
from normalize.sources import SourceConfig

# A unit cube centred on the origin, as COLLADA triangles.
_CORNERS = [(x, y, z) for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)]
_TRIANGLES = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1),
              (2, 3, 7), (2, 7, 6), (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]  # fmt: skip


def collada(
    meter: float | None = None,
    up_axis: str = "Z_UP",
    bumpmap: str | None = None,
    size: tuple[float, float, float] = (1.0, 1.0, 1.0),
) -> str:
    """A box of `size` (in file units) centred on the origin, as COLLADA 1.4.1; `bumpmap`: an
    image its material names as bump map (the FCOLLADA extra that trimesh reads)."""
    unit = f'<unit name="unit" meter="{meter}"/>' if meter is not None else ""
    corners = np.array(_CORNERS) * size
    floats = " ".join(f"{v:g}" for v in corners.ravel())
    indices = " ".join(str(i) for triangle in _TRIANGLES for i in triangle)
    materials, bind, symbol = "", "", ""
    if bumpmap is not None:
        materials = (
            f'<library_images><image id="img"><init_from>{bumpmap}</init_from></image>'
            '</library_images><library_effects><effect id="fx"><profile_COMMON>'
            '<newparam sid="surf"><surface type="2D"><init_from>img</init_from></surface>'
            '</newparam><newparam sid="samp"><sampler2D><source>surf</source></sampler2D>'
            '</newparam><technique sid="common"><phong><diffuse><color>1 1 1 1</color>'
            '</diffuse></phong><extra><technique profile="FCOLLADA"><bump>'
            '<texture texture="samp" texcoord="UV"/></bump></technique></extra></technique>'
            "</profile_COMMON></effect></library_effects><library_materials>"
            '<material id="mat"><instance_effect url="#fx"/></material></library_materials>'
        )
        bind = (
            '<bind_material><technique_common><instance_material symbol="m" target="#mat"/>'
            "</technique_common></bind_material>"
        )
        symbol = ' material="m"'
    return f"""<?xml version="1.0" encoding="utf-8"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset>{unit}<up_axis>{up_axis}</up_axis></asset>
  {materials}
  <library_geometries><geometry id="g"><mesh>
    <source id="p"><float_array id="pa" count="24">{floats}</float_array>
      <technique_common><accessor source="#pa" count="8" stride="3">
        <param name="X" type="float"/><param name="Y" type="float"/><param name="Z" type="float"/>
      </accessor></technique_common></source>
    <vertices id="v"><input semantic="POSITION" source="#p"/></vertices>
    <triangles count="12"{symbol}><input semantic="VERTEX" source="#v" offset="0"/>
      <p>{indices}</p></triangles>
  </mesh></geometry></library_geometries>
  <library_visual_scenes><visual_scene id="s"><node id="n" name="n">
    <instance_geometry url="#g">{bind}</instance_geometry></node></visual_scene>
  </library_visual_scenes>
  <scene><instance_visual_scene url="#s"/></scene>
</COLLADA>
"""


URDF = """<?xml version="1.0"?>
<robot name="r">
  <link name="a"><visual><geometry><box size="0.1 0.1 0.1"/></geometry></visual></link>
  <link name="b"><visual><geometry><mesh filename="{mesh}"/></geometry></visual></link>
  <joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1"/></joint>
</robot>
"""


def normalize_files(tmp_path, files: dict, fmt: str = "urdf", entry: str | None = None):
    root = write(tmp_path / "lib", files)
    source = SourceConfig(name="lib", format=fmt, path=root, license="x", entry=entry)
    (candidate,) = discover(source)
    return normalize_candidate(candidate, tmp_path / "out")


def load_raw(tmp_path, files: dict, fmt: str = "sdf"):
    root = write(tmp_path / "lib", files)
    source = SourceConfig(name="lib", format=fmt, path=root, license="x")
    (candidate,) = discover(source)
    return get_adapter(fmt).load(candidate)


def written_extent(result) -> np.ndarray:
    """Extent (x, y, z) of every mesh the written object holds, read back from its files."""
    folder = result.urdf_path.parent
    points = [
        meshes.load_mesh(folder / g.filename).vertices * g.scale
        for link in result.object.links
        for g in link.visuals
        if g.kind == "mesh"
    ]
    stacked = np.concatenate(points)
    return stacked.max(axis=0) - stacked.min(axis=0)


# --------------------------------------------------------------------------- 1. COLLADA units
@pytest.mark.parametrize(("meter", "size"), [(0.0254, 0.0254), (0.001, 0.001), (None, 1.0)])
def test_collada_unit_is_applied_to_the_mesh(tmp_path, meter, size):
    result = normalize_files(
        tmp_path, {"r.urdf": URDF.format(mesh="cube.dae"), "cube.dae": collada(meter)}
    )
    assert np.allclose(written_extent(result), size)
    link = result.object.link_map["link_0"]
    # the computed inertial is that of the cube in metres, at 1000 kg/m^3 (a 1 m cube is taken
    # for hollow: 15 mm walls of its 6 m^2)
    solid = 1000.0 * size**3
    expected = solid if solid <= HOLLOW_ABOVE_KG else 6 * size**2 * WALL_THICKNESS * 1000.0
    assert math.isclose(link.inertial.mass, expected, rel_tol=1e-9)
    scaled = [c for c in result.changes if c.code == "mesh.unit_scaled"]
    if meter is None:
        assert not scaled
    else:
        assert len(scaled) == 1 and scaled[0].element == "file cube.dae"
        assert repr(meter) in scaled[0].message


def test_collada_up_axis_is_noted_not_applied(tmp_path):
    """Gazebo (gz-common's ColladaLoader) and RViz ignore <up_axis>: so do we, with a record."""
    box = collada(up_axis="Y_UP", size=(0.1, 0.2, 0.3))
    result = normalize_files(tmp_path, {"r.urdf": URDF.format(mesh="box.dae"), "box.dae": box})
    assert np.allclose(written_extent(result), [0.1, 0.2, 0.3])
    noted = [c for c in result.changes if c.code == "mesh.up_axis_ignored"]
    assert len(noted) == 1 and "Y_UP" in noted[0].message


def test_collada_unit_that_is_not_a_number_is_refused(tmp_path):
    files = {"r.urdf": URDF.format(mesh="cube.dae"), "cube.dae": collada("inch")}
    with pytest.raises(AssetError) as info:
        normalize_files(tmp_path, files)
    assert info.value.code == "mesh.corrupt" and "meter" in info.value.message


def test_inch_collada_ball_valve_comes_out_in_metres(corpus_candidates, tmp_path):
    candidate = corpus_candidates["gazebo_models__drc_practice_ball_valve__model"]
    result = normalize_candidate(candidate, tmp_path)
    extent = written_extent(result)
    # the handle is about 9 cm long (3.7 inches), not 3.7 m
    assert 0.05 < extent.max() < 0.15
    assert [c.element for c in result.changes if c.code == "mesh.unit_scaled"] == [
        "file ball_valve.dae"
    ]
    # its declared inertial (80 g) is kept
    assert math.isclose(result.object.link_map["link_0"].inertial.mass, 0.0802)


# --------------------------------------------------------------------------- 9. library noise
def test_trimesh_traceback_becomes_a_recorded_missing_texture(tmp_path):
    files = {
        "r.urdf": URDF.format(mesh="cube.dae"),
        "cube.dae": collada(bumpmap="../textures/gone.png"),
    }
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)  # what a configured application prints
    logging.getLogger().addHandler(handler)
    try:
        result = normalize_files(tmp_path, files)
    finally:
        logging.getLogger().removeHandler(handler)
    assert "Traceback" not in stream.getvalue() and "bumpmap" not in stream.getvalue()
    missing = [c for c in result.changes if c.code == "texture.missing"]
    assert len(missing) == 1 and missing[0].element == "file cube.dae"
    assert "../textures/gone.png" in missing[0].message


def test_a_texture_that_exists_is_not_reported(tmp_path):
    png = (
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00"
        b"\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7"
        b"\x35\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82"
    )
    files = {
        "r.urdf": URDF.format(mesh="cube.dae"),
        "cube.dae": collada(bumpmap="bump.png"),
        "bump.png": png,
    }
    result = normalize_files(tmp_path, files)
    assert not [c for c in result.changes if c.code in ("texture.missing", "mesh.loader_warning")]


# --------------------------------------------------------------------------- 2. SDF frames
def sdf(body: str, version: str = "1.9", name: str = "m") -> str:
    head = f'<?xml version="1.0"?><sdf version="{version}">'
    return f'{head}<model name="{name}">{body}</model></sdf>'


def box_link(name: str, pose: str, size: str = "0.2 0.2 0.2") -> str:
    return (
        f'<link name="{name}"><pose>{pose}</pose><visual name="v"><geometry><box><size>{size}'
        "</size></box></geometry></visual></link>"
    )


PITCH = math.radians(30)


@pytest.mark.parametrize("version", ["1.4", "1.6", "1.7", "1.11"])
def test_sdf_root_link_with_a_rotated_pose_keeps_the_model_frame(tmp_path, version):
    """A tricycle-like model whose root (frame) link is pitched 30 degrees: the wheels and the
    steering axis are given in the model frame and must stay where the model puts them."""
    body = (
        box_link("frame", f"0 0 0.5 0 {PITCH!r} 0", "1 0.2 0.1")
        + box_link("wheel", "1 0 0.3 0 0 0")
        + '<joint name="steer" type="revolute"><parent>frame</parent><child>wheel</child>'
        "<axis><xyz>0 0 1</xyz><limit><lower>-1</lower><upper>1</upper></limit></axis></joint>"
    )
    obj = load_raw(tmp_path, {"m.sdf": sdf(body, version)})
    poses = obj.link_poses()
    assert np.allclose(poses["wheel"][:3, 3], [1, 0, 0.3])
    assert np.allclose(poses["wheel"][:3, :3], np.eye(3))
    # the frame link's box is pitched in the world, as the file says
    (visual,) = obj.link_map[obj.root].visuals
    assert np.allclose(visual.origin[:3, 3], [0, 0, 0.5])
    assert math.isclose(math.asin(-visual.origin[2, 0]), PITCH)
    # the steering axis is vertical (1.4 expresses it in the model frame, later ones in the
    # joint frame, which is the unrotated wheel frame here)
    assert np.allclose(obj.screws().axis[0], [0, 0, 1])


def test_sdf_pitched_root_link_written_upright(tmp_path):
    body = (
        box_link("frame", f"0 0 0.5 0 {PITCH!r} 0", "1 0.2 0.1")
        + box_link("wheel", "1 0 0.3 0 0 0")
        + '<joint name="steer" type="revolute"><parent>frame</parent><child>wheel</child>'
        "<axis><xyz>0 0 1</xyz><limit><lower>-1</lower><upper>1</upper></limit></axis></joint>"
    )
    result = normalize_files(tmp_path, {"m.sdf": sdf(body)}, fmt="sdf")
    frames = result.object.joint_frames()
    axis = frames["joint_0"][:3, :3] @ result.object.joint_map["joint_0"].axis
    assert np.allclose(axis, [0, 0, 1])


def test_sdf_joint_ends_may_name_frames_and_nested_models(tmp_path):
    """SDFormat 1.8+: a joint's parent or child may be a frame (the link it is attached to
    moves) or a model (its canonical link)."""
    body = (
        box_link("base", "0 0 0 0 0 0")
        + '<frame name="mount" attached_to="base"><pose>0 0 1 0 0 0</pose></frame>'
        + '<model name="arm" canonical_link="upper"><pose>0 0 1 0 0 0</pose>'
        + box_link("lower", "0 0 0.5 0 0 0")
        + box_link("upper", "0 0 0 0 0 0")
        + '<joint name="elbow" type="fixed"><parent>upper</parent><child>lower</child></joint>'
        + "</model>"
        + '<joint name="shoulder" type="revolute"><parent>mount</parent><child>arm</child>'
        "<axis><xyz>0 1 0</xyz><limit><lower>-1</lower><upper>1</upper></limit></axis></joint>"
    )
    obj = load_raw(tmp_path, {"m.sdf": sdf(body)})
    shoulder = obj.joint_map["shoulder"]
    assert (shoulder.parent, shoulder.child) == ("base", "arm::upper")
    assert np.allclose(obj.link_poses()["arm::lower"][:3, 3], [0, 0, 1.5])


def test_sdf_frame_attached_to_nothing_is_refused(tmp_path):
    body = (
        box_link("a", "0 0 0 0 0 0")
        + '<model name="empty"><frame name="f"/></model>'
        + '<joint name="j" type="fixed"><parent>a</parent><child>empty</child></joint>'
    )
    root = write(tmp_path / "lib", {"m.sdf": sdf(body)})
    (candidate,) = discover(SourceConfig(name="lib", format="sdf", path=root, license="x"))
    with pytest.raises(AssetError) as info:
        get_adapter("sdf").load(candidate)
    assert info.value.code == "sdf.missing" and "no link" in info.value.message


# --------------------------------------------------------------------------- 3. SDF names
LINK_AND_JOINT_SHARE_A_NAME = (
    box_link("palm", "0 0 0 0 0 0")
    + box_link("tip", "0 0 0.3 0 0 0")
    + '<joint name="tip" type="revolute"><parent>palm</parent><child>tip</child>'
    "<axis><xyz>1 0 0</xyz><limit><lower>0</lower><upper>1</upper></limit></axis></joint>"
)


@pytest.mark.parametrize("version", ["1.4", "1.5", "1.6"])
def test_sdf_before_1_7_lets_a_link_and_a_joint_share_a_name(tmp_path, version):
    obj = load_raw(tmp_path, {"m.sdf": sdf(LINK_AND_JOINT_SHARE_A_NAME, version)})
    assert "tip" in obj.link_map and obj.joint_map["tip"].child == "tip"
    assert np.allclose(obj.link_poses()["tip"][:3, 3], [0, 0, 0.3])


def test_sdf_1_7_requires_unique_sibling_names(tmp_path):
    root = write(tmp_path / "lib", {"m.sdf": sdf(LINK_AND_JOINT_SHARE_A_NAME, "1.7")})
    (candidate,) = discover(SourceConfig(name="lib", format="sdf", path=root, license="x"))
    with pytest.raises(AssetError) as info:
        get_adapter("sdf").load(candidate)
    assert info.value.code == "model.duplicate_name"


def test_sdf_two_joints_of_one_name_are_refused_in_every_version(tmp_path):
    body = (
        box_link("a", "0 0 0 0 0 0")
        + box_link("b", "0 0 1 0 0 0")
        + box_link("c", "0 0 2 0 0 0")
        + '<joint name="j" type="fixed"><parent>a</parent><child>b</child></joint>'
        + '<joint name="j" type="fixed"><parent>b</parent><child>c</child></joint>'
    )
    root = write(tmp_path / "lib", {"m.sdf": sdf(body, "1.5")})
    (candidate,) = discover(SourceConfig(name="lib", format="sdf", path=root, license="x"))
    with pytest.raises(AssetError) as info:
        get_adapter("sdf").load(candidate)
    assert info.value.code == "model.duplicate_name"


def test_simple_gripper_loads(corpus_candidates, tmp_path):
    candidate = corpus_candidates["gazebo_models__simple_gripper__model"]
    result = normalize_candidate(candidate, tmp_path)
    sources = {j.source_name for j in result.object.joints}
    assert {"left_finger_tip", "right_finger_tip", "palm_riser"} <= sources
    links = {name for link in result.object.links for name in link.source_names}
    assert {"left_finger_tip", "right_finger_tip", "riser", "palm"} <= links


# --------------------------------------------------------------------------- 4. dropped shapes
def mjcf(body: str, assets: str = "") -> str:
    return f"""<mujoco model="kettle"><asset>{assets}</asset><worldbody>
  <geom name="floor" type="plane" size="5 5 0.1"/>
  <body name="pot" pos="0 0 1">
    <geom name="belly" type="ellipsoid" size="0.1 0.08 0.06" mass="1"/>
    <body name="lid" pos="0 0 0.06"><joint name="hinge" type="hinge" axis="0 1 0"
        range="0 1.5"/><geom name="lid" type="cylinder" size="0.04 0.005" mass="0.1"/></body>
    {body}
  </body></worldbody></mujoco>"""


def test_mjcf_ellipsoid_is_kept_and_written_as_a_scaled_sphere(tmp_path):
    from verify import verify_object

    result = normalize_files(tmp_path, {"kettle.xml": mjcf("")}, fmt="mjcf")
    base = result.object.link_map["base"]
    (belly,) = [g for g in base.visuals if g.kind == "mesh" and "unit_sphere" in g.filename]
    assert belly.kind == "mesh" and np.allclose(belly.scale, [0.1, 0.08, 0.06])
    assert "geometry.ellipsoid_meshed" in {c.code for c in result.changes}
    assert np.allclose(written_extent(result), [0.2, 0.16, 0.12], rtol=2e-3)
    # the placement's rest-pose box holds the ellipsoid as written: 0.16 m wide in y
    low, high = rest_bounds(result.reference.transformed(result.placement))
    assert np.isclose(high[1] - low[1], 0.16, rtol=2e-3)
    assert not [c for c in result.changes if c.code == "geometry.shape_dropped"]
    report = verify_object(result, result.candidate.source, simulator=False)
    assert report.status == "pass", [c.message for c in report.checks if c.counts]


def test_ellipsoid_bounds_are_its_written_mesh_and_its_mass_exact():
    rotation = np.eye(4)
    rotation[:3, :3] = [[0, -1, 0], [1, 0, 0], [0, 0, 1]]  # 90 degrees about z
    from normalize.model import Geometry

    g = Geometry("ellipsoid", size=(0.3, 0.2, 0.1))
    low, high = meshes.geometry_bounds(g, rotation)
    written = meshes.unit_sphere_vertices() * [0.3, 0.2, 0.1] @ rotation[:3, :3].T
    assert np.allclose(low, written.min(axis=0)) and np.allclose(high, written.max(axis=0))
    assert np.allclose(high, [0.2, 0.3, 0.1], rtol=5e-3) and np.allclose(low, -high, atol=1e-3)
    mass, com, inertia, method = meshes.mass_properties(g)
    assert math.isclose(mass, 1000 * 4 / 3 * math.pi * 0.3 * 0.2 * 0.1)
    assert np.allclose(inertia, np.diag([0.05, 0.1, 0.13]) * mass / 5)
    assert method == "ellipsoid_formula"


def test_mjcf_height_field_inline_mesh_and_sdf_geom_become_meshes(tmp_path):
    mujoco = pytest.importorskip("mujoco")
    body = (
        '<geom name="terrain" type="hfield" hfield="h" pos="0 0 -0.5"/>'
        '<geom name="spout" type="mesh" mesh="tetra" pos="0.1 0 0"/>'
        '<geom name="ring" type="sdf" mesh="torus"><plugin instance="torus"/></geom>'
    )
    assets = (
        '<hfield name="h" nrow="2" ncol="3" size="0.3 0.2 0.05 0.01" elevation="0 1 0 0 1 0"/>'
        '<mesh name="tetra" vertex="0 0 0 0.1 0 0 0 0.1 0 0 0 0.1"/>'
        '<mesh name="torus"><plugin instance="torus"/></mesh>'
    )
    plugin = (
        '<extension><plugin plugin="mujoco.sdf.torus"><instance name="torus">'
        '<config key="radius1" value="0.1"/><config key="radius2" value="0.02"/></instance>'
        "</plugin></extension>"
    )
    text = mjcf(body, assets).replace("<asset>", plugin + "<asset>", 1)
    result = normalize_files(tmp_path, {"kettle.xml": text}, fmt="mjcf")
    assert result.object.link_map["base"].visuals  # the pot and its parts: no moving parent
    generated = {c.element for c in result.changes if c.code == "mjcf.mesh_generated"}
    assert generated == {"geom terrain", "geom spout", "geom ring"}
    assert not [c for c in result.changes if c.code == "geometry.shape_dropped"]
    # every written shape sits where MuJoCo compiles it: the world box of its vertices
    model = mujoco.MjModel.from_xml_string(text)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    # shapes get canonical names (names.geometry): match them by where they are
    boxes = []
    for g in (g for link in result.object.links for g in link.visuals if g.kind == "mesh"):
        ours = meshes.load_mesh(result.urdf_path.parent / g.filename).vertices
        ours = ours @ g.origin[:3, :3].T + g.origin[:3, 3]  # base frame = world here
        boxes.append((ours.min(axis=0), ours.max(axis=0)))
    for name in ("terrain", "spout", "ring"):
        geom = model.geom(name).id
        if name == "terrain":  # the height field's box, from its samples
            centre, half = model.geom_aabb[geom][:3], model.geom_aabb[geom][3:]
            local = centre + half * np.array(np.meshgrid(*[[-1, 1]] * 3)).reshape(3, -1).T
        else:
            mesh = model.geom_dataid[geom]
            start = model.mesh_vertadr[mesh]
            local = model.mesh_vert[start : start + model.mesh_vertnum[mesh]]
        theirs = local @ data.geom_xmat[geom].reshape(3, 3).T + data.geom_xpos[geom]
        theirs = theirs @ result.placement[:3, :3].T + result.placement[:3, 3]
        low, high = theirs.min(axis=0), theirs.max(axis=0)
        assert any(
            np.allclose(lo, low, atol=1e-9) and np.allclose(hi, high, atol=1e-9) for lo, hi in boxes
        ), name


HEIGHTMAP = (
    '<link name="a"><visual name="body"><geometry><box><size>0.2 0.2 0.2</size></box>'
    '</geometry></visual><visual name="ground"><geometry><heightmap><uri>h.png</uri>'
    "<size>{size}</size></heightmap></geometry></visual></link>"
    '<link name="b"><pose>0 0 0.2 0 0 0</pose><visual name="lid"><geometry><box>'
    "<size>0.2 0.2 0.02</size></box></geometry></visual></link>"
    '<joint name="j" type="revolute"><parent>a</parent><child>b</child><axis><xyz>0 1 0</xyz>'
    "<limit><lower>0</lower><upper>1</upper></limit></axis></joint>"
)


def test_a_dropped_shape_is_warned_with_its_count(tmp_path):
    from verify import verify_object

    files = {"m.sdf": sdf(HEIGHTMAP.format(size="10 10 1"))}
    result = normalize_files(tmp_path, files, fmt="sdf")
    dropped = [c for c in result.changes if c.code == "geometry.shape_dropped"]
    assert len(dropped) == 1 and "heightmap" in dropped[0].message
    report = verify_object(result, result.candidate.source, simulator=False)
    (warning,) = report.check("geometry.shape_dropped")
    assert not warning.passed and warning.value == 1 and report.status == "warn"
    (share,) = report.check("geometry.shape_dropped_share")
    assert not share.passed and share.value > 0.9  # a 10 x 10 m field next to a 20 cm box


def test_a_small_dropped_shape_is_warned_but_not_sent_to_review(tmp_path):
    from verify import verify_object

    files = {"m.sdf": sdf(HEIGHTMAP.format(size="0.01 0.01 0.01"))}
    result = normalize_files(tmp_path, files, fmt="sdf")
    report = verify_object(result, result.candidate.source, simulator=False)
    assert not report.check("geometry.shape_dropped")[0].passed
    (share,) = report.check("geometry.shape_dropped_share")
    assert share.passed and 0 < share.value < 0.05


def test_sdf_ellipsoid_is_kept_and_heightmap_dropped(tmp_path):
    body = (
        '<link name="a"><visual name="egg"><geometry><ellipsoid><radii>0.1 0.2 0.3</radii>'
        "</ellipsoid></geometry></visual>"
        '<visual name="ground"><geometry><heightmap><uri>h.png</uri><size>10 10 1</size>'
        "</heightmap></geometry></visual></link>"
    )
    obj = load_raw(tmp_path, {"m.sdf": sdf(body)})
    (egg,) = obj.link_map["a"].visuals
    assert egg.kind == "ellipsoid" and egg.size == (0.1, 0.2, 0.3)
    codes = [c.code for c in obj.source.changes]
    assert codes == ["geometry.shape_dropped"]
    (record,) = obj.source.extra["dropped_shapes"]
    assert record["kind"] == "heightmap" and math.isclose(record["area"], 2 * (100 + 10 + 10))


# --------------------------------------------------------------------------- 5. declared mass
CART = """<?xml version="1.0"?>
<robot name="cart">
  <link name="rail"><visual><geometry><box size="2 0.1 0.1"/></geometry></visual></link>
  <link name="cart">
    <inertial><origin xyz="0 0 0.05"/><mass value="1"/>{inertia}</inertial>
    <collision><geometry><box size="0.5 0.4 0.3"/></geometry></collision>
  </link>
  <joint name="slide" type="prismatic"><parent link="rail"/><child link="cart"/>
    <axis xyz="1 0 0"/><limit lower="-0.5" upper="0.5"/></joint>
</robot>
"""


@pytest.mark.parametrize(
    "inertia", ["", '<inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/>']
)
def test_declared_mass_is_kept_when_only_the_tensor_is_missing(tmp_path, inertia):
    result = normalize_files(tmp_path, {"cart.urdf": CART.format(inertia=inertia)})
    cart = result.object.link_map["link_0"].inertial
    assert cart.mass == 1.0  # not 60 kg of water filling the box
    expected = np.diag([0.4**2 + 0.3**2, 0.5**2 + 0.3**2, 0.5**2 + 0.4**2]) / 12.0
    assert np.allclose(cart.inertia, expected)
    assert cart.method == "source_mass+box_formula"
    # the declared centre of mass is kept (the placement moved the link, not the inertial)
    assert np.allclose(cart.com, result.raw.link_map["cart"].inertial.com)
    (change,) = [c for c in result.changes if c.code == "inertial.tensor_computed"]
    assert change.element == "link cart" and "1 kg" in change.message
    # the cart's own inertial is not recomputed (the base gets one from its shapes: it has none)
    assert "link cart" not in {c.element for c in result.changes if c.code == "inertial.computed"}


def test_a_valid_declared_inertial_is_kept_as_it_is(tmp_path):
    inertia = '<inertia ixx="0.1" iyy="0.2" izz="0.25" ixy="0" ixz="0" iyz="0"/>'
    result = normalize_files(tmp_path, {"cart.urdf": CART.format(inertia=inertia)})
    cart = result.object.link_map["link_0"].inertial
    assert cart.method == "source" and np.allclose(np.diag(cart.inertia), [0.1, 0.2, 0.25])
    recomputed = {"inertial.tensor_computed", "inertial.computed"}
    assert "link cart" not in {c.element for c in result.changes if c.code in recomputed}


# --------------------------------------------------------------------------- 6. zero range
CABINET = """<?xml version="1.0"?>
<robot name="cabinet">
  <link name="body"><visual><geometry><box size="0.5 0.8 1"/></geometry></visual></link>
  <link name="door"><visual><origin xyz="0 0.2 0"/><geometry><box size="0.02 0.4 0.9"/>
    </geometry></visual></link>
  <link name="drawer"><visual><geometry><box size="0.4 0.6 0.2"/></geometry></visual></link>
  <joint name="hinge" type="revolute"><parent link="body"/><child link="door"/>
    <origin xyz="0.26 -0.4 0"/><axis xyz="0 0 1"/><limit lower="{q}" upper="{q}"/></joint>
  <joint name="slide" type="prismatic"><parent link="body"/><child link="drawer"/>
    <origin xyz="0 0 0.3"/><axis xyz="1 0 0"/><limit lower="0" upper="0.4"/></joint>
</robot>
"""


@pytest.mark.parametrize("q", [0.0, 0.3])
def test_zero_range_joint_is_written_fixed(tmp_path, q):
    mujoco = pytest.importorskip("mujoco")
    result = normalize_files(tmp_path, {"cabinet.urdf": CABINET.format(q=q)})
    assert [j.source_name for j in result.object.joints] == ["slide"]
    (change,) = [c for c in result.changes if c.code == "joint.zero_range_fixed"]
    assert change.element == "joint hinge"
    # the door stays where the source puts it at q: merged into the body, turned by q
    door = next(g for g in result.object.link_map["base"].visuals if g.size == (0.02, 0.4, 0.9))
    raw_door = (
        result.raw.link_poses({"hinge": q})["door"] @ result.raw.link_map["door"].visuals[0].origin
    )
    placed = result.placement @ raw_door
    assert np.allclose(door.origin, placed, atol=1e-12)
    # MuJoCo, which ignores equal limits, sees no hinge in the shipped file
    model = mujoco.MjModel.from_xml_path(str(result.urdf_path))
    assert model.njnt == 1


def test_height_field_mesh_has_mujocos_heights():
    """The generated surface against MuJoCo's own ray casting onto the height field."""
    mujoco = pytest.importorskip("mujoco")
    text = (
        '<mujoco><asset><hfield name="h" nrow="2" ncol="3" size="0.3 0.2 0.05 0.01" '
        'elevation="0 0.2 0.4 0.6 0.8 1"/></asset><worldbody>'
        '<geom name="t" type="hfield" hfield="h"/></worldbody></mujoco>'
    )
    model = mujoco.MjModel.from_xml_string(text)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    vertices, _ = meshes.height_field_mesh(model.hfield_data.reshape(2, 3), model.hfield_size[0])
    for x, y, z in vertices[:6]:  # the top samples, rays cast just inside the field
        hit = np.array([-1], dtype=np.int32)
        start = np.array([0.999 * x, 0.999 * y, 1.0])
        distance = mujoco.mj_ray(model, data, start, np.array([0, 0, -1.0]), None, 1, -1, hit)
        assert math.isclose(1.0 - distance, z, abs_tol=1e-4)
