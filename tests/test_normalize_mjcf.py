"""MJCF adapter: every corpus MJCF object loads through MuJoCo with the kinematics MuJoCo computes;
hostile files are refused with their own codes."""

from __future__ import annotations

import math
import os
from pathlib import Path

import mujoco
import numpy as np
import pytest
import trimesh
from scipy.spatial import cKDTree
from scipy.spatial.transform import Rotation
from verify_assets import write

from normalize.adapters import discover, get_adapter
from normalize.adapters.mjcf import compile_mjcf, mujoco_names
from normalize.discovery import Candidate
from normalize.errors import AssetError
from normalize.meshes import load_mesh
from normalize.run import normalize_candidate
from normalize.sources import SourceConfig

ADAPTER = get_adapter("mjcf")


@pytest.fixture(scope="module")
def candidates(corpus_candidates) -> dict[str, Candidate]:
    """object_id -> Candidate of the corpus's MJCF objects."""
    return {k: c for k, c in corpus_candidates.items() if c.source.format == "mjcf"}


# object id -> (moving joint types in order, mimic couplings follower -> (driver, multiplier),
# change codes recorded)
EXPECTED = {
    "pybullet_data_mjcf__mjcf_ant__ant": (["revolute"] * 8, {}, {"axis.normalized": 4}),
    "dm_control_suite__acrobot__acrobot": (["continuous"] * 2, {}, {"mjcf.geom_skipped": 1}),
    "dm_control_suite__cartpole__cartpole": (
        ["prismatic", "continuous"],
        {},
        {"mjcf.geom_skipped": 1},
    ),
    "dm_control_suite__finger__finger": (
        ["revolute", "revolute", "continuous"],
        {},
        {"mjcf.geom_skipped": 1, "mjcf.joint_ref": 1},
    ),
    "dm_control_suite__manipulator__manipulator": (
        ["continuous", *["revolute"] * 7] + ["prismatic", "prismatic", "continuous"] * 2,
        {"finger": ("thumb", 1.0)},
        {"mjcf.geom_skipped": 4, "mjcf.joint_ref": 4},
    ),
    "dm_control_suite__swimmer__swimmer": (
        ["prismatic", "prismatic", "continuous"],
        {},
        {"mjcf.geom_skipped": 1},  # the ground plane; the ellipsoid head is kept
    ),
    "robosuite__door__objects__door": (["revolute"], {}, {}),
    "robosuite__door_lock__objects__door_lock": (["revolute", "revolute"], {}, {}),
    "robosuite__robotiq_gripper_s__robotiq_gripper_s": (
        ["revolute"] * 11,
        {
            "palm_finger_2_joint": ("palm_finger_1_joint", -1.0),
            **{f"finger_{f}_joint_2": (f"finger_{f}_joint_1", -1.0) for f in ("1", "2", "middle")},
            **{f"finger_{f}_joint_3": (f"finger_{f}_joint_1", -0.5) for f in ("1", "2", "middle")},
        },
        {"mjcf.joint_ref": 2},
    ),
    "synthetic_articulated_data__microwave_scene000000__scene000000": (
        ["revolute"],
        {},
        {"mjcf.body_excluded": 1},
    ),
}


def test_discovery_lists_every_model_and_no_include_fragment(candidates):
    assert sorted(candidates) == sorted(EXPECTED)
    for candidate in candidates.values():
        assert "common" not in candidate.source_id.split("/")


@pytest.mark.parametrize("object_id", sorted(EXPECTED))
def test_corpus_object_loads_with_expected_joints_couplings_and_changes(object_id, candidates):
    obj = ADAPTER.load(candidates[object_id])
    types, mimics, codes = EXPECTED[object_id]
    assert [j.type for j in obj.moving_joints] == types
    found = {j.name: (j.mimic.joint, j.mimic.multiplier) for j in obj.joints if j.mimic}
    assert found == mimics
    recorded: dict[str, int] = {}
    for change in obj.source.changes:
        recorded[change.code] = recorded.get(change.code, 0) + 1
    assert recorded == codes
    assert obj.source.labels["robot_name"] == obj.name
    assert obj.source.library == candidates[object_id].source.name


