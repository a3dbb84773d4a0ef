"""The release build without Prefect (`runner="local"`), on the generated sample library:
accounting, schemas, determinism, the content cache, atomic publishing, the lock, the changelog
and the command line's exit codes. tests/test_flows_prefect.py runs the same build in Prefect."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import mujoco
import pyarrow.parquet as pq
import pytest
import yaml
from verify_assets import door_urdf, write

import schemas
from export import release
from export.manifests import TABLES
from export.outcome import ObjectOutcome
from flows.commands import EXIT_LOCKED, EXIT_OK, EXIT_USAGE
from normalize import collision_parts
from normalize.mechanism import DEPTH_TOLERANCE
from normalize.sources import load_sources
from pipeline.build import AccountingError, SourceRun, check_accounting, plan_batches
from pipeline.cache import ObjectCache
from taxonomy import stats
from taxonomy.stats import PLOTS

#: Each test builds a release: part of `make test`, not of `make test-fast`.
pytestmark = pytest.mark.slow


@pytest.fixture()
def own_library(sample_library, tmp_path) -> Path:
    """A private copy of the demo library that a test may edit."""
    copy = tmp_path / "library"
    shutil.copytree(sample_library, copy)
    return copy


def rejects(out: Path) -> list[dict]:
    return pq.read_table(out / "manifest" / "rejects.parquet").to_pylist()


def manifests(out: Path) -> dict[str, bytes]:
    return {t: (out / "manifest" / f"{t}.parquet").read_bytes() for t in TABLES}


@pytest.fixture(scope="session")
def demo_release(builds, sample_library, tmp_path_factory):
    """A cold build of the demo library with a fresh cache (shared by read-only tests)."""
    root = tmp_path_factory.mktemp("demo_release")
    result = builds.release(sample_library, root / "release", root / "cache")
    return result, root


def test_demo_build_accounts_for_every_object_and_validates(demo_release):
    result, root = demo_release
    out = root / "release"
    info = json.loads((out / "release.json").read_text())
    schemas.validate(info, "release")
    assert info["counts"]["discovered"] == 40
    parts = info["collision_parts"]
    assert parts["contacts"] == f"mujoco {mujoco.__version__}"
    assert parts["parameters"]["max_parts_per_mesh"] == collision_parts.MAX_PARTS
    assert parts["parameters"]["max_parts_per_object"] == collision_parts.MAX_OBJECT_PARTS
    assert parts["parameters"]["max_rounds_few_contacts"] == collision_parts.MAX_FEW_ROUNDS
    assert parts["parameters"]["max_pieces_apart"] == collision_parts.MAX_APART
    assert parts["parameters"]["depth_tolerance_m"] == DEPTH_TOLERANCE == 0.001
    for s in info["sources"]:
        assert s["discovered"] == s["accepted"] + s["rejected"]
    assert result.internal_errors == []
    tables = {t: pq.read_table(out / "manifest" / f"{t}.parquet") for t in TABLES}
    for name, table in tables.items():
        for row in table.to_pylist():
            schemas.validate(row, name)
    objects = tables["objects"].to_pylist()
    assert len(objects) + tables["rejects"].num_rows == 40
    assert len(objects) >= 38, "the generated library is made to be accepted"
    for row in objects:
        assert (out / row["urdf_path"]).is_file()
        assert row["split"] in ("train", "validation", "test")
    # The demo set holds one object twice (keyboard 0019 as URDF and 0031 as MJCF: the demo
    # keyboards differ only in a key travel drawn from 21 values, and these two drew the same).
    canonical = [r for r in objects if r["is_canonical"]]
    assert len(canonical) == len(objects) - 1
    assert (
        tables["duplicates"].column("cluster_id").to_pylist()
        == ["sample_urdf__keyboard_0019__keyboard_0019"] * 2
    )
    assert [r["object_id"] for r in objects if r["eval200"]] == [
        r["object_id"] for r in canonical
    ], "fewer than 200: every canonical object is in eval200"
    joint_types = {r["type"] for r in tables["joints"].to_pylist()}
    assert {"revolute", "prismatic", "continuous", "helical"} <= joint_types
    assert release.verify_checksums(out) == []
    assert sorted(p.name for p in (out / "objects").iterdir()) == sorted(
        r["object_id"] for r in objects
    )
    card = (out / "README.md").read_text()
    front = yaml.safe_load(card.split("---\n")[1])
    assert front["license"] == "cc0-1.0"
    assert [c["config_name"] for c in front["configs"]][0] == "objects"
    licenses = (out / "LICENSES.md").read_text()
    assert all(f"## {s['name']}" in licenses for s in info["sources"])
    assert (out / "plots").is_dir() and any((out / "plots").glob("*.png"))
    assert "First release" in (out / "CHANGELOG.md").read_text()
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(".release.build")] == []


def test_warm_rebuild_reuses_every_object_and_gives_identical_manifests(
    builds, demo_release, sample_library, monkeypatch
):
    result, root = demo_release
    assert result.cached == 0 and len(result.computed) == 40

    def refuse():
        raise AssertionError("a plot drawn although the cache holds it")

    monkeypatch.setattr(stats, "_figure", refuse)
    warm = builds.release(sample_library, root / "warm", root / "cache")
    assert warm.cached == 40 and warm.computed == []
    assert manifests(root / "warm") == manifests(root / "release")
    for plot in PLOTS.values():
        assert (root / "warm" / "plots" / plot).read_bytes() == (
            root / "release" / "plots" / plot
        ).read_bytes()
    assert warm.content_hash == result.content_hash
    assert release.verify_checksums(root / "warm") == []


def test_worker_processes_give_the_same_manifests(builds, demo_release, sample_library, tmp_path):
    """Objects computed in spawned worker processes (other hash seeds, fresh mesh caches)
    give byte-identical manifests."""
    _, root = demo_release
    result = builds.release(sample_library, tmp_path / "parallel", workers=2)
    assert len(result.computed) == 40
    assert manifests(tmp_path / "parallel") == manifests(root / "release")


def test_editing_one_mesh_recomputes_exactly_the_objects_that_read_it(
    builds, own_library, tmp_path
):
    cache = tmp_path / "cache"
    first = builds.release(own_library, tmp_path / "r1", cache)
    assert len(first.computed) == 40
    mesh = next(p for p in sorted((own_library / "sample_urdf").rglob("*.obj")))
    users = [
        o
        for o in _inputs_by_object(cache)
        if str(mesh) in _inputs_by_object(cache)[o]  # objects whose recorded inputs hold it
    ]
    assert users, f"no object recorded {mesh}"
    with open(mesh, "a") as f:
        f.write("# edited\n")
    second = builds.release(own_library, tmp_path / "r2", cache)
    assert second.computed == sorted(users)
    assert second.cached == 40 - len(users)


def _inputs_by_object(cache: Path) -> dict[str, set[str]]:
    """object_id -> input paths, from the cache entries (what each object read)."""
    out = {}
    for entry in (ObjectCache(cache).root / "entries").glob("*/*/entry.json"):
        data = json.loads(entry.read_text())
        out[data["outcome"]["object_id"]] = set(data["inputs"])
    return out


def test_corrupted_cache_entries_are_recomputed(builds, own_library, tmp_path):
    cache = tmp_path / "cache"
    first = builds.release(own_library, tmp_path / "r1", cache)
    entries = sorted((ObjectCache(cache).root / "entries").glob("*/*/files/*.urdf"))
    assert entries[0].stat().st_mode & 0o777 == 0o444, "shared files are read-only"
    entries[0].chmod(0o644)
    entries[0].write_text("<robot name='tampered'/>")  # hard-linked: the release sees it too
    jsons = sorted((ObjectCache(cache).root / "entries").glob("*/*/entry.json"))
    jsons[1].write_bytes(jsons[1].read_bytes()[:100])  # truncated
    second = builds.release(own_library, tmp_path / "r2", cache)
    assert len(second.computed) == 2
    assert second.content_hash == first.content_hash
    assert release.verify_checksums(tmp_path / "r2") == []


def test_a_source_vanishing_mid_build_gives_rejections(builds, own_library, tmp_path, monkeypatch):
    """Objects whose files disappear after discovery are rejected with a reason; the rest of
    the release is built and the accounting holds."""
    from pipeline import chain

    original = chain.computed_outcome
    gone = own_library / "sample_mjcf"

    def vanish_then_compute(candidate, settings, cache=None):
        if candidate.source.name == "sample_mjcf" and gone.exists():
            shutil.rmtree(gone)
        return original(candidate, settings, cache)

    monkeypatch.setattr(chain, "computed_outcome", vanish_then_compute)
    result = builds.release(own_library, tmp_path / "out", workers=0)  # patched
    info = result.info
    mjcf = next(s for s in info["sources"] if s["name"] == "sample_mjcf")
    assert mjcf["discovered"] == 9 and mjcf["rejected"] == 9 and mjcf["accepted"] == 0
    rejects = pq.read_table(tmp_path / "out" / "manifest" / "rejects.parquet").to_pylist()
    assert {r["source"] for r in rejects} == {"sample_mjcf"}
    assert all(r["code"] and r["message"] for r in rejects)
    assert info["counts"]["accepted"] >= 29
    assert result.internal_errors == []


def test_failed_build_leaves_the_earlier_release_untouched(
    builds, demo_release, sample_library, tmp_path, monkeypatch
):
    _, root = demo_release
    out = tmp_path / "release"
    shutil.copytree(root / "release", out)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def broken(*args, **kwargs):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(release, "write_checksums", broken)
    with pytest.raises(OSError, match="disk full"):
        builds.release(sample_library, out, root / "cache", replace=True)
    after = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release"], "no staging, no lock"


def test_changelog_against_previous(builds, own_library, tmp_path):
    cache = tmp_path / "cache"
    builds.release(own_library, tmp_path / "v1", cache)
    removed, edited = sorted(p.name for p in (own_library / "sample_urdf").iterdir())[:2]
    shutil.rmtree(own_library / "sample_urdf" / removed)
    mesh = next((own_library / "sample_urdf" / edited).rglob("*.obj"))
    with open(mesh, "a") as f:
        f.write("v 0 0 0\n")
    result = builds.release(
        own_library, tmp_path / "v2", cache, version="2.0", previous=tmp_path / "v1"
    )
    log = (tmp_path / "v2" / "CHANGELOG.md").read_text()
    assert "## 2.0 (against test)" in log
    assert "- removed: 1" in log and f"sample_urdf__{removed}" in log
    assert "- modified (URDF or asset content changed): 1" in log
    assert f"sample_urdf__{edited}" in log
    assert result.info["previous"]["version"] == "test"


def test_accounting_mismatch_fails_loudly(demo_release, sample_library):
    result, root = demo_release
    source = load_sources(sample_library / "sources.yaml")[0]
    outcome = ObjectOutcome("a", source.name, "a", None, accepted=True)
    run = SourceRun(source, ["a", "b"], [outcome])
    with pytest.raises(AccountingError, match="without outcome: \\['b'\\]"):
        check_accounting([run])
    with pytest.raises(AccountingError, match="counted twice"):
        check_accounting([SourceRun(source, ["a"], [outcome, outcome])])


def test_finished_batches_outcomes_are_written_out_not_kept(sample_library, tmp_path, monkeypatch):
    import gc
    import weakref

    from pipeline import build

    source = load_sources(sample_library / "sources.yaml")[0]
    ids = [f"o{k}" for k in range(40)]
    candidates = [SimpleNamespace(object_id=i) for i in ids]
    found = build.DiscoveredSource(source, candidates, 0.0, {})
    made = []

    def run_batch(batch, settings, pool, on_outcome):
        outcomes = [
            ObjectOutcome(c.object_id, source.name, "", None, True, rows={"objects": [{"n": 1.5}]})
            for c in batch.candidates
        ]
        made.extend(weakref.ref(o) for o in outcomes)
        return outcomes

    monkeypatch.setattr(build, "run_batch", run_batch)
    config = build.BuildConfig([source], tmp_path / "out", "test", batch_size=8, workers=2)
    settings = build.BatchSettings(tmp_path / "staging", None, (), ())
    staged = build.StagedBuild(config, settings, 0.0, {})
    [run] = build.run_sources_locally([found], staged, None, build.NoProgress())
    gc.collect()
    assert len(made) == 40 and not any(ref() for ref in made), "outcomes kept in memory"
    assert len(run.outcomes) == 40
    read_back = sorted(run.outcomes, key=lambda o: o.object_id)
    assert [o.object_id for o in read_back] == sorted(ids)
    assert read_back[0].rows == {"objects": [{"n": 1.5}]} and read_back[0].accepted


def test_plan_batches():
    items = list(range(10))
    assert plan_batches(items, 64, 2) == [items], "under 8 objects per worker: one batch"
    sixteen = list(range(16))
    assert plan_batches(sixteen, 64, 2) == [sixteen[:8], sixteen[8:]]
    assert plan_batches(sixteen, 64, 4) == [sixteen[:8], sixteen[8:]]
    assert plan_batches(items, 3, 1) == [items[0:3], items[3:6], items[6:9], items[9:]]
    assert plan_batches(items[:1], 64, 4) == [[0]]
    assert plan_batches([], 64, 2) == []
    many = list(range(20_000))
    batches = plan_batches(many, 64, 2)
    assert len(batches) == 64 and sum(len(b) for b in batches) == 20_000


def test_command_usage_errors(builds, sample_library, tmp_path, capsys):
    assert builds.command(sample_library, tmp_path / "o", runner="spark") == EXIT_USAGE
    assert "--runner" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("sources: [{name: x}]\n")
    assert builds.command(bad, tmp_path / "o") == EXIT_USAGE
    assert "problem" in capsys.readouterr().err
    assert builds.command(sample_library, tmp_path / "o", previous=tmp_path) == EXIT_USAGE
    assert "not a release" in capsys.readouterr().err
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    assert builds.command(sample_library, precious) == EXIT_USAGE
    assert (precious / "notes.txt").read_text() == "keep me"
    assert builds.command(sample_library, tmp_path / "o", batch_size=0) == EXIT_USAGE
    data = yaml.safe_load((sample_library / "sources.yaml").read_text())
    for entry in data["sources"]:
        entry["path"] = str(sample_library / entry["path"])
    data["sources"][0]["overrides"] = {"anything": "not_a_category"}
    bad_overrides = tmp_path / "overrides_sources.yaml"
    bad_overrides.write_text(yaml.safe_dump(data))
    assert builds.command(bad_overrides, tmp_path / "o") == EXIT_USAGE
    assert "not_a_category" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_the_old_runner_name_still_works_and_says_it_is_deprecated(
    builds, sample_library, tmp_path, capsys
):
    # batch size 0 stops the command after the runner is read, before any build starts
    assert (
        builds.command(sample_library, tmp_path / "o", runner="thread", batch_size=0) == EXIT_USAGE
    )
    err = capsys.readouterr().err
    assert "--runner thread is deprecated, use --runner process" in err
    assert "--batch-size and --workers must be at least 1" in err


def test_arena_version_names_the_project_convention_and_taxonomy_versions():
    from importlib.metadata import version

    from typer.testing import CliRunner

    from flows.cli import app
    from normalize.convention import CONVENTION_VERSION
    from taxonomy.data import load_taxonomy

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == (
        f"arena {version('articulate-arena-pipeline')} (convention {CONVENTION_VERSION}, "
        f"taxonomy {load_taxonomy().version})"
    )


def test_command_refuses_a_locked_out_and_builds_otherwise(
    builds, sample_library, tmp_path, capsys
):
    out = tmp_path / "release"
    with release.build_lock(out):
        assert builds.command(sample_library, out) == EXIT_LOCKED
        assert "already writing" in capsys.readouterr().err
    assert not out.exists()
    assert builds.command(sample_library, out) == EXIT_OK
    text = capsys.readouterr().out
    assert f"written to {out.absolute()}" in text and "40 discovered" in text


def test_an_existing_release_is_replaced_only_with_replace(
    builds, demo_release, sample_library, tmp_path
):
    _, root = demo_release
    out = tmp_path / "release"
    shutil.copytree(root / "release", out)
    before = (out / "release.json").read_bytes()
    with pytest.raises(release.ReleaseExists, match="--replace"):
        builds.release(sample_library, out, root / "cache")
    assert (out / "release.json").read_bytes() == before, "refused under the lock too"
    cache = root / "cache"
    assert builds.command(sample_library, out, cache) == EXIT_LOCKED == 3
    assert (out / "release.json").read_bytes() == before
    assert builds.command(sample_library, out, cache, replace=True) == EXIT_OK
    assert (out / "release.json").read_bytes() != before


def test_versions_are_unique_per_day(builds, sample_library, tmp_path, capsys):
    today = release.default_version()
    first, second, third = (tmp_path / "releases" / n for n in ("a", "b", "c"))
    cache = tmp_path / "cache"
    kwargs = dict(version=None)
    assert builds.command(sample_library, first, cache, **kwargs) == EXIT_OK
    assert release.read_release(first)["version"] == today
    assert builds.command(sample_library, second, cache, previous=first, **kwargs) == EXIT_OK
    assert release.read_release(second)["version"] == f"{today}-2"
    assert f"## {today}-2 (against {today})" in (second / "CHANGELOG.md").read_text()
    assert builds.command(sample_library, first, cache, replace=True, **kwargs) == EXIT_OK
    assert release.read_release(first)["version"] == f"{today}-3", "distinct from both"
    capsys.readouterr()
    assert (
        builds.command(sample_library, third, previous=second, version=f"{today}-2") == EXIT_USAGE
    )
    assert "its own version" in capsys.readouterr().err
    assert release.unique_version({"2026.01.02", "2026.01.02-2"}, dt.date(2026, 1, 2)) == (
        "2026.01.02-3"
    )


def test_out_is_required_with_sources(builds, sample_library, capsys):
    assert builds.command(sample_library, None) == EXIT_USAGE
    assert "--out is required with --sources" in capsys.readouterr().err


def test_release_opens_in_pandas_pyarrow_duckdb_and_polars(demo_release):
    import duckdb
    import pandas as pd
    import polars as pl
    import pyarrow.dataset as ds

    _, root = demo_release
    manifest = root / "release" / "manifest"
    n_joints = pq.read_table(manifest / "joints.parquet").num_rows
    assert n_joints > 0
    for table in TABLES:
        path = manifest / f"{table}.parquet"
        frame = pd.read_parquet(path)
        assert len(frame) == pq.read_table(path).num_rows == pl.read_parquet(path).height
        assert ds.dataset(path).count_rows() == len(frame)
    joints = pd.read_parquet(manifest / "joints.parquet")
    assert len(joints["twist"].iloc[0]) == 6
    polars_joints = pl.read_parquet(manifest / "joints.parquet")
    assert polars_joints["twist"].to_list()[0] == list(joints["twist"].iloc[0])
    con = duckdb.connect()
    count, helical = con.execute(
        f"SELECT count(*), sum(CASE WHEN type = 'helical' THEN 1 ELSE 0 END) "
        f"FROM '{manifest / 'joints.parquet'}'"
    ).fetchone()
    assert count == n_joints and helical > 0
    per_super = con.execute(
        f"SELECT supercategory, count(*) FROM '{manifest / 'objects.parquet'}' GROUP BY 1"
    ).fetchall()
    assert sum(n for _, n in per_super) == len(pd.read_parquet(manifest / "objects.parquet"))
    twist_x = con.execute(
        f"SELECT twist[1] FROM '{manifest / 'joints.parquet'}' ORDER BY object_id, joint_index"
    ).fetchone()[0]
    assert twist_x == joints.sort_values(["object_id", "joint_index"])["twist"].iloc[0][0]


def test_category_override_recomputes_only_its_object(builds, own_library, tmp_path, capsys):
    cache = tmp_path / "cache"
    first = builds.release(own_library, tmp_path / "r1", cache)
    target = "sample_urdf__laptop_0012__laptop_0012"
    assert target in first.computed
    overrides = tmp_path / "overrides.yaml"
    overrides.write_text(f"version: 1\noverrides:\n  {target}: no_such_category\n")
    assert builds.command(own_library, tmp_path / "r2", cache, overrides=overrides) == EXIT_USAGE
    assert "no_such_category" in capsys.readouterr().err
    overrides.write_text(f"version: 1\noverrides:\n  {target}: refrigerator\n")
    assert builds.command(own_library, tmp_path / "r2", cache, overrides=overrides) == EXIT_OK
    assert "39 objects reused from the cache" in capsys.readouterr().out
    rows = pq.read_table(tmp_path / "r2" / "manifest" / "objects.parquet").to_pylist()
    row = next(r for r in rows if r["object_id"] == target)
    assert (row["category"], row["category_method"]) == ("refrigerator", "override")


def test_per_object_allowance_files_reach_normalization_and_the_cache(builds, tmp_path):
    """An `arena-allowances.yaml` added beside an object waives its checks in a build as it does
    in `arena validate`: normalization's `limits.reversed` too, and the cached rejections of
    both objects are recomputed because the file (absent at first) is one of their inputs."""
    library = write(
        tmp_path / "lib",
        {
            "far/cabinet.urdf": door_urdf(hinge_offset=1.0),
            "reversed/cabinet.urdf": door_urdf(lower=1.5, upper=0.0),
        },
    )
    (library / "sources.yaml").write_text(
        "sources:\n  - {name: doors, format: urdf, path: ., license: CC0}\n"
    )
    cache = tmp_path / "cache"
    first = builds.release(library, tmp_path / "r1", cache)
    codes = {r["source_id"]: r["code"] for r in rejects(tmp_path / "r1")}
    assert codes == {"reversed/cabinet": "limits.reversed"}
    [far] = pq.read_table(tmp_path / "r1" / "manifest" / "objects.parquet").to_pylist()
    assert "attachment.axis" in far["warnings"] and far["needs_review"]
    review = pq.read_table(tmp_path / "r1" / "manifest" / "review.parquet").to_pylist()
    assert "attachment.axis" in review[0]["reason"]

    for folder, check in (("far", "attachment.axis"), ("reversed", "limits.reversed")):
        (library / folder / "arena-allowances.yaml").write_text(
            f"allowances:\n  - check: {check}\n    reason: known quirk of this asset\n"
        )
    second = builds.release(library, tmp_path / "r2", cache)
    assert rejects(tmp_path / "r2") == []
    assert len(second.computed) == 2 and first.computed == second.computed
    objects = pq.read_table(tmp_path / "r2" / "manifest" / "objects.parquet").to_pylist()
    assert {o["source_id"]: o["status"] for o in objects} == {
        "far/cabinet": "warn",
        "reversed/cabinet": "pass",
    }
    far = next(o for o in objects if o["source_id"] == "far/cabinet")
    assert "attachment.axis" not in far["warnings"]
