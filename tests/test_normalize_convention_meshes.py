"""Meshes in the convention: corrupt files refused, the content cache, mass properties,
and OBJ output with materials and textures."""

from __future__ import annotations

import numpy as np
import pytest
from test_normalize_urdf import BOX_OBJ
from verify_assets import write

from normalize import meshes
from normalize.adapters import discover
from normalize.convention import _computed_inertial
from normalize.errors import AssetError
from normalize.model import Geometry, Link
from normalize.run import normalize_candidate
from normalize.sources import SourceConfig

URDF = """<?xml version="1.0"?>
<robot name="r">
  <link name="a"><visual><geometry><box size="1 1 1"/></geometry></visual></link>
  <link name="b"><visual><geometry><mesh filename="{mesh}"/></geometry></visual></link>
  <joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1"/></joint>
</robot>
"""


def normalize_with(tmp_path, mesh_name: str, files: dict):
    root = write(tmp_path / "lib", {"r.urdf": URDF.format(mesh=mesh_name), **files})
    (candidate,) = discover(SourceConfig(name="lib", format="urdf", path=root, license="x"))
    return normalize_candidate(candidate, tmp_path / "out")


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (BOX_OBJ[: BOX_OBJ.index("f 2 3 7")] + "f 2 3 9\n", "is corrupt"),  # truncated
        (BOX_OBJ.replace("v 1 1 1", "v 1 nan 1"), "NaN"),
        ("# nothing here\n", "no triangles"),
        ("", "no triangles"),
    ],
)
def test_corrupt_obj_is_refused(tmp_path, content, why):
    with pytest.raises(AssetError) as info:
        normalize_with(tmp_path, "bad.obj", {"bad.obj": content})
    err = info.value
    assert (err.code, err.stage) == ("mesh.corrupt", "mesh")
    assert why in err.message and err.path.endswith("bad.obj")
    assert not (tmp_path / "out" / "objects" / "lib__r").exists()


def test_corrupt_binary_mesh_is_refused(tmp_path):
    with pytest.raises(AssetError) as info:
        normalize_with(tmp_path, "bad.glb", {"bad.glb": b"glTF\x02\x00garbage"})
    assert info.value.code == "mesh.corrupt"
    with pytest.raises(AssetError) as info:
        normalize_with(tmp_path, "bad.stl", {"bad.stl": b"solid x\nfacet normal 0 0 1\nouter"})
    assert info.value.code == "mesh.corrupt"


def test_identical_meshes_are_loaded_once(tmp_path):
    meshes.clear_cache()
    (tmp_path / "a.obj").write_text(BOX_OBJ)
    (tmp_path / "b.obj").write_text(BOX_OBJ)
    first = meshes.load_mesh(tmp_path / "a.obj")
    assert meshes.load_mesh(tmp_path / "b.obj") is first
    (tmp_path / "b.obj").write_text(BOX_OBJ.replace("v 1 1 1", "v 1 1 2"))
    assert meshes.load_mesh(tmp_path / "b.obj") is not first


def test_mass_properties_of_watertight_and_open_meshes(tmp_path):
    (tmp_path / "box.obj").write_text(BOX_OBJ)
    mass, com, inertia, method = meshes.mass_properties(
        Geometry("mesh", filename=str(tmp_path / "box.obj"), scale=[2, 1, 1])
    )
    assert method == "mesh_volume" and mass == pytest.approx(2000.0)
    np.testing.assert_allclose(com, [1.0, 0.5, 0.5])
    np.testing.assert_allclose(np.diag(inertia), np.array([2, 5, 5]) * 2000 / 12, rtol=1e-9)
    # Remove the top two triangles: not watertight, so the convex hull (the full box) is used.
    open_box = BOX_OBJ.replace("f 5 6 7\nf 5 7 8\n", "")
    (tmp_path / "open.obj").write_text(open_box)
    mass, *_, method = meshes.mass_properties(Geometry("mesh", filename=str(tmp_path / "open.obj")))
    assert method == "mesh_convex_hull" and mass == pytest.approx(1000.0)
    # A flat unit square encloses nothing: it is weighed as a 1 mm shell (a thin plate).
    flat = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3\nf 1 3 4\n"
    (tmp_path / "flat.obj").write_text(flat)
    mass, com, inertia, method = meshes.mass_properties(
        Geometry("mesh", filename=str(tmp_path / "flat.obj"))
    )
    assert method == "mesh_surface_shell"
    assert mass == pytest.approx(1000.0 * meshes.SHELL_THICKNESS)
    np.testing.assert_allclose(com, [0.5, 0.5, 0.0])
    np.testing.assert_allclose(np.diag(inertia), np.array([1, 1, 2]) * mass / 12, rtol=1e-9)


