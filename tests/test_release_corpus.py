"""A release build of the whole shared corpus (tests/corpus_sources.yaml), without Prefect:
accounting per source, manifests valid against their schemas, every accepted URDF loads in
yourdfpy with its meshes, a warm rebuild gives byte-identical manifests, and the release as users
get it (tests/shipped_support.py): every shipped URDF and MJCF loads quietly in yourdfpy, MuJoCo
and PyBullet, `arena validate` passes its objects, normalizing it again changes nothing, masses
add up."""

from __future__ import annotations

import json
import logging

import pyarrow.parquet as pq
import pytest
import yaml
import yourdfpy
from shipped_support import (
    assert_files_meet_their_specifications,
    loud_files,
    mass_problems,
    mjcf_role_differences,
    renormalized_differences,
    validation_failures,
)
from test_release_paths import machine_paths_in

import schemas
from export import release
from export.digests import sha256_file
from export.manifests import TABLES
from normalize.adapters import discover
from verify.loaders import yourdfpy_problems

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def corpus_release(builds, corpus_sources, corpus_cache, tmp_path_factory):
    """A cold build into the session's `corpus_cache` (this module runs first: the cache is
    empty), then a warm one."""
    root = tmp_path_factory.mktemp("corpus_release")
    sources = list(corpus_sources.values())
    cold = builds.release(sources, root / "cold", corpus_cache, workers=2)
    warm = builds.release(sources, root / "warm", corpus_cache, workers=2)
    return root, cold, warm


def test_accounting_per_source(corpus_release, corpus_sources):
    root, cold, _ = corpus_release
    info = json.loads((root / "cold" / "release.json").read_text())
    schemas.validate(info, "release")
    rejects = pq.read_table(root / "cold" / "manifest" / "rejects.parquet").to_pylist()
    objects = pq.read_table(root / "cold" / "manifest" / "objects.parquet").to_pylist()
    for source, entry in zip(corpus_sources.values(), info["sources"], strict=True):
        assert entry["name"] == source.name
        discovered = {c.object_id for c in discover(source)}
        accepted = {o["object_id"] for o in objects if o["source"] == source.name}
        rejected = {r["object_id"] for r in rejects if r["source"] == source.name}
        assert entry["discovered"] == len(discovered) == entry["accepted"] + entry["rejected"]
        assert accepted | rejected == discovered and not accepted & rejected, source.name
    assert cold.internal_errors == []
    assert all(r["stage"] and r["code"] and r["message"] for r in rejects)
    assert len(objects) > len(rejects), "most of the real corpus is accepted"


def test_manifests_validate_against_their_schemas(corpus_release):
    root, _, _ = corpus_release
    for table in TABLES:
        rows = pq.read_table(root / "cold" / "manifest" / f"{table}.parquet").to_pylist()
        assert rows, f"the corpus gives {table} rows"
        for row in rows:
            schemas.validate(row, table)


def test_every_accepted_urdf_loads_in_yourdfpy(corpus_release, caplog):
    root, _, _ = corpus_release
    out = root / "cold"
    objects = pq.read_table(out / "manifest" / "objects.parquet").to_pylist()
    with caplog.at_level(logging.WARNING, logger="yourdfpy"):
        for row in objects:
            urdf = yourdfpy.URDF.load(str(out / row["urdf_path"]), load_meshes=True)
            assert yourdfpy_problems(urdf) == [], row["object_id"]
            moving = [j for j in urdf.robot.joints if j.type != "fixed"]
            assert len(moving) == row["n_joints"], row["object_id"]
    problems = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert problems == [], problems[:5]


def test_shipped_files_meet_their_specifications(corpus_release):
    """Every object.urdf passes yourdfpy's validate() and has what the URDF specification
    requires; every object.xml compiles in MuJoCo without a warning."""
    root, _, _ = corpus_release
    assert_files_meet_their_specifications(root / "cold")


def test_warm_rebuild_gives_identical_manifests(corpus_release):
    root, cold, warm = corpus_release
    assert warm.cached == cold.info["counts"]["discovered"] and warm.computed == []
    for table in TABLES:
        name = f"manifest/{table}.parquet"
        assert (root / "warm" / name).read_bytes() == (root / "cold" / name).read_bytes(), name
    assert warm.content_hash == cold.content_hash
    assert release.verify_checksums(root / "warm") == []


def test_every_object_has_its_source_url_revision_and_file_digests(corpus_release, corpus_sources):
    root, _, _ = corpus_release
    out = root / "cold"
    objects = pq.read_table(out / "manifest" / "objects.parquet").to_pylist()
    files = pq.read_table(out / "manifest" / "source_files.parquet").to_pylist()
    by_object: dict[str, list[dict]] = {}
    for row in files:
        by_object.setdefault(row["object_id"], []).append(row)
    for o in objects:
        source = corpus_sources[o["source"]]
        assert source.url and source.revision, f"{source.name} has its provenance"
        assert (o["source_url"], o["source_revision"]) == (source.url, source.revision)
        rows = by_object[o["object_id"]]
        assert o["source_path"] in {r["path"] for r in rows}, "the entry file is listed"
        for r in rows[:3]:
            assert sha256_file(source.path / r["path"]) == r["sha256"], r
    assert set(by_object) == {o["object_id"] for o in objects}
    assert (out / "sources.yaml").is_file()


def test_no_shipped_file_holds_a_path_of_the_build_machine(corpus_release, corpus):
    root, _, _ = corpus_release
    assert machine_paths_in(root / "cold", [corpus, root]) == []


def test_the_card_flags_the_non_commercial_sources_and_loads_with_thumbnails(
    corpus_release, monkeypatch
):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    out = corpus_release[0] / "cold"
    front = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])
    assert len(front["source_datasets"]) == 13, "16 sources, pybullet and sdformat in 3 and 2"
    assert (
        "partnet_mobility, gensim2_partnet, gapartnet are licensed for non-commercial"
        in (front["extra_gated_prompt"])
    )
    cache = corpus_release[0] / "hf-cache"
    for split in datasets.load_dataset(str(out), cache_dir=str(cache)).values():
        assert isinstance(split.features["thumbnail"], datasets.Image)
        for row in split:
            assert (row["thumbnail"] is None) == (row["preview_path"] is None), row["object_id"]


def test_every_shipped_file_loads_without_a_printed_warning(corpus_release):
    root, _, _ = corpus_release
    assert loud_files(root / "cold") == {}


def test_the_mjcf_reads_back_with_the_urdf_visuals_and_collisions(corpus_release):
    root, _, _ = corpus_release
    assert mjcf_role_differences(root / "cold") == []


def test_the_release_objects_validate(corpus_release):
    root, _, _ = corpus_release
    assert validation_failures(root / "cold") == []


def test_normalizing_the_release_again_changes_nothing(corpus_release, tmp_path):
    root, _, _ = corpus_release
    assert renormalized_differences(root / "cold", tmp_path) == []


def test_links_with_shapes_have_mass_and_objects_mass_is_their_sum(corpus_release):
    root, _, _ = corpus_release
    assert mass_problems(root / "cold") == []
