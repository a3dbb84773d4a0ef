"""The build as a Prefect flow, on the session's one temporary Prefect server: the thread
runner (batches in spawned worker processes) through the command line, and the Dask runner on a
temporary local cluster. Both give the manifests of the build without Prefect."""

from __future__ import annotations

import json

import pytest
from test_flows_build import manifests

from flows.commands import EXIT_OK, build_command, build_release
from normalize.sources import load_sources
from pipeline.build import BuildConfig

pytestmark = pytest.mark.slow


def recorded_runs() -> tuple[dict[str, list], list]:
    """Flow runs on the Prefect server by flow name, and every task run."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        flows = {f.id: f.name for f in client.read_flows(limit=200)}
        runs = client.read_flow_runs(limit=200)
        tasks = client.read_task_runs(limit=200)
    by_flow: dict[str, list] = {}
    for run in runs:
        by_flow.setdefault(flows[run.flow_id], []).append(run)
    return by_flow, tasks


def test_build_flow_through_the_command_line(
    prefect_harness, sample_library, sample_release, tmp_path
):
    out, cache = tmp_path / "release", tmp_path / "cache"
    args = dict(
        sources=sample_library / "sources.yaml",
        out=out,
        version="test",
        previous=None,
        batch_size=4,
        workers=2,
        runner="process",
        dask_address=None,
        cache_dir=cache,
        no_cache=False,
    )
    before, _ = recorded_runs()
    seen = {r.id for group in before.values() for r in group}
    assert build_command(**args) == EXIT_OK
    assert manifests(out) == manifests(sample_release)

    runs, tasks = recorded_runs()
    new = {name: [r for r in group if r.id not in seen] for name, group in runs.items()}
    assert [r.state.type.value for r in new["arena-build"]] == ["COMPLETED"]
    sources = [s.name for s in load_sources(sample_library / "sources.yaml")]
    for name in sources:
        assert [r.state.type.value for r in new[f"source-{name}"]] == ["COMPLETED"]
    subflow_ids = {r.id for name in sources for r in new[f"source-{name}"]}
    batches = [t for t in tasks if t.flow_run_id in subflow_ids and t.name.startswith("batch")]
    assert len(batches) >= 40 / 4, "one task per batch of at most 4 objects"
    assert all(t.state.type.value == "COMPLETED" for t in batches)

    # a warm rebuild through Prefect reuses every object: no source has work, so no subflow
    seen |= {r.id for group in runs.values() for r in group}
    assert build_command(**{**args, "out": tmp_path / "warm"}) == EXIT_OK
    assert manifests(tmp_path / "warm") == manifests(sample_release)
    info = json.loads((tmp_path / "warm" / "release.json").read_text())
    assert info["counts"]["discovered"] == 40
    runs, _ = recorded_runs()
    new = {name: [r for r in group if r.id not in seen] for name, group in runs.items()}
    assert [r.state.type.value for r in new["arena-build"]] == ["COMPLETED"]
    assert not any(new.get(f"source-{name}") for name in sources)


def test_build_on_a_local_dask_cluster(prefect_harness, sample_library, sample_release, tmp_path):
    result = build_release(
        BuildConfig(
            sources=load_sources(sample_library / "sources.yaml"),
            out=tmp_path / "release",
            version="test",
            runner="dask",
            workers=2,
            batch_size=8,
            live=False,
        )
    )
    assert len(result.computed) == 40
    assert manifests(tmp_path / "release") == manifests(sample_release)