def test_primitive_mass_and_bounds_are_exact():
    rot = np.eye(4)
    rot[:3, :3] = [[0, 0, 1], [0, 1, 0], [-1, 0, 0]]  # local z -> world -x
    cylinder = Geometry("cylinder", origin=rot, size=(0.1, 2.0))
    low, high = meshes.geometry_bounds(cylinder, np.eye(4))
    np.testing.assert_allclose(low, [-1.0, -0.1, -0.1], atol=1e-15)
    np.testing.assert_allclose(high, [1.0, 0.1, 0.1], atol=1e-15)
    mass, com, inertia, method = meshes.mass_properties(Geometry("capsule", size=(0.1, 0.3)))
    assert method == "capsule_formula"
    assert mass == pytest.approx(1000 * (np.pi * 0.01 * 0.3 + 4 / 3 * np.pi * 0.001))
    # Compare with a fine mesh of the same capsule.
    fine = meshes.capsule_trimesh(0.1, 0.3)
    fine.density = 1000.0
    np.testing.assert_allclose(np.diag(inertia), np.diag(fine.moment_inertia), rtol=2e-2)


def test_obj_copied_with_materials_textures_and_missing_ones_recorded(tmp_path):
    obj = "mtllib part.mtl\nmtllib gone.mtl\nusemtl m\n" + BOX_OBJ
    mtl = "newmtl m\nKd 1 1 1\nmap_Kd -s 1 1 1 ../images/wood.png\nmap_Bump missing.png\n"
    files = {"parts/part.obj": obj, "parts/part.mtl": mtl, "images/wood.png": b"\x89PNG"}
    result = normalize_with(tmp_path, "parts/part.obj", files)
    folder = result.urdf_path.parent
    assert sorted(p.name for p in (folder / "meshes").iterdir()) == [
        "part.mtl",
        "part.obj",
        "wood.png",
    ]
    written = (folder / "meshes" / "part.obj").read_text()
    assert written.startswith("mtllib part.mtl\nusemtl m\nv 0 0 0")
    assert "map_Kd -s 1 1 1 wood.png" in (folder / "meshes" / "part.mtl").read_text()
    assert "missing.png" not in (folder / "meshes" / "part.mtl").read_text()
    recorded = {c.code for c in result.changes}
    assert {"mesh.material_missing", "texture.missing"} <= recorded
    assert result.object.link_map["link_0"].visuals[0].filename == "meshes/part.obj"


def test_material_outside_the_root_is_refused(tmp_path):
    (tmp_path / "evil.mtl").write_text("newmtl m\n")
    obj = "mtllib ../evil.mtl\n" + BOX_OBJ
    with pytest.raises(AssetError) as info:
        normalize_with(tmp_path, "part.obj", {"part.obj": obj})
    assert info.value.code == "path.outside_root"


def test_stl_is_converted_to_obj_exactly(tmp_path):
    import trimesh

    mesh = trimesh.creation.icosphere(subdivisions=1, radius=0.123456789)
    result = normalize_with(tmp_path, "ball.stl", {"ball.stl": mesh.export(file_type="stl")})
    assert "mesh.converted" in {c.code for c in result.changes}
    written = meshes.load_mesh(result.urdf_path.parent / "meshes" / "ball.obj")
    source = meshes.load_mesh(tmp_path / "lib" / "ball.stl")
    assert np.array_equal(written.vertices, source.vertices)
    assert np.array_equal(written.faces, source.faces)