def random_configuration(model, obj, rng):
    """(qpos for MuJoCo, coordinates for our model) with every joint set, within limits."""
    _, joint_names = mujoco_names(model)
    qpos = model.qpos0.copy()
    ours = {}
    for j in range(model.njnt):
        adr, jtype, name = int(model.jnt_qposadr[j]), int(model.jnt_type[j]), joint_names[j]
        if jtype == mujoco.mjtJoint.mjJNT_FREE:
            continue
        if jtype == mujoco.mjtJoint.mjJNT_BALL:
            rotation = Rotation.random(random_state=rng)
            x, y, z, w = rotation.as_quat()
            qpos[adr : adr + 4] = (w, x, y, z)
            for i, angle in enumerate(rotation.as_euler("XYZ")):
                ours[f"{name}__dof{i}"] = angle
            continue
        if model.jnt_limited[j]:
            value = rng.uniform(*model.jnt_range[j])
        else:
            value = rng.uniform(-math.pi, math.pi)
        qpos[adr] = value
        if name in obj.joint_map:
            ours[name] = value - model.qpos0[adr]
    return qpos, ours


def assert_kinematics_match(path: Path, obj, trials: int = 5, seed: int = 0):
    """Body frames, centres of mass and inertia of our raw model equal MuJoCo's mj_kinematics
    at qpos0 and at random configurations within limits."""
    _, model = compile_mjcf(path)
    data = mujoco.MjData(model)
    body_names, _ = mujoco_names(model)
    frames = obj.source.extra["source_frames"]
    rng = np.random.default_rng(seed)
    for trial in range(trials + 1):
        if trial == 0:
            qpos, ours = model.qpos0.copy(), {}
        else:
            qpos, ours = random_configuration(model, obj, rng)
        data.qpos[:] = qpos
        mujoco.mj_kinematics(model, data)
        poses = obj.link_poses(ours)
        for body, name in enumerate(body_names):
            if name not in obj.link_map:
                continue
            pose = poses[name] @ frames[name]
            assert np.allclose(pose[:3, 3], data.xpos[body], atol=1e-9), (name, trial)
            assert np.allclose(pose[:3, :3], data.xmat[body].reshape(3, 3), atol=1e-9)
            inertial = obj.link_map[name].inertial
            assert (inertial is None) == (model.body_mass[body] == 0)
            if inertial is not None:
                rot = poses[name][:3, :3]
                assert np.isclose(inertial.mass, model.body_mass[body], rtol=1e-12)
                com = rot @ inertial.com + poses[name][:3, 3]
                assert np.allclose(com, data.xipos[body], atol=1e-9)
                principal = data.ximat[body].reshape(3, 3)
                expected = principal @ np.diag(model.body_inertia[body]) @ principal.T
                inertia = rot @ inertial.inertia @ rot.T
                assert np.allclose(inertia, expected, atol=1e-12 + 1e-9 * expected.max())


@pytest.mark.parametrize("object_id", sorted(EXPECTED))
def test_forward_kinematics_equal_mujoco(object_id, candidates):
    candidate = candidates[object_id]
    obj = ADAPTER.load(candidate)
    assert_kinematics_match(candidate.path, obj)


def geometry_by_name(obj):
    out = {}
    for link in obj.links:
        for role, items in (("visual", link.visuals), ("collision", link.collisions)):
            for g in items:
                out.setdefault(g.name, (link.name, g, set()))[2].add(role)
    return out


def mesh_vertices_world(model, data, g):
    mesh = model.geom_dataid[g]
    start, count = model.mesh_vertadr[mesh], model.mesh_vertnum[mesh]
    local = model.mesh_vert[start : start + count].astype(float)
    return local @ data.geom_xmat[g].reshape(3, 3).T + data.geom_xpos[g]


def assert_geometry_matches(path: Path, obj):
    """Every kept geom sits where MuJoCo puts it; mesh files, placed by our pose and scale,
    coincide with MuJoCo's compiled vertices."""
    _, model = compile_mjcf(path)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    poses = obj.link_poses()
    shapes = geometry_by_name(obj)
    checked = 0
    for g in range(model.ngeom):
        name = model.geom(g).name or f"geom{g}"
        if name not in shapes:
            continue
        link, geometry, _ = shapes[name]
        world = poses[link] @ geometry.origin
        if geometry.kind == "mesh":
            vertices = trimesh.load(geometry.filename, force="mesh").vertices * geometry.scale
            placed = vertices @ world[:3, :3].T + world[:3, 3]
            distance, _ = cKDTree(mesh_vertices_world(model, data, g)).query(placed)
            assert distance.max() < 1e-6, name
        else:
            assert np.allclose(world[:3, 3], data.geom_xpos[g], atol=1e-9), name
            assert np.allclose(world[:3, :3], data.geom_xmat[g].reshape(3, 3), atol=1e-9)
            half = model.geom_size[g]
            expected = {
                "box": tuple(2 * half),
                "sphere": (half[0],),
                "cylinder": (half[0], 2 * half[1]),
                "capsule": (half[0], 2 * half[1]),
            }[geometry.kind]
            assert np.allclose(geometry.size, expected)
        checked += 1
    return checked


