"""Faults around a build (tests/test_flows_build.py has the vanishing source, corrupted cache
entries and the lock taken in-process; test_faults_kill.py kills builds): a source that becomes
unreadable mid-build, and concurrent `arena build` processes into one output and into
different ones."""

from __future__ import annotations

import builtins
import io
import json
import os
import shutil

import pyarrow.parquet as pq
import pytest
from test_faults_kill import Build

from flows.commands import EXIT_LOCKED
from pipeline import chain

pytestmark = pytest.mark.slow


def test_a_source_unreadable_mid_build_gives_rejections_that_are_not_cached(
    builds, sample_library, tmp_path, monkeypatch
):
    """Once the first object of sample_urdf is being computed, reading any file of that source
    fails with a permission error (as after a chmod or a lost mount). Its objects are rejected
    with a reason, the others are built, and those rejections are not cached: the next build
    recomputes and accepts them."""
    root = str(sample_library / "sample_urdf") + "/"
    real_open = io.open
    unreadable = False

    def guarded_open(file, *args, **kwargs):
        if unreadable and str(file).startswith(root):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    real_os_open = os.open

    def guarded_os_open(file, *args, **kwargs):  # what normalize.files reads with
        if unreadable and str(file).startswith(root):
            raise PermissionError(13, "Permission denied", str(file))
        return real_os_open(file, *args, **kwargs)

    original = chain.computed_outcome

    def compute(candidate, settings, cache=None):
        nonlocal unreadable
        unreadable = unreadable or candidate.source.name == "sample_urdf"
        return original(candidate, settings, cache)

    monkeypatch.setattr(chain, "computed_outcome", compute)
    monkeypatch.setattr(builtins, "open", guarded_open)
    monkeypatch.setattr(io, "open", guarded_open)
    monkeypatch.setattr(os, "open", guarded_os_open)
    cache = tmp_path / "cache"
    # workers=0: the objects are computed in this process, where the faults are patched in
    first = builds.release(sample_library, tmp_path / "first", cache, workers=0)
    monkeypatch.undo()

    by_source = {s["name"]: s for s in first.info["sources"]}
    assert by_source["sample_urdf"]["accepted"] == 0
    assert by_source["sample_urdf"]["rejected"] == by_source["sample_urdf"]["discovered"] > 0
    rejects = pq.read_table(tmp_path / "first" / "manifest" / "rejects.parquet").to_pylist()
    assert {r["source"] for r in rejects} == {"sample_urdf"}
    assert {r["code"] for r in rejects} == {"file.unreadable"}
    assert all("Permission denied" in r["message"] and r["path"] for r in rejects)
    others = [s for name, s in by_source.items() if name != "sample_urdf"]
    assert all(s["accepted"] == s["discovered"] for s in others)
    assert first.internal_errors == []

    second = builds.release(sample_library, tmp_path / "second", cache, workers=0)
    urdf_ids = sorted(r["object_id"] for r in _objects(tmp_path / "second", "sample_urdf"))
    assert second.computed == urdf_ids, "only the unreadable objects are recomputed"
    assert second.info["counts"]["accepted"] == second.info["counts"]["discovered"]


def _objects(out, source):
    rows = pq.read_table(out / "manifest" / "objects.parquet").to_pylist()
    return [r for r in rows if r["source"] == source]


def test_concurrent_builds_one_output_refused_different_outputs_both_succeed(
    sample_library, tmp_path
):
    cache = tmp_path / "cache"
    holder = Build(sample_library, tmp_path / "release", cache, pause="discover")
    holder.paused("discover")
    try:
        second = Build(sample_library, tmp_path / "release", cache)
        assert second.process.wait(120) == EXIT_LOCKED
        message = second.output()
        assert "another build is already writing" in message
        assert f"pid {holder.process.pid}" in message
        # a build into another output is not held up by the lock
        Build(sample_library, tmp_path / "other", cache).finish()
    finally:
        holder.kill()
    assert not (tmp_path / "release").exists()

    # two builds into different outputs at the same time, sharing one empty cache
    shared = tmp_path / "shared-cache"
    builds = [Build(sample_library, tmp_path / name, shared) for name in ("a", "b")]
    for build in builds:
        build.finish()
    hashes = {json.loads((tmp_path / n / "release.json").read_text())["content_hash"] for n in "ab"}
    assert len(hashes) == 1
    assert hashes == {json.loads((tmp_path / "other" / "release.json").read_text())["content_hash"]}
    shutil.rmtree(shared)