@pytest.mark.parametrize("big", ["parts/part.mtl", "images/wood.png"])
def test_material_libraries_and_textures_are_held_to_the_mesh_size_limit(
    tmp_path, monkeypatch, big
):
    obj = "mtllib part.mtl\nusemtl m\n" + BOX_OBJ
    files = {
        "parts/part.obj": obj,
        "parts/part.mtl": "newmtl m\nmap_Kd ../images/wood.png\n",
        "images/wood.png": b"\x89PNG",
    }
    files[big] = files[big] + (b"\0" if isinstance(files[big], bytes) else "#") * 4096
    monkeypatch.setattr(meshes.reading, "MAX_MESH_BYTES", 2048)
    with pytest.raises(AssetError) as info:
        normalize_with(tmp_path, "parts/part.obj", files)
    assert info.value.code == "mesh.too_large" and info.value.path.endswith(big.split("/")[1])


def test_a_hollow_part_is_weighed_as_walls(tmp_path):
    """A closed cabinet carcass 0.6 x 0.6 x 1.8 m weighed as a solid block of water is 648 kg:
    past HOLLOW_ABOVE_KG it is weighed as 15 mm walls instead (area x thickness x density),
    and the change says both; a small solid part keeps its volume."""
    (tmp_path / "carcass.obj").write_text(BOX_OBJ)  # the unit cube, scaled below
    carcass = Geometry("mesh", filename=str(tmp_path / "carcass.obj"), scale=[0.6, 0.6, 1.8])
    mass, com, inertia, method = meshes.wall_mass_properties(carcass)
    area = 2 * (0.6 * 0.6 + 2 * 0.6 * 1.8)
    assert method == "mesh_wall_shell"
    assert mass == pytest.approx(area * meshes.WALL_THICKNESS * meshes.MESH_DENSITY)
    np.testing.assert_allclose(com, [0.3, 0.3, 0.9], atol=1e-12)
    box = Geometry("box", size=(0.6, 0.6, 1.8))
    assert meshes.wall_mass_properties(box)[0] == pytest.approx(mass)
    link = Link("carcass", visuals=(carcass,))
    inertial, how = _computed_inertial(link, None, meshes.MESH_DENSITY)
    assert inertial.method == "mesh_wall_shell" and inertial.mass == pytest.approx(mass)
    assert "would weigh 648 kg" in how and "15 mm walls" in how
    handle = Geometry("mesh", filename=str(tmp_path / "carcass.obj"), scale=[0.1, 0.1, 0.1])
    inertial, _ = _computed_inertial(Link("handle", visuals=(handle,)), None, 1000.0)
    assert inertial.method == "mesh_volume" and inertial.mass == pytest.approx(1.0)


@pytest.mark.parametrize(
    "text",
    [
        b"",
        b"mtllib a.mtl",
        b"  mtllib a.mtl \r\nv 1 2 3\n\tmtllib  b c.mtl\nmtllib\n",
        b"# mtllib x.mtl\nusemtl mtllib\nmtllib y.mtl\n",
        b"mtllib x.mtl mtllib y.mtl\nv mtllib\n mtllib w.mtl",
        b"mtllibx\nmtllib \nmtllib a\rb\nmtllib c.mtl\n",
    ],
)
def test_mtllib_lines_are_rewritten_as_the_pattern_finds_them(text):
    from normalize.meshes.writing import _MTLLIB, _with_mtllib_replaced

    def renamed(match):
        return b"mtllib copied-" + match.group(1) + match.group(2)

    assert _with_mtllib_replaced(text, renamed) == _MTLLIB.sub(renamed, text)


def test_a_collision_mesh_width_is_measured_once_per_content(tmp_path, monkeypatch):
    from normalize.meshes import collision

    path = write(tmp_path, {"plate.obj": "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nf 1 2 3\nf 2 4 3\n"})
    plate = meshes.load_mesh(path / "plate.obj")
    assert meshes.flat_normal(plate) is not None
    measured = []
    width = collision.hull_width
    monkeypatch.setattr(collision, "hull_width", lambda p: measured.append(p) or width(p))
    assert meshes.thickened_collision(plate, np.ones(3), np.zeros(3)) is not None
    assert len(measured) == 2  # the thickening loop's only (thin, then thick enough)
    measured.clear()
    assert meshes.thickened_collision(plate, np.full(3, 2.0), np.zeros(3)) is not None
    assert len(measured) == 3  # a scaled mesh is first measured at its scale
