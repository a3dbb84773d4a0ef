"""Previews: rendered from the shipped file, at rest and at the limits, deterministic, cached,
listed in the release, and a build without a GL backend says why it has none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

import previews
from export.release import content_hash, verify_checksums
from previews import gl
from previews.card import GALLERY_CELL, GALLERY_COLUMNS, card_section, gallery_objects
from previews.render import LARGEST, MANY_JOINTS, PreviewError, load_model, plan
from tests.verify_assets import box, door_urdf, mesh, write

SLIDER_MJCF = """<mujoco model="slider">
  <worldbody>
    <geom type="box" size="0.3 0.3 0.3" pos="0 0 0.3" contype="0" conaffinity="0"/>
    <body name="tray" pos="0 -0.3 0.3">
      <joint name="slide" type="slide" axis="0 -1 0" range="0 0.4"/>
      <geom type="box" size="0.25 0.02 0.2" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>
"""


def pixels(path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB")).astype(int)


def tinted(rgb: np.ndarray) -> np.ndarray:
    """Pixels of the first driving joint's colour (orange: red well above blue); the fixed
    part is grey and the background white."""
    return (rgb[..., 0] - rgb[..., 2]) > 80


def test_a_door_is_shown_at_rest_and_at_its_limits_in_its_own_colour(tmp_path, gl_backend):
    folder = write(tmp_path / "door", {"object.urdf": door_urdf(lower=0.0, upper=1.5)})
    document = previews.render_object(previews.model_file(folder), tmp_path / "p", gl_backend.name)
    assert document["model"] == "object.urdf"
    assert [(v["file"], v["pose"]) for v in document["views"]] == [
        ("rest.png", {}),
        ("hinge-lower.png", {}),  # its lower limit is its rest pose
        ("hinge-upper.png", {"hinge": 1.5}),
    ]
    rest, lower, upper = (pixels(tmp_path / "p" / v["file"]) for v in document["views"])
    assert rest.shape == (previews.render.THUMBNAIL, previews.render.THUMBNAIL, 3)
    assert (rest == lower).all(), "the same pose gives the same pixels"
    door_rest, door_open = tinted(rest), tinted(upper)
    assert door_rest.sum() > 200 and door_open.sum() > 200, "the moving door is tinted"
    moved = np.abs(np.argwhere(door_open).mean(0) - np.argwhere(door_rest).mean(0)).max()
    assert moved > 10, "the open door is somewhere else in the picture"
    assert (rest[0, 0] == 255).all(), "white background"
    sheet = pixels(tmp_path / "p" / "sheet.png")
    assert sheet.shape[1] == 3 * previews.render.SHEET_CELL + 16 and tinted(sheet).sum() > 100
    assert json.loads((tmp_path / "p" / "previews.json").read_text()) == document


DRAWER = (
    f'<link name="drawer">{box((0.4, 0.02, 0.2), (0.0, -0.42, 0.2))}</link>'
    '<joint name="slide" type="prismatic"><parent link="frame"/><child link="drawer"/>'
    '<axis xyz="0 -1 0"/><limit lower="0" upper="0.3" effort="1" velocity="1"/></joint>'
)


def test_two_joints_are_shown_all_at_once_then_each_alone(tmp_path, gl_backend):
    folder = write(tmp_path / "cab", {"object.urdf": door_urdf(upper=1.5, extra=DRAWER)})
    document = previews.render_object(previews.model_file(folder), tmp_path / "p", gl_backend.name)
    assert [(v["file"], v["pose"]) for v in document["views"]] == [
        ("rest.png", {}),
        ("all-lower.png", {}),
        ("all-upper.png", {"hinge": 1.5, "slide": 0.3}),
        ("hinge-lower.png", {}),
        ("hinge-upper.png", {"hinge": 1.5}),
        ("slide-lower.png", {}),
        ("slide-upper.png", {"slide": 0.3}),
    ]
    out = tmp_path / "p"
    assert (out / "all-lower.png").read_bytes() == (out / "rest.png").read_bytes()
    both, door, drawer = (
        pixels(out / f) for f in ("all-upper.png", "hinge-upper.png", "slide-upper.png")
    )
    assert (both != door).any() and (both != drawer).any() and (door != drawer).any()


def test_a_mesh_with_too_few_vertices_is_left_out_and_said(tmp_path, gl_backend):
    triangle = "v 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nf 1 2 3\n"
    urdf = (
        f'<robot name="b"><link name="base">{box((0.3, 0.3, 0.3))}'
        f"{mesh('meshes/tri.obj')}</link></robot>"
    )
    folder = write(tmp_path / "b", {"object.urdf": urdf, "meshes/tri.obj": triangle})
    document = previews.render_object(previews.model_file(folder), tmp_path / "p", gl_backend.name)
    assert len(document["meshes_left_out"]) == 1 and (tmp_path / "p" / "rest.png").is_file()


def test_the_same_file_gives_the_same_bytes(tmp_path, gl_backend):
    folder = write(tmp_path / "door", {"object.urdf": door_urdf(lower=-0.5, upper=1.5)})
    for name in ("a", "b"):
        previews.render_object(previews.model_file(folder), tmp_path / name, gl_backend.name)
    files = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "b").iterdir())
    assert len(files) == 5  # rest, lower, upper, sheet, previews.json
    for name in files:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_an_object_without_moving_joints_has_its_rest_pose_only(tmp_path, gl_backend):
    urdf = f'<robot name="block"><link name="base">{box((0.3, 0.3, 0.3))}</link></robot>'
    folder = write(tmp_path / "block", {"object.urdf": urdf})
    document = previews.render_object(previews.model_file(folder), tmp_path / "p", gl_backend.name)
    assert [v["file"] for v in document["views"]] == ["rest.png"]
    assert tinted(pixels(tmp_path / "p" / "rest.png")).sum() == 0, "nothing moves: all grey"


def test_the_mjcf_beside_the_urdf_is_what_is_rendered(tmp_path, gl_backend):
    folder = write(tmp_path / "obj", {"object.urdf": door_urdf(), "object.xml": SLIDER_MJCF})
    assert previews.model_file(folder).name == "object.xml"
    document = previews.render_object(previews.model_file(folder), tmp_path / "p", gl_backend.name)
    assert document["model"] == "object.xml"
    assert [v["file"] for v in document["views"]] == [
        "rest.png",
        "slide-lower.png",
        "slide-upper.png",
    ]
    assert document["views"][2]["pose"] == {"slide": 0.4}


def test_an_unreadable_file_is_a_preview_error_not_a_traceback(tmp_path):
    folder = write(tmp_path / "bad", {"object.urdf": "<robot name='x'><link name='a'>"})
    with pytest.raises(PreviewError, match="MuJoCo cannot load object.urdf"):
        previews.render_object(previews.model_file(folder), tmp_path / "p", "egl")


def test_many_joints_show_all_at_once_and_the_largest_alone(sample_release):
    keyboard = next((sample_release / "objects").glob("sample_urdf__keyboard_*"))
    model, _ = load_model(keyboard / "object.urdf")
    groups, _ = plan(model)
    assert model.njnt > MANY_JOINTS
    assert [g.name for g in groups][0] == "all" and len(groups) == 1 + LARGEST
    assert len(groups[0].joints) == model.njnt
    assert all(len(g.joints) == 1 for g in groups[1:])


def test_a_mimic_follower_moves_with_its_leader(sample_release):
    bottle = next((sample_release / "objects").glob("sample_urdf__bottle_*"))
    model, _ = load_model(bottle / "object.urdf")
    groups, _ = plan(model)
    assert model.njnt == 2 and [g.joints for g in groups] == [[0]], "the follower drives nothing"
    upper = groups[0].ends["upper"]
    assert upper[model.jnt_qposadr[1]] != model.qpos0[model.jnt_qposadr[1]], "the cap rises"


def test_the_sample_release_ships_previews_for_every_object(sample_release, gl_backend):
    objects = pd.read_parquet(sample_release / "manifest" / "objects.parquet")
    assert objects["preview_path"].notna().all() and len(objects) == 40
    listed = (sample_release / "checksums.sha256").read_text().splitlines()
    listed = {line.split("  ", 1)[1] for line in listed}
    for row in objects.itertuples():
        sheet = sample_release / row.preview_path
        assert sheet.is_file() and sheet.name == "sheet.png"
        document = json.loads((sheet.parent / "previews.json").read_text())
        assert len(document["views"]) == 1 + 2 * len(document["groups"]) >= 3
        for view in document["views"]:
            assert f"objects/{row.object_id}/preview/{view['file']}" in listed
        assert row.n_files == sum(
            1
            for p in (sample_release / "objects" / row.object_id).rglob("*")
            if p.is_file() and "preview" not in p.parts
        ), "n_files counts the assets only"
    assert verify_checksums(sample_release) == []
    card = (sample_release / "README.md").read_text()
    assert "## Previews" in card and "40 of 40 objects have previews" in card


def test_the_content_hash_leaves_previews_out(tmp_path):
    for name in ("objects/a/object.urdf", "objects/a/meshes/preview.obj"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    assets = content_hash(tmp_path)
    (tmp_path / "objects/a/preview").mkdir()
    (tmp_path / "objects/a/preview/rest.png").write_bytes(b"pixels")
    assert content_hash(tmp_path) == assets
    (tmp_path / "objects/a/meshes/preview.obj").unlink()
    assert content_hash(tmp_path) != assets, "a mesh named preview is content"


def test_a_warm_rebuild_renders_nothing(builds, tmp_path, gl_backend):
    from samples.generate import generate_library

    generate_library(tmp_path / "lib", n=3)
    cold = builds.release(tmp_path / "lib", tmp_path / "cold", tmp_path / "cache")
    warm = builds.release(tmp_path / "lib", tmp_path / "warm", tmp_path / "cache")
    assert cold.stage_seconds["previews"] > 0 and "previews" not in warm.stage_seconds
    assert warm.cached == 3 and warm.content_hash == cold.content_hash
    sheets = sorted((tmp_path / "cold").glob("objects/*/preview/sheet.png"))
    assert len(sheets) == 3
    for sheet in sheets:
        assert (tmp_path / "warm" / sheet.relative_to(tmp_path / "cold")).read_bytes() == (
            sheet.read_bytes()
        )


@pytest.mark.slow
def test_without_gl_the_build_completes_and_the_card_says_why(tmp_path):
    from samples.generate import generate_library

    generate_library(tmp_path / "lib", n=3)
    env = {k: v for k, v in os.environ.items() if k != gl.ENV}
    env["MUJOCO_GL"] = "disable"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "flows.cli",
            "build",
            "--sources",
            str(tmp_path / "lib" / "sources.yaml"),
            "--out",
            str(tmp_path / "rel"),
            "--runner",
            "local",
            "--no-cache",
            "--workers",
            "1",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    objects = pd.read_parquet(tmp_path / "rel" / "manifest" / "objects.parquet")
    assert len(objects) == 3 and objects["preview_path"].isna().all()
    assert not list((tmp_path / "rel").glob("objects/*/preview"))
    card = (tmp_path / "rel" / "README.md").read_text()
    assert "Previews were not rendered for 3 of 3 objects" in card
    assert "skipped: MUJOCO_GL=disable turns rendering off" in card


def test_no_backend_names_what_failed_and_the_debian_packages(monkeypatch):
    monkeypatch.delenv(gl.ENV, raising=False)
    monkeypatch.delenv("MUJOCO_GL", raising=False)
    monkeypatch.setattr(gl, "_probe", lambda name: f"{name} has no display")
    gl.backend.cache_clear()
    try:
        found = gl.backend()
    finally:
        gl.backend.cache_clear()
    assert not found.available and found.identity() == "none"
    assert "egl: egl has no display; osmesa: osmesa has no display" in found.detail
    assert "libegl1 or libosmesa6" in found.detail


def test_the_probe_renders_a_frame_with_a_working_backend(gl_backend):
    assert gl._probe(gl_backend.name) is None
    assert "nonsense" in gl._probe("nonsense"), "a failing backend says what went wrong"


def _row(object_id, supercategory, status="pass", n_joints=2, preview=True):
    return {
        "object_id": object_id,
        "supercategory": supercategory,
        "category": "c",
        "status": status,
        "n_joints": n_joints,
        "preview_path": f"objects/{object_id}/preview/sheet.png" if preview else None,
    }


def test_the_gallery_takes_one_object_per_supercategory_that_shows_motion():
    rows = [
        _row("a_warned", "A", status="warn", n_joints=3),
        _row("a_still", "A", n_joints=0),
        _row("a_one", "A", n_joints=1),
        _row("a_two", "A", n_joints=2),
        _row("a_two_b", "A", n_joints=2),
        _row("b_no_preview", "B", preview=False),
        _row("b_many", "B", n_joints=40),
        _row("b_six", "B", n_joints=6),
        _row("c_none", "C", preview=False),
    ]
    chosen = gallery_objects(rows)
    assert [r["object_id"] for r in chosen] == ["a_two", "b_many"]


def test_the_card_shows_a_gallery_of_every_supercategory(sample_release, gl_backend):
    objects = pd.read_parquet(sample_release / "manifest" / "objects.parquet")
    card = (sample_release / "README.md").read_text()
    assert "![Gallery: one object per supercategory](plots/gallery.png)" in card
    for supercategory in objects["supercategory"].unique():
        assert f"| {supercategory} | " in card.split("## Previews")[1].split("## Statistics")[0]
    gallery = Image.open(sample_release / "plots" / "gallery.png")
    rows = -(-objects["supercategory"].nunique() // GALLERY_COLUMNS)
    assert gallery.height > rows * GALLERY_CELL and gallery.width > 3 * 3 * GALLERY_CELL
    assert "plots/gallery.png" in (sample_release / "checksums.sha256").read_text()


def test_the_readme_shows_a_small_contact_sheet():
    repo = Path(__file__).resolve().parents[1]
    sheet = repo / "docs" / "contact_sheet.png"
    assert "](docs/contact_sheet.png)" in (repo / "README.md").read_text(encoding="utf-8")
    assert sheet.stat().st_size < 200_000
    with Image.open(sheet) as image:
        assert image.format == "PNG" and image.width == 3 * previews.render.SHEET_CELL + 16


def test_the_card_counts_left_out_meshes_and_says_why_previews_are_missing(tmp_path):
    rows = [_row("a", "A", preview=False), _row("b", "B", preview=False), _row("c", "C")]
    rendered = {"rendered": True, "detail": "MuJoCo through egl", "groups": []}
    entries = {
        "a": {**rendered, "meshes_left_out": 2},
        "b": {"rendered": False, "detail": "failed: MuJoCo cannot load object.urdf: bad"},
        "c": {**rendered, "meshes_left_out": 0},
    }
    rows[2]["preview_path"] = None  # no image to compose: no gallery
    text = card_section(tmp_path, rows, entries)
    assert "2 of 3 objects have previews" in text
    assert "The previews of 1 objects leave out 2 meshes" in text
    assert "| failed: MuJoCo cannot load object.urdf: bad | 1 |" in text
    assert "gallery" not in text.lower() and not (tmp_path / "plots").exists()