@pytest.mark.parametrize(
    "object_id",
    [
        "robosuite__robotiq_gripper_s__robotiq_gripper_s",
        "dm_control_suite__manipulator__manipulator",
    ],
)
def test_geometry_matches_mujoco(object_id, candidates):
    candidate = candidates[object_id]
    obj = ADAPTER.load(candidate)
    assert assert_geometry_matches(candidate.path, obj) > 10


def test_visual_and_collision_roles_follow_groups_and_contacts(candidates):
    obj = ADAPTER.load(candidates["robosuite__robotiq_gripper_s__robotiq_gripper_s"])
    roles = {name: r for name, (_, _, r) in geometry_by_name(obj).items()}
    assert roles["palm_visual"] == {"visual"}  # contype = conaffinity = 0, group 1
    assert roles["f1_tip_collision"] == {"visual", "collision"}  # group 0 and colliding
    mesh = next(g for _, g, _ in geometry_by_name(obj).values() if g.name == "palm")
    assert mesh.filename.endswith("meshes/robotiq_s_gripper/palm.stl")
    assert Path(mesh.filename).is_absolute()


def test_tendon_and_joint_equalities_become_mimics_that_mujoco_agrees_with(candidates):
    candidate = candidates["robosuite__robotiq_gripper_s__robotiq_gripper_s"]
    obj = ADAPTER.load(candidate)
    _, model = compile_mjcf(candidate.path)
    data = mujoco.MjData(model)
    _, joint_names = mujoco_names(model)
    rng = np.random.default_rng(1)
    drivers = [j.name for j in obj.moving_joints if j.mimic is None]
    for _ in range(3):
        coords = obj.resolve_configuration({d: rng.uniform(0, 1) for d in drivers})
        for j, name in enumerate(joint_names):
            data.qpos[model.jnt_qposadr[j]] = model.qpos0[model.jnt_qposadr[j]] + coords[name]
        mujoco.mj_fwdPosition(model, data)
        for e in range(model.neq):
            a0, a1 = model.eq_data[e][:2]
            if model.eq_type[e] == mujoco.mjtEq.mjEQ_TENDON:
                t = model.eq_obj1id[e]
                assert math.isclose(data.ten_length[t], model.tendon_length0[t] + a0, abs_tol=1e-12)
            else:
                y, x = (
                    model.jnt_qposadr[model.eq_obj1id[e]],
                    model.jnt_qposadr[model.eq_obj2id[e]],
                )
                dy, dx = data.qpos[y] - model.qpos0[y], data.qpos[x] - model.qpos0[x]
                assert math.isclose(dy, a0 + a1 * dx, abs_tol=1e-12)


def test_free_camera_body_is_excluded_and_the_hinge_kept(candidates):
    obj = ADAPTER.load(candidates["synthetic_articulated_data__microwave_scene000000__scene000000"])
    assert "external_camera_body_0" not in obj.link_map
    assert obj.root == "world"
    hinge = obj.joint_map["bottom_left_hinge"]
    assert (hinge.lower, hinge.upper) == (-2.3, 0.0)


def test_degrees_are_converted_and_ref_shifts_the_limits(candidates):
    obj = ADAPTER.load(candidates["dm_control_suite__finger__finger"])
    proximal = obj.joint_map["proximal"]  # range -110..110 degrees, ref -90 degrees
    assert math.isclose(proximal.lower, math.radians(-20))
    assert math.isclose(proximal.upper, math.radians(200))


# --------------------------------------------------------------------------- synthetic files
def source_at(root: Path, **kw) -> SourceConfig:
    return SourceConfig(name="t", format="mjcf", path=root, license="test", **kw)


def load(root: Path, entry: str, **kw):
    source = source_at(root, **kw)
    path = root / entry
    return ADAPTER.load(Candidate(source, Path(entry).with_suffix("").as_posix(), path))


