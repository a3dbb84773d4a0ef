"""The scale run of bench/scale.py in small: `arena generate --n 300` and a build of it (worker
processes, no Prefect), with the accounting and the validity of the release checked. Not timed:
bench/scale.py measures 1,000 to 20,000 objects."""

from __future__ import annotations

import json
from collections import Counter

import pyarrow.parquet as pq
import pytest

import pipeline.build
import schemas
from export import release
from export.manifests import TABLES
from normalize.adapters import discover
from normalize.sources import load_sources
from samples.generate import generate_library

pytestmark = pytest.mark.slow
N_OBJECTS = 300


def test_generated_library_of_300_objects_builds_into_a_valid_release(
    builds, tmp_path, monkeypatch
):
    library = tmp_path / "library"
    generate_library(library, n=N_OBJECTS, seed=1)
    sources = load_sources(library / "sources.yaml")
    discovered = {s.name: len(discover(s)) for s in sources}
    assert sum(discovered.values()) == N_OBJECTS

    out = tmp_path / "release"
    result = builds.release(sources, out, tmp_path / "cache", workers=2)

    info = json.loads((out / "release.json").read_text())
    schemas.validate(info, "release")
    assert info["counts"]["discovered"] == N_OBJECTS
    for s in info["sources"]:
        assert s["discovered"] == discovered[s["name"]] == s["accepted"] + s["rejected"]
    assert result.internal_errors == [] and result.cached == 0
    tables = {t: pq.read_table(out / "manifest" / f"{t}.parquet").to_pylist() for t in TABLES}
    for name, rows in tables.items():
        for row in rows:
            schemas.validate(row, name)
    objects = tables["objects"]
    assert len(objects) + len(tables["rejects"]) == N_OBJECTS
    assert len(objects) == N_OBJECTS, [r["code"] for r in tables["rejects"]]
    assert len({o["object_id"] for o in objects}) == N_OBJECTS
    assert sorted(p.name for p in (out / "objects").iterdir()) == sorted(
        o["object_id"] for o in objects
    )
    assert all((out / o["urdf_path"]).is_file() for o in objects)
    moving = Counter(j["object_id"] for j in tables["joints"] if j["type"] != "fixed")
    assert all(moving[o["object_id"]] == o["n_joints"] for o in objects)
    assert sum(o["eval200"] for o in objects) == 200
    assert release.verify_checksums(out) == []
    assert result.stage_seconds.keys() >= {
        "discover",
        "parse",
        "convention",
        "meshes",
        "inertia",
        "verify",
        "taxonomy",
        "export",
        "assemble",
    }

    # the warm rebuild, with every source looked up by the worker processes (as sources of
    # 1,000 objects and more are)
    monkeypatch.setattr(pipeline.build, "LOOKUPS_IN_WORKERS", 1)
    warm = builds.release(sources, tmp_path / "warm", tmp_path / "cache", workers=2)
    assert warm.cached == N_OBJECTS and warm.computed == []
    assert warm.content_hash == result.content_hash
    for table in TABLES:
        path = f"manifest/{table}.parquet"
        assert (tmp_path / "warm" / path).read_bytes() == (out / path).read_bytes()
