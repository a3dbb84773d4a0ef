"""Discovery says what it skipped: files that look like another format's entry, entries left out
by the source's patterns, files of the format that are no entry; a source with no candidates
fails the build (exit 1) unless the sources file allows it (`allow_empty: true`). Skipped files
are listed in the build summary, release.json and the card."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from verify_assets import door_urdf, urdf_source, write

from flows.commands import EXIT_FAILED, EXIT_OK
from normalize.adapters import discover
from normalize.discovery import skipped_files
from normalize.sources import load_sources

REPO = Path(__file__).resolve().parents[1]


def test_skipped_files_by_reason(tmp_path):
    root = write(
        tmp_path / "lib",
        {
            "a/door.urdf": door_urdf(),
            "a/package.xml": "<package/>",
            "b/world.sdf": "<sdf/>",
            "b/scene.world": "<sdf/>",
            "old/door.urdf": door_urdf(),
            "a/mesh.obj": "v 0 0 0\n",
            "a/notes.txt": "not an entry",
        },
    )
    source = urdf_source(root, exclude=("old/*",))
    candidates = discover(source)
    assert [c.source_id for c in candidates] == ["a/door"]
    skipped = skipped_files(source, candidates)
    assert skipped == {
        "not_selected": {"count": 1, "examples": ["old/door.urdf"]},
        "other_format": {
            "count": 3,
            "examples": ["a/package.xml", "b/scene.world", "b/world.sdf"],
        },
    }
    assert skipped_files(urdf_source(root, entry="a/*.urdf"), candidates)["not_selected"] == {
        "count": 1,
        "examples": ["old/door.urdf"],
    }


def test_a_partnet_folder_keeps_its_urdf_variants(tmp_path):
    root = write(tmp_path / "pm", {"100/mobility.urdf": door_urdf(), "100/variant.urdf": ""})
    source = urdf_source(root)
    source = type(source)(**{**source.__dict__, "format": "partnet_mobility"})
    assert skipped_files(source, discover(source)) == {}


def sources_file(tmp_path, allow_empty: bool | None) -> Path:
    library = write(
        tmp_path / "library",
        {
            "doors/door.urdf": door_urdf(),
            "doors/broken.urdf": "<robot name='broken'>",
            "doors/model.sdf": "<sdf/>",
            "empty/readme.xml": "<nothing/>",
        },
    )
    empty = {"name": "empty", "format": "urdf", "path": "empty", "license": "test"}
    if allow_empty is not None:
        empty["allow_empty"] = allow_empty
    doors = {"name": "doors", "format": "urdf", "path": "doors", "license": "test"}
    path = library / "sources.yaml"
    path.write_text(yaml.safe_dump({"sources": [doors, empty]}))
    return path


def test_a_source_without_candidates_fails_the_build(builds, tmp_path, capsys):
    sources = sources_file(tmp_path, allow_empty=None)
    assert load_sources(sources)[1].allow_empty is False
    assert builds.command(sources, tmp_path / "out") == EXIT_FAILED
    err = capsys.readouterr().err
    assert "source 'empty': discovery found no urdf candidates" in err
    assert "1 other_format (e.g. readme.xml)" in err and "allow_empty: true" in err
    assert not (tmp_path / "out").exists()


def test_allow_empty_builds_and_every_skipped_file_is_reported(builds, tmp_path, capsys):
    sources = sources_file(tmp_path, allow_empty=True)
    out = tmp_path / "out"
    assert builds.command(sources, out) == EXIT_OK
    summary = capsys.readouterr().out
    assert "skipped 1 files (other_format, e.g. model.sdf)" in summary
    assert "skipped 1 files (other_format, e.g. readme.xml)" in summary
    details = out.absolute() / "manifest" / "rejects.parquet"
    assert (
        f"rejected by code: xml.truncated 1 (each with its message, file and element in {details})"
        in summary
    )
    info = json.loads((out / "release.json").read_text())
    by_name = {s["name"]: s for s in info["sources"]}
    assert by_name["empty"]["discovered"] == 0
    assert info["counts"]["rejects_by_code"] == {"xml.truncated": 1}
    assert by_name["doors"]["skipped"] == {"other_format": {"count": 1, "examples": ["model.sdf"]}}
    card = (out / "README.md").read_text()
    assert "## Discovery" in card
    assert "| empty | 0 | other_format | 1 | readme.xml |" in card
    assert "Sources without any candidate (allowed by `allow_empty`): empty." in card


@pytest.mark.parametrize("runner", ["local", "process"])
def test_an_empty_source_folder_is_said_before_anything_starts(tmp_path, runner):
    """An empty folder is a usage error said in one line before the build starts anything
    (Prefect's server included), as a missing folder is; a folder holding only files that are
    no candidates is said once discovery has run (the test above), before the server too."""
    write(tmp_path / "library" / "doors", {"door.urdf": door_urdf()})
    (tmp_path / "library" / "nothing").mkdir()
    sources = tmp_path / "library" / "sources.yaml"
    sources.write_text(
        "sources:\n  - {name: doors, format: urdf, path: doors, license: t}\n"
        "  - {name: nothing, format: urdf, path: nothing, license: t}\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "flows.cli", "build", "--sources", str(sources)]
    command += ["--out", str(tmp_path / "out"), "--runner", runner, "--no-cache"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"arena build: source folder(s) empty: 'nothing' ({tmp_path / 'library' / 'nothing'}); "
        "fix the path, or set `allow_empty: true` for the source in the sources file"
    ]
    assert not (tmp_path / "out").exists()


def test_the_first_line_of_a_build_says_which_cache_it_uses(builds, tmp_path, capsys):
    """Empty, holding results of earlier builds (perhaps of another checkout), or none."""
    sources = sources_file(tmp_path, allow_empty=True)
    cache = tmp_path / "cache"
    for out, said in (("a", "(empty: every object"), ("b", "(holds 2 results of earlier builds")):
        code = builds.command(sources, tmp_path / out, cache)
        assert code == EXIT_OK
        assert (
            capsys.readouterr().err.splitlines()[0].startswith(f"arena build: cache {cache} {said}")
        )
    builds.command(sources, tmp_path / "c")
    assert capsys.readouterr().err.splitlines()[0] == (
        "arena build: no cache (--no-cache): every object is computed"
    )
