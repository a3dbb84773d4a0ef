"""Previews of one shipped object: the rest pose and each driving joint group at its limits.

`render_object(path, out_dir)` loads the shipped file with MuJoCo (`object.xml`, the MJCF, when
the object folder has one, else `object.urdf`: `model_file`), poses it and writes into `out_dir`:

    rest.png, <group>-lower.png, <group>-upper.png   thumbnails (THUMBNAIL pixels square)
    sheet.png                                          the contact sheet: lower | rest | upper
    previews.json                                      what each image shows (poses, camera)

Views: a driving joint is a hinge or slide joint that no joint equality (a URDF mimic) drives;
its group is the joint and the joints it drives. An object with two or more driving joints gets
the group "all" first (every driving joint at its lower limit, then at its upper: a drawer out
and a door open in one picture), then one group per driving joint when it has at most
MANY_JOINTS of them, else its LARGEST joints of largest motion (how far a geom of the parts it
moves travels from lower to upper). Unbounded joints go to -/+ UNBOUNDED of their kind. A pose
that equals an earlier one (a limit at rest) is rendered once. The camera is the same for every
object (azimuth, elevation, field of view) and frames the rest-pose box of the visual geoms with
a margin (MARGIN times its bounding sphere), so that most parts moving out of the box stay in
view (a wide door swinging towards the camera may still leave it); it does not move between the
views of an object.
Colours: the fixed part is grey, each driving joint's moving parts have their own colour; the
file's materials and textures are ignored. Visual geoms (those that collide with nothing) are
drawn, or every geom when there are none.

The same file gives the same bytes on the same renderer (no timestamps in the PNGs; the GL
rasterizer is deterministic), which tests check; another GL driver may differ in a few pixels,
so the release's content hash leaves previews out (`export.release.content_hash`).
"""

from __future__ import annotations

import io
import json
import math
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

THUMBNAIL = 256
SHEET_CELL = 128
MANY_JOINTS = 6
LARGEST = 3
UNBOUNDED = {"hinge": math.pi / 2, "slide": 0.1}  # radians, metres
AZIMUTH, ELEVATION, FOVY = 120.0, -30.0, 40.0
MARGIN = 1.25
OFFSCREEN_SAMPLES = 0
STATIC_RGBA = (0.72, 0.72, 0.70, 1.0)
PALETTE = (  # colour-blind safe (Okabe-Ito), one per driving joint
    (0.90, 0.62, 0.00),
    (0.34, 0.71, 0.91),
    (0.00, 0.62, 0.45),
    (0.80, 0.47, 0.65),
    (0.00, 0.45, 0.70),
    (0.84, 0.37, 0.00),
    (0.94, 0.89, 0.26),
)
BACKGROUND = np.array((255, 255, 255), dtype=np.uint8)
SHOWN_GROUP, HIDDEN_GROUP = 0, 5  # geom groups: visual geoms are drawn, collision geoms not
SHEET_JSON = "previews.json"
SHEET = "sheet.png"
REST = "rest.png"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.]+")
_FEW_VERTICES = re.compile(r"at least 4 vertices required\s*Element name '([^']+)'")
MAX_LEFT_OUT = 50


class PreviewError(Exception):
    """The file could not be rendered (the message says why)."""


def model_file(object_dir: Path) -> Path:
    """The shipped file previews are rendered from: object.xml (MJCF) when present, else
    object.urdf."""
    mjcf = Path(object_dir) / "object.xml"
    return mjcf if mjcf.is_file() else Path(object_dir) / "object.urdf"


@dataclass
class Group:
    """A driving joint (or, for "all", every driving joint) and the label of its views."""

    name: str
    label: str
    joints: list[int]
    ends: dict[str, np.ndarray] = field(default_factory=dict)  # "lower"/"upper" -> qpos


