"""Every generated file loads in the format's own tools, and their kinematics equal truth.json.

These checks use third-party parsers (yourdfpy, MuJoCo) and a small SDFormat reader written here
with scipy rotations, not the project's adapters or model: they check the generator itself.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np
import pytest
import trimesh
import yourdfpy
from scipy.spatial.transform import Rotation

from samples.generate import generate_library


@pytest.fixture(scope="module", params=["demo", "random"])
def library(request, tmp_path_factory) -> Path:
    if request.param == "demo":
        return request.getfixturevalue("sample_library")
    out = tmp_path_factory.mktemp(request.param)
    generate_library(out, n=200, seed=9)
    return out


def objects(root: Path, fmt: str):
    for path in sorted(root.glob("sample_*/*/truth.json")):
        truth = json.loads(path.read_text())
        if truth["format"] == fmt:
            yield path.parent, truth


def twist(axis, point, kind: str, pitch: float = 0.0) -> np.ndarray:
    a = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    if kind == "prismatic":
        return np.concatenate([np.zeros(3), a])
    return np.concatenate([a, np.cross(point, a) + pitch * a])


def assert_matches(got: dict, truth: dict, where: Path) -> None:
    """Twists (and limits where given) equal the truth, up to the free sign of each joint."""
    rows = {j["name"]: j for j in truth["joints"]}
    assert set(got) == set(rows), where
    for name, (t, limits) in got.items():
        row = rows[name]
        expected = np.array(row["twist"])
        lower = -math.inf if row["lower"] is None else row["lower"]
        upper = math.inf if row["upper"] is None else row["upper"]
        same = np.allclose(t, expected, atol=1e-7)
        flipped = np.allclose(-t, expected, atol=1e-7)
        assert same or flipped, (where, name, t, expected)
        if limits is not None:
            lo, hi = limits if same else (-limits[1], -limits[0])
            assert np.allclose([lo, hi], [lower, upper], atol=1e-7), (where, name, limits, row)


def rpy(values) -> np.ndarray:
    return Rotation.from_euler("xyz", values).as_matrix()  # extrinsic x, y, z = Rz Ry Rx


# ----------------------------------------------------------------------------- URDF


def test_every_urdf_loads_in_yourdfpy_and_its_twists_equal_the_truth(library):
    count = 0
    for fmt in ("urdf", "partnet_mobility"):
        for folder, truth in objects(library, fmt):
            urdf = yourdfpy.URDF.load(
                str(folder / truth["entry"]), build_scene_graph=True, load_meshes=True
            )
            urdf.validate()
            problems = [str(e) for e in urdf._errors]
            if fmt == "urdf":
                assert problems == [], (folder, problems)
            else:  # like the real dataset, PartNet limits carry no effort or velocity
                assert all("effort" in p or "velocity" in p for p in problems), problems
            assert len(urdf.scene.geometry) > 0
            got = {}
            followers = {j.mimic.joint: j for j in urdf.robot.joints if j.mimic is not None}
            for joint in urdf.robot.joints:
                if joint.type == "fixed" or joint.mimic is not None:
                    continue
                pose = urdf.get_transform(joint.child, urdf.base_link)
                axis, point = pose[:3, :3] @ joint.axis, pose[:3, 3]
                if joint.name in followers:  # a helical pair: x = multiplier * theta
                    slide = followers[joint.name]
                    slide_pose = urdf.get_transform(slide.child, urdf.base_link)
                    slide_axis = slide_pose[:3, :3] @ slide.axis
                    assert np.allclose(np.cross(axis, slide_axis), 0, atol=1e-9)
                    pitch = slide.mimic.multiplier * np.sign(axis @ slide_axis)
                    limits = None
                    if joint.type == "revolute":
                        limits = (joint.limit.lower, joint.limit.upper)
                    got[joint.name] = (twist(axis, point, "helical", pitch), limits)
                    continue
                limits = None
                if joint.type in ("revolute", "prismatic"):
                    limits = tuple(sorted((joint.limit.lower, joint.limit.upper)))
                got[joint.name] = (twist(axis, point, joint.type), limits)
            assert_matches(got, truth, folder)
            count += 1
    assert count >= 23


def test_partnet_folders_look_like_the_dataset(library):
    for folder, truth in objects(library, "partnet_mobility"):
        meta = json.loads((folder / "meta.json").read_text())
        assert meta["model_cat"] == truth["model_cat"] and meta["anno_id"].isdigit()
        root = ET.parse(folder / "mobility.urdf").getroot()
        links = [link.get("name") for link in root.iter("link")]
        assert links[0] == "base"
        numbered = [n for n in links if n.startswith("link_") and not n.endswith("_helper")]
        lines = (folder / "semantics.txt").read_text().splitlines()
        assert [line.split()[0] for line in lines] == numbered
        assert {line.split()[1] for line in lines} <= {
            "free",
            "hinge",
            "slider",
            "slider+",
            "static",
        }
        base_joint = next(j for j in root.iter("joint") if j.find("parent").get("link") == "base")
        assert base_joint.find("origin").get("rpy") == "1.5707963 0 -1.5707963"
        meshes = [m.get("filename") for m in root.iter("mesh")]
        assert meshes and all(m.startswith("textured_objs/") for m in meshes)
        assert all((folder / m).is_file() for m in meshes)


# ----------------------------------------------------------------------------- MJCF


def test_every_mjcf_compiles_in_mujoco_and_its_twists_equal_the_truth(library):
    count = 0
    for folder, truth in objects(library, "mjcf"):
        model = mujoco.MjModel.from_xml_path(str(folder / truth["entry"]))
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        got = {}
        for j in range(model.njnt):
            name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j)
            slide = model.jnt_type[j] == mujoco.mjtJoint.mjJNT_SLIDE
            kind = "prismatic" if slide else "revolute"
            limits = tuple(model.jnt_range[j]) if model.jnt_limited[j] else (-math.inf, math.inf)
            got[name] = (twist(data.xaxis[j], data.xanchor[j], kind), limits)
        assert_matches(got, truth, folder)
        # Included fragments are not models of their own: no worldbody.
        for fragment in [*folder.glob("common/*.xml"), *folder.glob("parts/*.xml")]:
            assert ET.parse(fragment).getroot().find("worldbody") is None
        count += 1
    assert count >= 9


# ----------------------------------------------------------------------------- SDF


def _pose(element) -> np.ndarray:
    t = np.eye(4)
    pose = element.find("pose") if element is not None else None
    if pose is not None:
        values = [float(v) for v in pose.text.split()]
        t[:3, :3], t[:3, 3] = rpy(values[3:]), values[:3]
    return t


def sdf_twists(path: Path) -> dict:
    """World twists and limits of an SDFormat model: link poses in the model frame (or
    relative_to another link), joint poses in the child link frame, axes in the joint frame."""
    model = ET.parse(path).getroot().find("model")
    links = {link.get("name"): link for link in model.findall("link")}
    poses: dict[str, np.ndarray] = {}

    def link_pose(name: str) -> np.ndarray:
        if name not in poses:
            element = links[name].find("pose")
            relative = element.get("relative_to") if element is not None else None
            base = link_pose(relative) if relative else np.eye(4)
            poses[name] = base @ _pose(links[name])
        return poses[name]

    out = {}
    for joint in model.findall("joint"):
        kind = joint.get("type")
        if kind == "fixed":
            continue
        frame = link_pose(joint.find("child").text) @ _pose(joint)
        axis = frame[:3, :3] @ np.array([float(v) for v in joint.find("axis/xyz").text.split()])
        pitch = 0.0
        if kind == "screw":
            pitch = float(joint.find("screw_thread_pitch").text) / (2 * math.pi)
            old = joint.find("thread_pitch")
            if old is not None:  # Gazebo classic: rad/m, positive for a left-handed thread
                assert math.isclose(float(old.text), -1.0 / pitch, rel_tol=1e-9)
            kind = "helical"
        limit = joint.find("axis/limit")
        limits = None
        if limit is not None:
            limits = tuple(sorted(float(limit.find(k).text) for k in ("lower", "upper")))
        elif kind == "continuous":
            limits = (-math.inf, math.inf)
        out[joint.get("name")] = (twist(axis, frame[:3, 3], kind, pitch), limits)
    return out


def test_every_sdf_parses_with_the_expected_joints_and_twists(library):
    count = 0
    for folder, truth in objects(library, "sdf"):
        root = ET.parse(folder / truth["entry"]).getroot()
        assert root.tag == "sdf" and root.get("version") == "1.10"
        types = {j.get("name"): j.get("type") for j in root.iter("joint")}
        for row in truth["joints"]:
            assert types[row["name"]] == {"helical": "screw"}.get(row["type"], row["type"])
        assert_matches(sdf_twists(folder / truth["entry"]), truth, folder)
        for uri in root.iter("uri"):
            assert (folder / uri.text).is_file()
        count += 1
    assert count >= 8


# ----------------------------------------------------------------------------- meshes


def test_meshes_are_closed_outward_wound_solids(library):
    texts = {}
    for path in sorted(library.glob("sample_*/*/*/*.obj")):
        texts.setdefault(path.read_text(), path)
    assert len(texts) > 20
    for path in texts.values():
        mesh = trimesh.load(path, force="mesh")
        assert mesh.is_watertight and mesh.is_winding_consistent, path
        assert mesh.volume > 0, path
