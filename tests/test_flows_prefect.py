"""The build as a Prefect flow, on the session's one temporary Prefect server: the thread
runner (batches in spawned worker processes) through the command line, and the Dask runner on a
temporary local cluster. Both give the manifests of the build without Prefect."""

from __future__ import annotations

import json
import time

import pytest
from test_flows_build import manifests

import duplicates.stage
from flows.commands import EXIT_OK
from flows.progress import BuildProgress
from normalize.sources import load_sources

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
    builds, prefect_harness, sample_library, sample_release, tmp_path, capsys
):
    out, cache = tmp_path / "release", tmp_path / "cache"
    options = dict(batch_size=4, workers=2, runner="process")
    before, _ = recorded_runs()
    seen = {r.id for group in before.values() for r in group}
    assert builds.command(sample_library, out, cache, **options) == EXIT_OK
    assert manifests(out) == manifests(sample_release)

    runs, tasks = recorded_runs()
    new = {name: [r for r in group if r.id not in seen] for name, group in runs.items()}
    [build] = new["arena-build"]
    assert build.state.type.value == "COMPLETED" and build.name == "build test"
    assert f"/runs/flow-run/{build.id}" in capsys.readouterr().err, "the run's page is said"
    sources = [s.name for s in load_sources(sample_library / "sources.yaml")]
    assert build.parameters["out"] == str(out.absolute())
    by_source = {r.name: r for r in new["arena-source"]}
    assert set(by_source) == set(sources), "one subflow definition, one run per source"
    assert all(r.state.type.value == "COMPLETED" for r in by_source.values())
    assert all(r.tags == [name] for name, r in by_source.items()), "tagged with its source only"
    subflow_ids = {r.id for r in by_source.values()}
    batches = [t for t in tasks if t.flow_run_id in subflow_ids]
    assert len(batches) >= 40 / 4, "one task per batch of at most 4 objects"
    assert all(t.state.type.value == "COMPLETED" for t in batches)
    urdf = sorted(batches_of(batches, by_source["sample_urdf"].id), key=lambda t: t.name)
    assert [t.name for t in urdf] == [f"sample_urdf batch {k}/3" for k in (1, 2, 3)]
    assert all(t.tags == ["sample_urdf"] for t in urdf)
    summary = artifact("arena-release-summary", build.id)
    assert summary.type == "markdown" and f"Written to `{out.absolute()}`" in summary.data
    assert "| sample_urdf | 10 | 10 | 0 |" in summary.data
    build_logs = logs(build.id, "sample_urdf: 10 discovered")
    assert "sample_urdf: 10 discovered, 10 accepted, 0 rejected" in build_logs
    assert "10 objects in 3 batches" in logs(by_source["sample_urdf"].id, "batches")

    # a warm rebuild through Prefect: the batch tasks take every object from the cache
    seen |= {r.id for group in runs.values() for r in group}
    assert builds.command(sample_library, tmp_path / "warm", cache, **options) == EXIT_OK
    assert manifests(tmp_path / "warm") == manifests(sample_release)
    info = json.loads((tmp_path / "warm" / "release.json").read_text())
    assert info["counts"]["discovered"] == 40
    runs, tasks = recorded_runs()
    new = {name: [r for r in group if r.id not in seen] for name, group in runs.items()}
    assert [r.state.type.value for r in new["arena-build"]] == ["COMPLETED"]
    assert {r.name for r in new["arena-source"]} == set(sources)


def batches_of(tasks, flow_run_id) -> list:
    return [t for t in tasks if t.flow_run_id == flow_run_id and " batch " in t.name]


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
    builds, prefect_harness, tmp_path, monkeypatch
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

    result = builds.release(library, tmp_path / "ok", runner="process")
    runs, _ = recorded_runs()
    [ok] = [r for r in runs["arena-build"] if r.parameters["out"] == str(tmp_path / "ok")]
    rejects = artifact("arena-rejects", ok.id)
    assert rejects.type == "table" and "xml.truncated" in str(rejects.data)
    assert result.rejects[0]["code"] == "xml.truncated"

    def broken(runs):
        raise pipeline_build.AccountingError("accounting failed: simulated")

    monkeypatch.setattr(pipeline_build, "check_accounting", broken)
    with pytest.raises(pipeline_build.AccountingError):
        builds.release(library, tmp_path / "failed", runner="process")
    runs, _ = recorded_runs()
    [failed] = [r for r in runs["arena-build"] if r.parameters["out"] == str(tmp_path / "failed")]
    assert failed.state.type.value == "FAILED"
    assert not (tmp_path / "failed").exists()