# --------------------------------------------------------------------------- model
def load_model(path: Path) -> tuple[object, list[str]]:
    """(the MuJoCo model of a shipped file set up for previews, meshes left out); raises
    PreviewError. The shipped file is read exactly as written (it carries what MuJoCo needs,
    as the simulator checks prove). Meshes MuJoCo refuses for having fewer than 4 vertices
    (`geometry.mesh_degenerate` reports them) are left out with their geoms, at most
    MAX_LEFT_OUT of them. A URDF joint whose limits are equal keeps them (it does not move in
    its previews)."""
    import mujoco

    from normalize.mujoco_warnings import captured

    left_out: list[str] = []
    try:
        with captured(mujoco):
            frozen = {}
            if path.suffix.lower() == ".urdf":
                spec = mujoco.MjSpec.from_string(_urdf_for_mujoco(path))
                frozen = _frozen_joints(path)
            else:
                spec = mujoco.MjSpec.from_file(str(path))
            _set_up(mujoco, spec, shell_inertia=path.suffix.lower() == ".urdf")
            while True:
                try:
                    model = spec.compile()
                    break
                except ValueError as exc:
                    few = _FEW_VERTICES.search(str(exc))
                    if few is None or len(left_out) >= MAX_LEFT_OUT or not _leave_out(spec, few[1]):
                        raise
                    left_out.append(few[1])
    except Exception as exc:  # MuJoCo reports every load problem as an exception
        raise PreviewError(f"MuJoCo cannot load {Path(path).name}: {str(exc).strip()}") from exc
    for name, value in frozen.items():
        j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if j >= 0:
            model.jnt_limited[j], model.jnt_range[j] = 1, (value, value)
    return model, left_out


def _frozen_joints(path: Path) -> dict[str, float]:
    """Joints of a URDF whose lower and upper limits are equal (MuJoCo would read them as
    unlimited: the text it compiles leaves such limits out), by name -> their one position."""
    from normalize.safe_xml import parse_xml

    out = {}
    for joint in parse_xml(path).iter("joint"):
        limit = joint.find("limit")
        lower = None if limit is None else limit.get("lower")
        if lower is not None and lower == limit.get("upper"):
            out[joint.get("name")] = float(lower)
    return out


def _leave_out(spec, mesh_name: str) -> bool:
    mesh = spec.mesh(mesh_name)
    if mesh is None:
        return False
    for geom in [g for g in spec.geoms if g.meshname == mesh_name]:
        spec.delete(geom)
    spec.delete(mesh)
    return True


def _urdf_for_mujoco(path: Path) -> str:
    """The URDF text with the writer's MuJoCo compiler block (a shipped file has it; an asset
    given to `arena validate --html` before normalization may not) and mesh paths from the
    file's folder (`from_string` has no folder of its own)."""
    from lxml import etree

    from normalize.safe_xml import parse_xml
    from normalize.urdf_writer import MUJOCO_COMPILER

    root = parse_xml(path)
    block = root.find("mujoco")
    if block is None:
        block = etree.SubElement(root, "mujoco")
    compiler = block.find("compiler")
    if compiler is None:
        compiler = etree.SubElement(block, "compiler", **MUJOCO_COMPILER)
    compiler.set("meshdir", f"{path.parent.resolve()}/")
    return etree.tostring(root).decode()


def _set_up(mujoco, spec, shell_inertia: bool) -> None:
    """Image size, camera angle, light, no shadows or collisions; visual geoms (those
    colliding with nothing) in SHOWN_GROUP, the others hidden (all shown when no geom is
    visual only). With `shell_inertia` (a URDF, which need not be a shipped one) mesh volumes
    are not computed; a shipped MJCF compiles as written, and its meshes then come processed
    from MuJoCo's asset cache, filled by the verification's loads of the same file."""
    spec.visual.global_.offwidth = THUMBNAIL
    spec.visual.global_.offheight = THUMBNAIL
    spec.visual.quality.shadowsize = 0  # no shadows: no 4096-pixel shadow map to allocate
    spec.visual.quality.offsamples = OFFSCREEN_SAMPLES
    spec.visual.global_.fovy = FOVY
    spec.visual.headlight.ambient = [0.45, 0.45, 0.45]
    spec.visual.headlight.diffuse = [0.55, 0.55, 0.55]
    spec.visual.headlight.specular = [0.1, 0.1, 0.1]
    geoms = list(spec.geoms)
    visual = [g.contype == 0 and g.conaffinity == 0 for g in geoms]
    shown_all = not any(visual)
    for geom, shown in zip(geoms, visual, strict=True):
        geom.group = SHOWN_GROUP if shown or shown_all else HIDDEN_GROUP
        geom.contype = geom.conaffinity = 0  # no collision hulls (flat meshes have none)
    if shell_inertia:  # open meshes have no volume: a shell is enough
        for mesh in spec.meshes:
            mesh.inertia = mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL


def _followers(model) -> list[tuple[int, int, np.ndarray]]:
    """(follower joint, leader joint, polynomial coefficients) of each active joint equality."""
    import mujoco

    out = []
    for e in range(model.neq):
        if model.eq_type[e] == mujoco.mjtEq.mjEQ_JOINT and model.eq_active0[e]:
            leader = int(model.eq_obj2id[e])
            if leader >= 0:
                out.append((int(model.eq_obj1id[e]), leader, np.array(model.eq_data[e, :5])))
    return out


def _kinds(model) -> list[str | None]:
    """Per joint: "hinge", "slide" or None (ball and free joints are not posed)."""
    import mujoco

    named = {int(mujoco.mjtJoint.mjJNT_HINGE): "hinge", int(mujoco.mjtJoint.mjJNT_SLIDE): "slide"}
    return [named.get(int(t)) for t in model.jnt_type]


def _limit(model, j: int, kind: str, end: str) -> float:
    if model.jnt_limited[j]:
        return float(model.jnt_range[j, 0 if end == "lower" else 1])
    return (-1.0 if end == "lower" else 1.0) * UNBOUNDED[kind]


def _pose(model, kinds, joints: list[int], end: str, followers) -> np.ndarray:
    """qpos with `joints` at their `end` limit, the others at rest, followers coupled."""
    qpos = np.array(model.qpos0)
    adr = model.jnt_qposadr
    for j in joints:
        qpos[adr[j]] = _limit(model, j, kinds[j], end)
    for _ in range(len(followers)):  # a follower may lead another: settle the chain
        for follower, leader, c in followers:
            x = qpos[adr[leader]] - model.qpos0[adr[leader]]
            value = c[0] + c[1] * x + c[2] * x**2 + c[3] * x**3 + c[4] * x**4
            qpos[adr[follower]] = model.qpos0[adr[follower]] + value
    return qpos


def _geom_positions(model, data, qpos: np.ndarray) -> np.ndarray:
    import mujoco

    data.qpos[:] = qpos
    mujoco.mj_kinematics(model, data)
    return np.array(data.geom_xpos)


def _body_joint(model, driving: list[int], followers) -> dict[int, int]:
    """body -> the driving joint that moves it (the nearest joint above it, or its leader)."""
    leader = {f: lead for f, lead, _ in followers}
    out = {}
    for body in range(1, model.nbody):
        b = body
        while b > 0 and model.body_jntnum[b] == 0:
            b = int(model.body_parentid[b])
        if b > 0:
            j = int(model.body_jntadr[b])
            while j in leader:
                j = leader[j]
            if j in driving:
                out[body] = j
    return out


def _joint_name(model, j: int) -> str:
    import mujoco

    return mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j) or f"joint{j}"


def plan(model) -> tuple[list[Group], dict[int, int]]:
    """The joint groups to show and the body -> driving joint map (for colours)."""
    import mujoco

    kinds = _kinds(model)
    followers = _followers(model)
    driven = {f for f, _, _ in followers}
    driving = [j for j in range(model.njnt) if kinds[j] and j not in driven]
    body_joint = _body_joint(model, driving, followers)
    single = [
        Group(_joint_name(model, j), f"{_joint_name(model, j)} ({kinds[j]})", [j]) for j in driving
    ]
    if len(driving) > MANY_JOINTS:
        data = mujoco.MjData(model)
        moving_joint = np.array([body_joint.get(int(b), -1) for b in model.geom_bodyid])
        motion = {}
        for group in single:
            low, high = (
                _geom_positions(model, data, _pose(model, kinds, group.joints, end, followers))
                for end in ("lower", "upper")
            )
            travel = np.linalg.norm(high - low, axis=1)[moving_joint == group.joints[0]]
            motion[group.name] = float(travel.max(initial=0.0))
        single = sorted(single, key=lambda g: (-motion[g.name], g.name))[:LARGEST]
    every = [Group("all", f"all {len(driving)} joints", list(driving))] if len(driving) > 1 else []
    groups = every + single
    used = {"rest", "sheet", "previews"}
    for group in groups:
        stem = _UNSAFE.sub("-", group.name).strip("-.") or "joint"
        while stem in used:
            stem += "_"
        used.add(stem)
        group.name = stem
        group.ends = {
            end: _pose(model, kinds, group.joints, end, followers) for end in ("lower", "upper")
        }
    return groups, body_joint


