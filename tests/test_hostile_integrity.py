"""A release proves its integrity, and every problem with a command's own inputs is one line
with exit 2: `arena check` names every file missing, modified or added since the build;
`arena score`, `arena distance` and `--previous` refuse files that no longer match
checksums.sha256 (unless --accept-modified, which warns); `arena score` names predictions for
objects the release does not have; symbolic link loops among the inputs are named as such."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from scoring_support import CABINET, LAPTOP, checked_release

#: Each test builds a release: part of `make test`, not of `make test-fast`.
pytestmark = pytest.mark.slow

TIMEOUT = 300
REPO = Path(__file__).resolve().parents[1]


def arena(*args, cwd=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "MUJOCO_GL": "disable"}
    command = [sys.executable, "-m", "flows.cli", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, env=env)


def said(done: subprocess.CompletedProcess, command: str) -> list[str]:
    """The lines `arena <command>:` wrote to stderr; no traceback allowed."""
    assert "Traceback" not in done.stderr, done.stderr
    return [line for line in done.stderr.splitlines() if line.startswith(f"arena {command}:")]


@pytest.fixture
def release(sample_release, tmp_path) -> Path:
    """A copy of the session's sample release that a test may tamper with."""
    copy = tmp_path / "release"
    shutil.copytree(checked_release(sample_release), copy)
    return copy


def test_check_names_every_file_missing_modified_or_added(release):
    intact = arena("check", release)
    assert intact.returncode == 0 and "is intact" in intact.stdout, intact.stderr
    urdf = release / "objects" / LAPTOP / "object.urdf"
    urdf.write_text(urdf.read_text().replace("<robot", "<robot ", 1))
    (release / "objects" / CABINET / "object.xml").unlink()
    (release / "objects" / CABINET / "notes.txt").write_text("added")
    changed = arena("check", release)
    assert changed.returncode == 1
    assert set(changed.stdout.splitlines()) == {
        f"modified: objects/{LAPTOP}/object.urdf",
        f"missing: objects/{CABINET}/object.xml",
        f"added: objects/{CABINET}/notes.txt",
    }
    [line] = said(changed, "check")
    assert "3 file(s) differ" in line
    assert arena("check", release / "objects").returncode == 2


def test_score_refuses_a_modified_ground_truth_unless_told(release, tmp_path):
    preds = tmp_path / "preds"
    shutil.copytree(release / "objects" / LAPTOP, preds / LAPTOP)
    urdf = release / "objects" / LAPTOP / "object.urdf"
    urdf.write_text(urdf.read_text() + "<!-- edited after the build -->\n")
    args = ("score", "--release", release, "--pred", f"mine={preds}", "--subset", "all")
    refused = arena(*args, "--out", tmp_path / "refused", "--bootstrap", "10")
    assert refused.returncode == 2
    [line] = said(refused, "score")
    assert f"objects/{LAPTOP}/object.urdf is modified" in line and "--accept-modified" in line
    assert not (tmp_path / "refused").exists()
    accepted = arena(*args, "--out", tmp_path / "ok", "--bootstrap", "10", "--accept-modified")
    assert accepted.returncode == 0, accepted.stderr
    assert any("warning" in line and "object.urdf" in line for line in said(accepted, "score"))


def test_score_names_predictions_for_objects_the_release_does_not_have(release, tmp_path):
    preds = tmp_path / "preds"
    shutil.copytree(release / "objects" / LAPTOP, preds / LAPTOP)
    shutil.copytree(release / "objects" / LAPTOP, preds / "laptop_typo")
    out = tmp_path / "scores"
    done = arena(
        "score", "--release", release, "--pred", f"mine={preds}", "--out", out, "--bootstrap", "10"
    )
    assert done.returncode == 0, done.stderr
    [line] = said(done, "score")
    assert "--pred mine: 1 folder(s) name no object of the release" in line
    assert "laptop_typo" in line
    summary = json.loads((out / "summary.json").read_text())
    assert summary["unmatched_predictions"] == {"mine": ["laptop_typo"]}
    assert "laptop_typo" in (out / "report.md").read_text()


def test_distance_refuses_a_modified_release_object_and_names_missing_inputs(release, tmp_path):
    a = release / "objects" / LAPTOP
    assert arena("distance", a, a).returncode == 0
    (a / "object.urdf").write_text((a / "object.urdf").read_text() + "\n")
    refused = arena("distance", a, a)
    assert refused.returncode == 2
    [line] = said(refused, "distance")
    assert "object.urdf is modified" in line
    accepted = arena("distance", a, a, "--accept-modified")
    assert accepted.returncode == 0 and said(accepted, "distance"), accepted.stderr
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    for missing, why in ((tmp_path / "nothing.urdf", "does not exist"), (loop, "link loop")):
        done = arena("distance", missing, a, "--accept-modified")
        assert done.returncode == 2 and why in said(done, "distance")[-1]


def test_build_refuses_a_modified_previous(release, sample_library, tmp_path):
    manifest = release / "manifest" / "objects.parquet"
    manifest.write_bytes(manifest.read_bytes() + b"\0")
    done = arena(
        "build",
        "--sources",
        sample_library / "sources.yaml",
        "--out",
        tmp_path / "new",
        "--previous",
        release,
        "--runner",
        "local",
    )
    assert done.returncode == 2
    [line] = said(done, "build")
    assert "manifest/objects.parquet is modified" in line
    assert not (tmp_path / "new").exists()


def test_symbolic_link_loops_among_the_inputs_are_usage_errors(sample_library, tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    sources = tmp_path / "sources.yaml"
    sources.write_text(f"sources:\n  - {{name: x, format: urdf, path: {loop}, license: t}}\n")
    good = sample_library / "sources.yaml"
    cases = [
        ("--sources", loop, "--out", tmp_path / "o1"),
        ("--sources", sources, "--out", tmp_path / "o2"),
        ("--sources", good, "--out", loop),
        ("--sources", good, "--out", tmp_path / "o3", "--cache-dir", loop),
        ("--sources", good, "--out", tmp_path / "o4", "--previous", loop),
    ]
    for case in cases:
        done = arena("build", *case, "--runner", "local")
        assert done.returncode == 2, (case, done.stderr)
        assert len(said(done, "build")) == 1  # a sources file's problems are listed below it
        assert "symbolic link" in done.stderr or "Too many levels of symbolic links" in done.stderr