def refused(root: Path, entry: str, **kw) -> AssetError:
    with pytest.raises(AssetError) as info:
        load(root, entry, **kw)
    return info.value


BOX_STL = trimesh.creation.box((0.2, 0.1, 0.4)).apply_translation((0.5, 0.2, -0.1))

COMPLEX = """<mujoco model="complex">
  <compiler angle="degree" eulerseq="zyx" meshdir="assets"/>
  <include file="parts/defaults.xml"/>
  <asset><mesh name="brick" file="brick.stl" scale="2 1 0.5"/></asset>
  <worldbody>
    <geom type="box" size="0.1 0.2 0.3" pos="0 0 -1"/>
    <body name="base" pos="0.1 0.2 0.3" euler="10 20 30">
      <geom type="mesh" mesh="brick" pos="0.1 0 0" euler="5 0 40"/>
      <body name="multi" pos="0.3 0 0" axisangle="0 1 0 30">
        <joint name="j_hinge" type="hinge" pos="0.1 0.05 0" axis="0 0 1" range="-45 60"/>
        <joint name="j_slide" type="slide" axis="1 1 0" range="-0.2 0.3" ref="0.1"/>
        <joint name="j_ball" type="ball" pos="0 0 0.2"/>
        <geom type="capsule" fromto="0 0 0 0.2 0.1 0" size="0.02"/>
        <inertial pos="0.1 0.02 0.03" quat="0.9 0.1 0.2 0.3" mass="2" diaginertia="0.3 0.2 0.15"/>
        <body pos="0 0.3 0">
          <joint type="hinge" axis="1 0 0" pos="0 0.05 0" limited="false"/>
          <geom type="cylinder" size="0.03 0.1" pos="0 0.1 0" zaxis="0 1 1"/>
          <geom type="sphere" size="0.05" group="4" contype="0" conaffinity="0"/>
        </body>
      </body>
    </body>
    <body name="loose" pos="1 1 1">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.05"/>
    </body>
    <body name="camera_rig" pos="0 0 2">
      <freejoint/>
      <camera name="c"/>
      <inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>
    </body>
  </worldbody>
</mujoco>
"""
DEFAULTS = """<mujoco><default><geom rgba="0.5 0.5 0.5 1"/></default></mujoco>"""


@pytest.fixture()
def complex_model(tmp_path):
    stl = BOX_STL.export(file_type="stl")
    write(
        tmp_path,
        {"robot/complex.xml": COMPLEX, "robot/parts/defaults.xml": DEFAULTS,
         "robot/assets/brick.stl": stl},
    )  # fmt: skip
    return tmp_path


def test_multi_joint_body_ball_free_bodies_and_mesh_frames(complex_model):
    obj = load(complex_model, "robot/complex.xml")
    names = [j.name for j in obj.joints]
    chain = ["j_hinge", "j_slide", "j_ball__dof0", "j_ball__dof1", "j_ball__dof2"]
    assert [n for n in names if n.startswith("j_")] == chain
    loose = obj.parent_joint["loose"]
    assert (loose.type, loose.parent, loose.name) == ("fixed", "world", "loose__joint0")
    codes = [c.code for c in obj.source.changes]
    assert codes.count("mjcf.free_joint_fixed") == 1
    assert codes.count("mjcf.body_excluded") == 1
    assert codes.count("joint.decomposed") == 1
    assert codes.count("mjcf.joint_ref") == 1
    assert codes.count("axis.normalized") == 1  # the slide axis 1 1 0
    assert codes.count("mjcf.geom_skipped") == 1  # the hidden, non-colliding sphere
    assert "camera_rig" not in obj.link_map and "loose" in obj.link_map
    slide = obj.joint_map["j_slide"]
    assert np.allclose([slide.lower, slide.upper], [-0.3, 0.2])
    hinge = obj.joint_map["j_hinge"]
    assert np.allclose([hinge.lower, hinge.upper], np.radians([-45, 60]))
    assert obj.link_map["multi__j_hinge"].inertial is None  # massless chain links
    assert obj.source.labels == {"robot_name": "complex", "folder": "robot"}
    path = complex_model / "robot/complex.xml"
    assert_kinematics_match(path, obj, trials=8)
    assert assert_geometry_matches(path, obj) == 5