def test_build_on_a_local_dask_cluster(
    builds, prefect_harness, sample_library, sample_release, tmp_path, monkeypatch
):
    import distributed

    # one Dask client for the whole build, not one per source's subflow (5 sources here)
    clients = []
    opened = distributed.Client.__init__

    def counted(self, *args, **kwargs):
        clients.append(self)
        opened(self, *args, **kwargs)

    monkeypatch.setattr(distributed.Client, "__init__", counted)
    result = builds.release(
        sample_library, tmp_path / "release", runner="dask", workers=2, batch_size=8
    )
    assert len(result.computed) == 40
    assert manifests(tmp_path / "release") == manifests(sample_release)
    assert len(clients) == 1


class LateServer:
    """The session's Prefect API (prefect_harness), recording what the build had done when it
    waited for it."""

    url = None

    def __init__(self, done_before_the_wait):
        self.done_before_the_wait, self.found = done_before_the_wait, None

    def wait(self) -> float:
        self.found = self.done_before_the_wait()
        return 0.0

    def active(self):
        import contextlib

        return contextlib.nullcontext()


class CountingProgress(BuildProgress):
    """A quiet progress display that keeps the number done after every update."""

    def __post_init__(self):
        super().__post_init__()
        self.steps: list[int] = []

    def finished(self, source, accepted, rejected, cached=0) -> None:
        super().finished(source, accepted, rejected, cached)
        self.steps.append(self.totals().done)


def test_the_work_runs_inside_the_task_runs(
    builds, prefect_harness, sample_library, sample_release, tmp_path, monkeypatch
):
    """Nothing is computed before Prefect is up; the batch task runs last as long as the
    objects' stages together; the progress moves object by object; the subflows end with the
    assembly as a task run of the build."""
    from flows.build import build_with_prefect

    cold = tmp_path / "cold"
    config = builds.config(
        sample_library, cold, tmp_path / "cache", batch_size=8, workers=2, runner="process"
    )
    server = LateServer(lambda: list(tmp_path.glob(f".{cold.name}.build-*/objects/*")))
    monkeypatch.setattr(duplicates.stage, "PROCESS_PAIRS", 0)  # the pairs as jobs, however few
    runs, _ = recorded_runs()
    seen = {r.id for group in runs.values() for r in group}
    progress = CountingProgress(live=False)
    result = build_with_prefect(config, time.perf_counter(), progress, server)
    assert server.found == [], "no object was computed before Prefect was up"
    assert len(result.computed) == 40 and manifests(cold) == manifests(sample_release)
    assert progress.steps == list(range(1, 41)), "one step per object"

    runs, tasks = recorded_runs()
    subflows = {r.id for r in runs["arena-source"] if r.id not in seen}
    batches = [t for t in tasks if t.flow_run_id in subflows]
    # batches of at most --batch-size 8; a source under 16 objects is not split further for
    # the 2 workers' sake (10 objects: 2 batches, 3: one)
    sizes = [source["discovered"] for source in result.info["sources"]]
    assert len(subflows) == len(sizes) == 5 and max(sizes) < 16
    assert len(batches) == sum(-(-n // 8) for n in sizes) < 2 * len(sizes)
    ran = sum(t.total_run_time.total_seconds() for t in batches)
    stages = sum(
        v
        for k, v in result.stage_seconds.items()
        if k not in ("discover", "duplicates", "assemble")
    )
    assert ran >= 0.9 * stages, (ran, stages)
    [build] = [r for r in runs["arena-build"] if r.id not in seen]
    assert build.state.type.value == "COMPLETED" and build.name == "build test"
    [assemble] = [t for t in tasks if t.flow_run_id == build.id and t.name == "assemble test"]
    assert assemble.state.type.value == "COMPLETED"
    assert assemble.total_run_time.total_seconds() >= result.seconds["assemble"] * 0.9
    pairs = [t for t in tasks if t.name.startswith("duplicates batch ")]
    assert 1 <= len(pairs) <= 2 * 4, "the pair jobs (at most --workers x 4) are task runs"
    assert all(t.state.type.value == "COMPLETED" for t in pairs)
