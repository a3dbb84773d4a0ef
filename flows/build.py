"""`arena build` as Prefect flows: the same steps as `pipeline.build`, orchestrated.

    arena_build_flow (one flow run per build)
      for each source:
        discover                every candidate of the source
        (cache lookups)         objects whose inputs did not change are taken from the cache
        source_flow (a subflow, only when something is left to compute; run named by source)
          batch_task x B        one task per batch of the others: normalize, verify, categorize
      assemble                  manifests, split/eval200, release.json, CHANGELOG, card, checksums
      publish                   rename the staging folder to --out
      artifacts                 the release summary (markdown) and the rejects (table)

All real work is in plain functions (`pipeline.build`, `pipeline.chain`, `export`). With
`--workers N > 1` the process runner hands each batch to a pool of N worker processes (spawned,
never forked, and without Prefect), so CPU-bound stages use every core without booting one
Prefect server per worker. `--runner dask` runs the batch tasks on a Dask cluster through
prefect-dask: a temporary local cluster whose workers are pointed at this build's Prefect API,
or an existing one with `--dask-address`.
"""

from __future__ import annotations

import os

# Prefect reads its settings when it is imported: set the defaults first.
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

import contextlib  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402
import uuid  # noqa: E402
from pathlib import Path  # noqa: E402

from prefect import flow, task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402
from prefect.futures import as_completed  # noqa: E402
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings  # noqa: E402
from prefect.task_runners import ThreadPoolTaskRunner  # noqa: E402

from normalize.sources import Candidate, SourceConfig  # noqa: E402
from pipeline.build import (  # noqa: E402
    BuildConfig,
    BuildResult,
    SourceRun,
    count_finished,
    plan_batches,
    run_batch,
    run_build,
    run_source,
)
from pipeline.chain import BatchSettings  # noqa: E402


@task(name="batch", retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE)
def batch_task(batch: list[Candidate], settings: BatchSettings) -> list[dict]:
    return run_batch(batch, settings)


def _source_batches(
    source: SourceConfig,
    misses: list[Candidate],
    settings: BatchSettings,
    config: BuildConfig,
    progress,
) -> list[dict]:
    """Compute the objects of one source that the cache does not have, one task per batch
    (task runs named `<source> <i>/<n>, <objects> objects`)."""
    batches = plan_batches(misses, config.batch_size, config.workers)
    futures = [
        batch_task.with_options(
            task_run_name=f"{source.name} {i}/{len(batches)}, {len(batch)} objects"
        ).submit(batch, settings)
        for i, batch in enumerate(batches, 1)
    ]
    outcomes: list[dict] = []
    for future in as_completed(futures):
        batch = future.result()
        count_finished(progress, source, batch)
        outcomes.extend(batch)
    return outcomes


def _task_runner(config: BuildConfig, dask_address: str | None):
    if config.runner == "dask":
        from prefect_dask import DaskTaskRunner

        return DaskTaskRunner(address=dask_address)
    return ThreadPoolTaskRunner(max_workers=max(config.workers, 1))


# A flow run's parameters go to the Prefect API, which refuses more than 512 KB of them: passing
# the candidates (each with its source configuration) failed at 5,000 generated objects (1,250
# candidates of one source: 2.9 MB). So the flows' parameters only name the work (version,
# output, source names, object counts) and a key under which the work itself is handed over in
# this process; the flows stay module-level functions (picklable by reference for Dask).
_FLOW_WORK: dict[str, tuple] = {}


@contextlib.contextmanager
def _handed_over(*work):
    key = uuid.uuid4().hex
    _FLOW_WORK[key] = work
    try:
        yield key
    finally:
        del _FLOW_WORK[key]


def _work(key: str) -> tuple:
    # A function, not the dict itself, in the flows: Dask pickles a flow's function with the
    # globals it uses, and the work (locks, candidates) must not go with it.
    return _FLOW_WORK[key]


_RUN_LOG = logging.getLogger("arena.build")


def run_logger():
    """The current run's logger (`get_run_logger`'s run context) on a logger that sends INFO
    to the Prefect API only: the run's page shows it, the console stays at
    PREFECT_LOGGING_LEVEL (WARNING by default)."""
    from prefect.logging import get_run_logger
    from prefect.logging.handlers import APILogHandler
    from prefect.logging.loggers import PrefectLogAdapter

    if not _RUN_LOG.handlers:
        _RUN_LOG.addHandler(APILogHandler())
        _RUN_LOG.setLevel(logging.INFO)
        _RUN_LOG.propagate = False
    return PrefectLogAdapter(_RUN_LOG, extra=get_run_logger().extra)


@flow(name="arena-source", validate_parameters=False)
def source_flow(source_name: str, objects: int, work: str) -> list[dict]:
    """The objects of one source that the cache does not have, one task per batch."""
    run_logger().info("%s: computing %d objects not in the cache", source_name, objects)
    return _source_batches(*_work(work))