def test_include_fragment_is_not_a_candidate_and_entry_glob_is_honoured(complex_model):
    write(complex_model, {"robot/other.xml": "<mujoco model='o'/>"})
    ids = [c.source_id for c in discover(source_at(complex_model))]
    assert ids == ["robot/complex", "robot/other"]
    ids = [c.source_id for c in discover(source_at(complex_model, entry="robot/c*.xml"))]
    assert ids == ["robot/complex"]
    ids = [c.source_id for c in discover(source_at(complex_model, exclude=("*/other.xml",)))]
    assert ids == ["robot/complex"]


def test_linear_joint_equality_is_a_mimic_and_a_quadratic_one_is_recorded(tmp_path):
    body = """<body name="b{i}" pos="{i} 0 0"><joint name="h{i}" axis="0 0 1" ref="{ref}"/>
      <geom type="sphere" size="0.1"/></body>"""
    model = f"""<mujoco><worldbody>{"".join(body.format(i=i, ref=0.1 * i) for i in range(3))}
      </worldbody><equality>
        <joint joint1="h1" joint2="h0" polycoef="0.2 -2 0 0 0"/>
        <joint joint1="h2" joint2="h0" polycoef="0 1 0.5 0 0"/>
      </equality></mujoco>"""
    write(tmp_path, {"m.xml": model})
    obj = load(tmp_path, "m.xml")
    mimic = obj.joint_map["h1"].mimic
    assert (mimic.joint, mimic.multiplier, mimic.offset) == ("h0", -2.0, 0.2)
    assert obj.joint_map["h2"].mimic is None
    assert "mjcf.equality_ignored" in [c.code for c in obj.source.changes]


@pytest.mark.parametrize(
    "files, entry, code",
    [
        ({"a.xml": '<mujoco><include file="b.xml"/></mujoco>',
          "b.xml": '<mujoco><include file="a.xml"/></mujoco>'}, "a.xml", "mjcf.include_cycle"),
        ({"a.xml": '<mujoco><include file="a.xml"/></mujoco>'}, "a.xml", "mjcf.include_cycle"),
        ({"src/a.xml": '<mujoco><include file="../outside.xml"/></mujoco>',
          "outside.xml": "<mujoco/>"}, "src/a.xml", "path.outside_root"),
        ({"src/a.xml": '<mujoco><asset><mesh file="/etc/hostname"/></asset></mujoco>'},
         "src/a.xml", "path.outside_root"),
        ({"src/a.xml": '<mujoco><compiler meshdir="../.."/><asset><mesh file="x.stl"/></asset>'
          "</mujoco>"}, "src/a.xml", "path.outside_root"),
        ({"src/a.xml": '<mujoco><asset><texture type="cube" fileright="../../t.png"/></asset>'
          "</mujoco>"}, "src/a.xml", "path.outside_root"),
        ({"src/a.xml": '<?xml version="1.0"?><!DOCTYPE m [<!ENTITY e "x">]><mujoco>&e;</mujoco>'},
         "src/a.xml", "xml.entity"),
        ({"src/a.xml": "<mujoco><worldbody><body>"}, "src/a.xml", "xml.truncated"),
        ({"src/a.xml": "<robot name='r'/>"}, "src/a.xml", "mjcf.not_mjcf"),
        ({"src/a.xml": '<mujoco><worldbody><body><joint range="1 0" limited="true"/>'
          '<geom size="1"/></body></worldbody></mujoco>'}, "src/a.xml", "mjcf.compile"),
        ({"src/a.xml": '<mujoco><worldbody><body><joint type="ball" range="0 30" '
          'limited="true"/><geom size="1"/></body></worldbody></mujoco>'},
         "src/a.xml", "joint.unsupported"),
        ({"src/a.xml": '<mujoco><worldbody><body name="p"><joint/><geom size="1"/></body>'
          '<body name="q" pos="1 0 0"><joint/><geom size="1"/></body></worldbody>'
          '<equality><connect body1="p" body2="q" anchor="0.5 0 0"/></equality></mujoco>'},
         "src/a.xml", "model.closed_loop"),
    ],
)  # fmt: skip
def test_hostile_files_are_refused_with_their_own_code(tmp_path, files, entry, code):
    write(tmp_path, files)
    root = tmp_path / "src" if entry.startswith("src/") else tmp_path
    error = refused(root, Path(entry).relative_to(root.relative_to(tmp_path)).as_posix())
    assert error.code == code, error
    assert error.path


def test_compile_error_carries_mujocos_message(tmp_path):
    write(tmp_path, {"a.xml": "<mujoco><worldbody><bodyx/></worldbody></mujoco>"})
    error = refused(tmp_path, "a.xml")
    assert error.code == "mjcf.compile" and "bodyx" in error.message