def _colour(model, body_joint: dict[int, int], driving: list[int]) -> None:
    order = {j: i for i, j in enumerate(driving)}
    model.geom_matid[:] = -1
    for g in range(model.ngeom):
        j = body_joint.get(int(model.geom_bodyid[g]))
        model.geom_rgba[g] = STATIC_RGBA if j is None else (*PALETTE[order[j] % len(PALETTE)], 1.0)


def camera(model, visual: np.ndarray):
    """The fixed camera framing the rest-pose box of the visual geoms."""
    import mujoco

    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    points = []
    for g in np.flatnonzero(visual):
        centre, half = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
        local = centre + corners * half
        points.append(data.geom_xpos[g] + local @ data.geom_xmat[g].reshape(3, 3).T)
    points = np.concatenate(points) if points else np.zeros((1, 3))
    low, high = points.min(axis=0), points.max(axis=0)
    radius = max(0.5 * float(np.linalg.norm(high - low)), 1e-3)
    cam = mujoco.MjvCamera()
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    cam.lookat[:] = (low + high) / 2
    cam.distance = MARGIN * radius / math.sin(math.radians(FOVY) / 2)
    cam.azimuth, cam.elevation = AZIMUTH, ELEVATION
    return cam, (low.tolist(), high.tolist())


# --------------------------------------------------------------------------- rendering
def offscreen_frames(backend: str, model, states, cam, size: int) -> list[np.ndarray]:
    """RGB frames (size x size, uint8) of the model in each MjData of `states` (kinematics
    are computed from their qpos), through this thread's GL context; geoms of SHOWN_GROUP
    only, on a white background. No skybox is drawn (a skybox, even a flat white one, cost a
    third of each view on a software rasterizer): the background is left black and then
    painted BACKGROUND; no part of the object is black, as every colour has a channel of at
    least 0.62 and the headlight's ambient is 0.45."""
    import mujoco

    from previews.gl import gl_context

    gl_context(backend, max(size, THUMBNAIL))
    context = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_50)
    try:
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, context)
        scene = mujoco.MjvScene(model, maxgeom=model.ngeom + 10)
        scene.flags[mujoco.mjtRndFlag.mjRND_SKYBOX] = 0
        option = mujoco.MjvOption()
        option.sitegroup[:] = 0
        option.geomgroup[:] = [int(g == SHOWN_GROUP) for g in range(len(option.geomgroup))]
        viewport = mujoco.MjrRect(0, 0, size, size)
        frames = []
        for data in states:
            mujoco.mj_kinematics(model, data)
            mujoco.mjv_updateScene(
                model, data, option, None, cam, mujoco.mjtCatBit.mjCAT_ALL, scene
            )
            mujoco.mjr_render(viewport, scene, context)
            rgb = np.empty((size, size, 3), dtype=np.uint8)
            mujoco.mjr_readPixels(rgb, None, viewport, context)
            black = (rgb[..., 0] | rgb[..., 1] | rgb[..., 2]) == 0
            np.copyto(rgb, BACKGROUND, where=black[..., None])
            frames.append(np.flipud(rgb).copy())
        return frames
    finally:
        context.free()


def png_bytes(rgb: np.ndarray) -> bytes:
    """PNG of an RGB array, without metadata (the same pixels give the same bytes)."""
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(rgb, "RGB").save(out, format="PNG", compress_level=1)
    return out.getvalue()


@cache
def _font():
    """Pillow's default font at 12 pixels (loaded once per process: about 1 ms each time)."""
    from PIL import ImageFont

    return ImageFont.load_default(size=12)