MAX_REJECT_ROWS = 1000  # rows of the rejects table artifact (the manifest has them all)


@flow(name="arena-build", validate_parameters=False)
def arena_build_flow(version: str, out: str, sources: list[str], work: str) -> BuildResult:
    """One release build: a subflow per source with work, then the release assembly; the
    release summary and the rejects become artifacts of the run. Any failure (accounting, a
    source that cannot be read) raises, so the run ends Failed."""
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

    result = run_build(*_work(work))
    log = run_logger()
    for s in result.info["sources"]:
        log.info(
            "%s: %d discovered, %d accepted, %d rejected, %d files skipped, %.1f s",
            s["name"],
            s["discovered"],
            s["accepted"],
            s["rejected"],
            sum(v["count"] for v in s.get("skipped", {}).values()),
            result.source_seconds.get(s["name"], 0.0),
        )
    create_markdown_artifact(
        markdown=result.markdown(), key="arena-release-summary", description="The release"
    )
    if result.rejects:
        shown = result.rejects[:MAX_REJECT_ROWS]
        create_table_artifact(
            table=shown,
            key="arena-rejects",
            description=f"Refused candidates ({len(shown)} of {len(result.rejects)} shown; all in "
            "manifest/rejects.parquet)",
        )
    return result


def build_flow(
    config: BuildConfig, called: float, dask_address: str | None = None, progress=None
) -> BuildResult:
    """One release build as a Prefect flow (`arena-build`, run `build <version>`, tagged with
    the source names), with a subflow (`arena-source`, run named by the source) per source that
    has objects to compute."""

    def run_sources(settings, progress) -> list[SourceRun]:
        def compute(source: SourceConfig, misses: list[Candidate]) -> list[dict]:
            runner = _task_runner(config, dask_address)
            subflow = source_flow.with_options(flow_run_name=source.name, task_runner=runner)
            # A subflow runs inside this flow's process, whose heartbeat already shows it is
            # alive; a subflow's own heartbeat thread costs up to a second when it ends
            # (measured: most of Prefect's time in a warm build of the corpus).
            with (
                _handed_over(source, misses, settings, config, progress) as work,
                temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}),
            ):
                return subflow(source.name, len(misses), work)

        return [run_source(s, settings, progress, compute) for s in config.sources]

    from prefect import tags

    names = [s.name for s in config.sources]
    build = arena_build_flow.with_options(flow_run_name=f"build {config.version}")
    with _handed_over(config, run_sources, called, progress) as work, tags(*names):
        return build(config.version, str(config.out.absolute()), names, work)


@contextlib.contextmanager
def prefect_api():
    """The Prefect API of the build: the configured one (PREFECT_API_URL), else Prefect's
    temporary server, started here with a watchdog process that stops it if this process dies
    without cleaning up. Prefect stops the server when the process exits normally, but a build
    killed by SIGKILL (or the OOM killer) left it running for good."""
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():
        yield
        return
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()
    server.start()
    if server.server_process is not None:
        stop_with_this_process(server.server_process.pid, "prefect.server.api.server")
    with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
        yield


_WATCHDOG = """
import os, signal, sys, time
parent, target, marker = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].encode()
while os.getppid() == parent:
    time.sleep(1)
for sig in (signal.SIGTERM, signal.SIGKILL):
    try:
        with open(f"/proc/{target}/cmdline", "rb") as f:
            if marker not in f.read():
                break  # gone, and the pid is not the same process any more
        os.kill(target, sig)
    except OSError:
        break
    time.sleep(3)
"""


_WATCHED: set[int] = set()


def stop_with_this_process(pid: int, marker: str) -> None:
    """Start a tiny watchdog process that ends process `pid` (whose command line contains
    `marker`) once this process is gone (Linux; elsewhere nothing is started)."""
    if pid in _WATCHED or not Path("/proc/self/cmdline").exists():
        return
    _WATCHED.add(pid)
    import subprocess

    subprocess.Popen(
        [sys.executable, "-S", "-c", _WATCHDOG, str(os.getpid()), str(pid), marker],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@contextlib.contextmanager
def local_dask_cluster(workers: int):
    """A temporary local Dask cluster whose worker processes use this process's Prefect API
    (`prefect_api`), so that workers do not each boot their own temporary server."""
    from distributed import LocalCluster
    from prefect.settings import PREFECT_API_URL

    env = {
        "PREFECT_API_URL": PREFECT_API_URL.value(),
        "PREFECT_LOGGING_LEVEL": os.environ.get("PREFECT_LOGGING_LEVEL", "WARNING"),
    }
    with LocalCluster(
        n_workers=max(workers, 1),
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        env=env,
    ) as cluster:
        yield cluster.scheduler_address