def test_symlinked_mesh_leaving_the_root_is_refused(tmp_path):
    BOX_STL.export(tmp_path / "secret.stl")
    write(
        tmp_path,
        {"src/a.xml": '<mujoco><asset><mesh name="m" file="m.stl"/></asset><worldbody>'
         '<geom type="mesh" mesh="m"/></worldbody></mujoco>'},
    )  # fmt: skip
    os.symlink(tmp_path / "secret.stl", tmp_path / "src/m.stl")
    # paths.confine names this path.outside_root today (its symlink test follows links on both
    # sides); either code refuses the file before MuJoCo reads it.
    assert refused(tmp_path / "src", "a.xml").code in ("path.symlink_escape", "path.outside_root")


def test_oversized_mesh_is_refused_before_mujoco_reads_it(complex_model):
    size = (complex_model / "robot/assets/brick.stl").stat().st_size
    error = refused(complex_model, "robot/complex.xml", max_file_bytes=size - 1)
    assert error.code == "file.too_large"


def write_msh(path: Path, vertices, faces, normals=(), texcoords=()) -> Path:
    """MuJoCo's legacy binary mesh, written from its specification: four int32 counts
    (vertices, normals, texture coordinates, faces), then float32 vertices, normals and
    texture coordinates and int32 faces, little-endian."""
    arrays = [
        np.asarray(vertices, "<f4").reshape(-1, 3),
        np.asarray(normals, "<f4").reshape(-1, 3),
        np.asarray(texcoords, "<f4").reshape(-1, 2),
    ]
    faces = np.asarray(faces, "<i4").reshape(-1, 3)
    head = np.array([len(a) for a in arrays] + [len(faces)], "<i4")
    path.write_bytes(head.tobytes() + b"".join(a.tobytes() for a in arrays) + faces.tobytes())
    return path


CUBE_VERTICES = [[x, y, z] for z in (0, 0.1) for y in (0, 0.1) for x in (0, 0.1)]
CUBE_FACES = [[0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 4], [1, 5, 4]]
CUBE_FACES += [[2, 6, 3], [3, 6, 7], [0, 4, 2], [2, 4, 6], [1, 3, 5], [3, 7, 5]]
MSH_MODEL = """<mujoco model="m"><asset><mesh name="part" file="part.msh"/></asset>
<worldbody><body name="a"><geom type="box" size="0.1 0.1 0.1"/>
<body name="b" pos="0 0 0.3"><joint name="j" type="hinge" axis="0 0 1" range="0 1"/>
<geom type="mesh" mesh="part"/></body></body></worldbody></mujoco>"""


@pytest.mark.parametrize("faces", [CUBE_FACES, []], ids=["faces", "vertices only"])
def test_a_mujoco_binary_mesh_is_read_as_mujoco_reads_it(tmp_path, faces):
    """A .msh file (with normals and texture coordinates, or with vertices only, which MuJoCo
    closes with their convex hull) is read with MuJoCo's triangles and shipped as OBJ."""
    folder = tmp_path / "lib" / "obj"
    folder.mkdir(parents=True)
    write_msh(folder / "part.msh", CUBE_VERTICES, faces, np.ones((8, 3)), np.zeros((8, 2)))
    (folder / "m.xml").write_text(MSH_MODEL)
    compiled = mujoco.MjModel.from_xml_path(str(folder / "m.xml"))
    mesh = load_mesh(folder / "part.msh")
    assert len(mesh.faces) == int(compiled.mesh_facenum[0]) == 12
    np.testing.assert_allclose(mesh.vertices, np.asarray(CUBE_VERTICES), atol=1e-7)
    [candidate] = discover(SourceConfig(name="m", format="mjcf", path=folder.parent, license="t"))
    result = normalize_candidate(candidate, tmp_path / "out")
    assert "mesh.converted" in [c.code for c in result.changes]
    assert list(result.urdf_path.parent.glob("meshes/*.obj"))


def test_a_truncated_mujoco_binary_mesh_is_corrupt(tmp_path):
    path = write_msh(tmp_path / "part.msh", CUBE_VERTICES, CUBE_FACES)
    path.write_bytes(path.read_bytes()[:-4])
    with pytest.raises(AssetError) as caught:
        load_mesh(path)
    assert caught.value.code == "mesh.corrupt" and "announces" in str(caught.value)
