"""Outputs apart from inputs: --out (and its staging folder beside it), the cache and the mesh
store may not lie inside a source root or hold one, nor lie inside one another; `arena build`
exits 2 with the reason before reading or writing anything."""

from __future__ import annotations

import re

import pytest
from hostile_library import build
from verify_assets import door_urdf, write

from pipeline.build import OutputsOverlapError, build_locally


def _library(tmp_path):
    write(tmp_path / "lib" / "control_a", {"door.urdf": door_urdf()})
    sources = tmp_path / "sources.yaml"
    sources.write_text(
        "sources:\n  - {name: lib, format: urdf, path: lib, license: test}\n", encoding="utf-8"
    )
    return sources


@pytest.mark.parametrize(
    ("out", "cache", "reason"),
    [
        ("lib/release", "cache", "--out .* is inside the root"),  # would ingest its staging
        ("lib", "cache", "--out .* is inside the root"),
        (".", "cache", "--out .* is around the root"),  # publishing would replace the library
        ("release", "release", "lie inside one another"),  # publishing would delete the cache
        ("release", "release/cache", "lie inside one another"),
        ("cache/release", "cache", "lie inside one another"),
        ("release", "lib/control_a/cache", "the cache .* is inside the root"),
    ],
)
def test_overlapping_outputs_are_refused_with_exit_2(builds, tmp_path, capsys, out, cache, reason):
    sources = _library(tmp_path)
    before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    code = build(builds, sources, tmp_path / out, tmp_path / cache)
    assert code == 2
    err = capsys.readouterr().err
    assert "outputs must lie apart" in err
    assert re.search(reason, err), err
    after = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    assert after == before, "nothing was written"


@pytest.mark.parametrize(
    ("out", "store", "reason"),
    [
        ("release", "release/meshes", "the mesh store .* lie inside one another"),
        ("release", "lib/meshes", "the mesh store .* is inside the root"),
    ],
)
def test_a_shared_mesh_store_must_lie_apart_too(builds, tmp_path, monkeypatch, out, store, reason):
    sources = _library(tmp_path)
    monkeypatch.setenv("ARENA_MESH_STORE", str(tmp_path / store))
    with pytest.raises(OutputsOverlapError, match=reason):
        build_locally(builds.config(sources, tmp_path / out, tmp_path / "cache"))
    assert not (tmp_path / out).exists()


def test_the_build_function_refuses_them_too(builds, tmp_path):
    sources = _library(tmp_path)
    config = builds.config(sources, tmp_path / "lib" / "release", tmp_path / "cache")
    with pytest.raises(OutputsOverlapError):
        build_locally(config)
    assert not (tmp_path / "lib" / "release").exists()


def test_outputs_beside_the_library_build(builds, tmp_path):
    sources = _library(tmp_path)
    assert build(builds, sources, tmp_path / "release", tmp_path / "cache") == 0
    assert build(builds, sources, tmp_path / "release", tmp_path / "cache", replace=True) == 0
