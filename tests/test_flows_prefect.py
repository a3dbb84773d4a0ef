"""The build as a Prefect flow, on the session's one temporary Prefect server: the thread
runner (batches in spawned worker processes) through the command line, and the Dask runner on a
temporary local cluster. Both give the manifests of the build without Prefect."""

from __future__ import annotations

import json
import time

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
    [build] = new["arena-build"]
    assert build.state.type.value == "COMPLETED" and build.name == "build test"
    sources = [s.name for s in load_sources(sample_library / "sources.yaml")]
    assert set(sources) <= set(build.tags)
    assert build.parameters["out"] == str(out.absolute())
    by_source = {r.name: r for r in new["arena-source"]}
    assert set(by_source) == set(sources), "one subflow definition, one run per source"
    assert all(r.state.type.value == "COMPLETED" for r in by_source.values())
    subflow_ids = {r.id for r in by_source.values()}
    batches = [t for t in tasks if t.flow_run_id in subflow_ids]
    assert len(batches) >= 40 / 4, "one task per batch of at most 4 objects"
    assert all(t.state.type.value == "COMPLETED" for t in batches)
    urdf = sorted(t.name for t in batches if t.flow_run_id == by_source["sample_urdf"].id)
    assert urdf[0] == "sample_urdf 1/3, 4 objects", urdf
    summary = artifact("arena-release-summary", build.id)
    assert summary.type == "markdown" and f"Written to `{out.absolute()}`" in summary.data
    assert "| sample_urdf | 10 | 10 | 0 |" in summary.data
    build_logs = logs(build.id, "sample_urdf: 10 discovered")
    assert "sample_urdf: 10 discovered, 10 accepted, 0 rejected" in build_logs
    assert "computing 10 objects" in logs(by_source["sample_urdf"].id, "computing")

    # a warm rebuild through Prefect reuses every object: no source has work, so no subflow
    seen |= {r.id for group in runs.values() for r in group}
    assert build_command(**{**args, "out": tmp_path / "warm"}) == EXIT_OK
    assert manifests(tmp_path / "warm") == manifests(sample_release)
    info = json.loads((tmp_path / "warm" / "release.json").read_text())
    assert info["counts"]["discovered"] == 40
    runs, _ = recorded_runs()
    new = {name: [r for r in group if r.id not in seen] for name, group in runs.items()}
    assert [r.state.type.value for r in new["arena-build"]] == ["COMPLETED"]
    assert not new.get("arena-source")


def logs(flow_run_id, expected: str) -> str:
    """The messages a flow run logged, once `expected` is among them (logs reach the API in
    the background; give up after 20 s)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    deadline = time.monotonic() + 20
    while True:
        with get_client(sync_client=True) as client:
            found = client.read_logs(
                log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id]))
            )
        text = "\n".join(entry.message for entry in found)
        if expected in text or time.monotonic() > deadline:
            return text
        time.sleep(0.5)


def artifact(key: str, flow_run_id):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        )
    return next(a for a in found if a.key == key)


def test_a_failed_build_ends_the_flow_run_failed_and_rejects_are_an_artifact(
    prefect_harness, tmp_path, monkeypatch
):
    from verify_assets import door_urdf, write

    from pipeline import build as pipeline_build

    library = write(
        tmp_path / "library",
        {"door.urdf": door_urdf(), "broken.urdf": "<robot name='b'>", "sources.yaml": ""},
    )
    (library / "sources.yaml").write_text(
        "sources: [{name: doors, format: urdf, path: ., license: test}]\n"
    )

    def config(out):
        return BuildConfig(
            sources=load_sources(library / "sources.yaml"),
            out=out,
            version="prefect-check",
            runner="process",
            workers=1,
            live=False,
        )

    result = build_release(config(tmp_path / "ok"))
    runs, _ = recorded_runs()
    [ok] = [r for r in runs["arena-build"] if r.parameters["out"] == str(tmp_path / "ok")]
    rejects = artifact("arena-rejects", ok.id)
    assert rejects.type == "table" and "xml.truncated" in str(rejects.data)
    assert result.rejects[0]["code"] == "xml.truncated"

    def broken(runs):
        raise pipeline_build.AccountingError("accounting failed: simulated")

    monkeypatch.setattr(pipeline_build, "check_accounting", broken)
    with pytest.raises(pipeline_build.AccountingError):
        build_release(config(tmp_path / "failed"))
    runs, _ = recorded_runs()
    [failed] = [r for r in runs["arena-build"] if r.parameters["out"] == str(tmp_path / "failed")]
    assert failed.state.type.value == "FAILED"
    assert not (tmp_path / "failed").exists()


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


class LateServer:
    """The session's Prefect API (prefect_harness), reported ready only once `ready()` holds:
    what the build did before `wait()` returned, it did without Prefect."""

    url = None

    def __init__(self, ready):
        self.ready, self.held = ready, None

    def wait(self) -> float:
        deadline = time.monotonic() + 600
        while not self.ready() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.held = self.ready()
        return 0.0

    def active(self):
        import contextlib

        return contextlib.nullcontext()


def test_objects_are_computed_and_a_warm_release_published_before_prefect_is_up(
    prefect_harness, sample_library, sample_release, tmp_path
):
    from flows.progress import BuildProgress
    from flows.startup import build_with_prefect

    def config(out):
        return BuildConfig(
            sources=load_sources(sample_library / "sources.yaml"),
            out=out,
            version="test",
            batch_size=4,
            workers=2,
            runner="process",
            cache_dir=tmp_path / "cache",
            live=False,
        )

    cold = tmp_path / "cold"

    def computed_objects() -> int:  # written into the staging folder by the worker processes
        return len(list(tmp_path.glob(f".{cold.name}.build-*/objects/*/object.urdf")))

    server = LateServer(lambda: computed_objects() >= 8)
    result = build_with_prefect(config(cold), time.perf_counter(), BuildProgress(False), server)
    assert server.held, "the batches ran in the worker processes before Prefect was up"
    assert len(result.computed) == 40
    assert manifests(cold) == manifests(sample_release)
    runs, _ = recorded_runs()
    [build] = [r for r in runs["arena-build"] if r.parameters["out"] == str(cold.absolute())]
    assert build.state.type.value == "COMPLETED" and build.name == "build test"

    warm = tmp_path / "warm"
    server = LateServer(lambda: (warm / "release.json").is_file())
    result = build_with_prefect(config(warm), time.perf_counter(), BuildProgress(False), server)
    assert server.held, "nothing to compute: the release is published before waiting for Prefect"
    assert result.cached == 40 and manifests(warm) == manifests(sample_release)
    runs, _ = recorded_runs()
    [build] = [r for r in runs["arena-build"] if r.parameters["out"] == str(warm.absolute())]
    assert build.state.type.value == "COMPLETED"
    summary = artifact("arena-release-summary", build.id)
    assert f"Written to `{warm.absolute()}`" in summary.data