def contact_sheet(title: str, rest: np.ndarray, rows: list[tuple[str, np.ndarray, np.ndarray]]):
    """One image: a title, then per group its label and lower | rest | upper (an object
    without moving joints: rest alone)."""
    from PIL import Image, ImageDraw

    font = _font()
    cell, pad, label_h = SHEET_CELL, 4, 16
    row_h = label_h + cell + pad
    drawn = rows or [("no moving joints", None, None)]
    sheet = Image.new("RGB", (3 * cell + 4 * pad, label_h + pad + len(drawn) * row_h), "white")
    draw = ImageDraw.Draw(sheet)
    draw.text((pad, 2), title[:70], fill=(0, 0, 0), font=font)
    small = {id(rest): Image.fromarray(rest, "RGB").reduce(THUMBNAIL // cell)}
    for i, (label, lower, upper) in enumerate(drawn):
        y = label_h + pad + i * row_h
        draw.text((pad, y), label[:70], fill=(60, 60, 60), font=font)
        for k, (caption, image) in enumerate((("lower", lower), ("rest", rest), ("upper", upper))):
            if image is None:
                continue
            if id(image) not in small:
                small[id(image)] = Image.fromarray(image, "RGB").reduce(THUMBNAIL // cell)
            x = pad + k * (cell + pad)
            sheet.paste(small[id(image)], (x, y + label_h))
            draw.text((x + 3, y + label_h + cell - 15), caption, fill=(90, 90, 90), font=font)
    return np.asarray(sheet)


def render_object(path: Path, out_dir: Path, backend: str, title: str = "") -> dict:
    """Render the previews of the shipped file `path` into `out_dir` (see the module
    docstring) and return the content of previews.json; raises PreviewError."""
    import mujoco

    path, out_dir = Path(path), Path(out_dir)
    model, left_out = load_model(path)
    groups, body_joint = plan(model)
    _colour(model, body_joint, sorted(set(body_joint.values())))
    cam, box = camera(model, model.geom_group == SHOWN_GROUP)

    poses = [model.qpos0] + [g.ends[end] for g in groups for end in ("lower", "upper")]
    keys = [pose.tobytes() for pose in poses]
    unique = list(dict.fromkeys(keys))
    states = []
    for key in unique:
        states.append(mujoco.MjData(model))
        states[-1].qpos[:] = np.frombuffer(key)
    try:
        rendered = offscreen_frames(backend, model, states, cam, THUMBNAIL)
    except Exception as exc:  # a GL failure on this object: the object ships without previews
        raise PreviewError(f"rendering failed: {type(exc).__name__}: {exc}") from exc
    frames = [rendered[unique.index(key)] for key in keys]
    encoded = {id(frame): png_bytes(frame) for frame in rendered}

    out_dir.mkdir(parents=True, exist_ok=True)
    kinds = _kinds(model)
    views = [{"file": REST, "group": None, "end": "rest", "label": "rest", "pose": {}}]
    (out_dir / REST).write_bytes(encoded[id(frames[0])])
    rows = []
    for i, group in enumerate(groups):
        lower, upper = frames[1 + 2 * i], frames[2 + 2 * i]
        for end, frame in (("lower", lower), ("upper", upper)):
            qpos = group.ends[end]
            moved = [
                j
                for j in range(model.njnt)
                if kinds[j] and qpos[model.jnt_qposadr[j]] != model.qpos0[model.jnt_qposadr[j]]
            ]
            pose = {
                _joint_name(model, j): round(float(qpos[model.jnt_qposadr[j]]), 6) for j in moved
            }
            file = f"{group.name}-{end}.png"
            (out_dir / file).write_bytes(encoded[id(frame)])
            views.append(
                {"file": file, "group": group.name, "end": end, "label": group.label, "pose": pose}
            )
        rows.append((group.label, lower, upper))
    sheet = contact_sheet(title or path.parent.name, frames[0], rows)
    (out_dir / SHEET).write_bytes(png_bytes(sheet))
    document = {
        "format": 1,
        "model": path.name,
        "size": THUMBNAIL,
        "sheet": SHEET,
        "camera": {
            "azimuth": AZIMUTH,
            "elevation": ELEVATION,
            "fovy": FOVY,
            "lookat": [round(float(v), 6) for v in cam.lookat],
            "distance": round(float(cam.distance), 6),
            "rest_box": [[round(v, 6) for v in corner] for corner in box],
        },
        "meshes_left_out": left_out,
        "groups": [
            {"name": g.name, "label": g.label, "joints": [_joint_name(model, j) for j in g.joints]}
            for g in groups
        ],
        "views": views,
    }
    text = json.dumps(document, indent=1, sort_keys=True) + "\n"
    (out_dir / SHEET_JSON).write_text(text, encoding="utf-8")
    return document
