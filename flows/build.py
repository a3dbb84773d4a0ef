"""`arena build` as Prefect flows: the same steps as `pipeline.build`, orchestrated.

    (before the flow, while Prefect's server starts: `flows.startup`)
      discover, cache lookups   every candidate of each source; unchanged objects from the cache
      start_batches             the batches of the others, running in the worker processes
    arena_build_flow (one flow run per build, named `build <version>`)
      source_flow (a subflow, only for a source with objects to compute; run named by source,
                   as soon as that source's batches have finished)
        batch_task x B          one task per batch: waits for the batch started above (or, with
                                Dask, computes it): normalize, verify, categorize
      assemble                  manifests, split/eval200, release.json, CHANGELOG, card, checksums
      publish                   rename the staging folder to --out
      artifacts                 the release summary (markdown) and the rejects (table)

All real work is in plain functions (`pipeline.build`, `pipeline.chain`, `export`). With
`--workers N` the process runner hands each batch to a pool of N worker processes (spawned,
never forked, and without Prefect), so CPU-bound stages use every core without booting one
Prefect server per worker. `--runner dask` runs the batch tasks on a Dask cluster through
prefect-dask: a temporary local cluster whose workers are pointed at this build's Prefect API,
or an existing one with `--dask-address`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import os
import time
import uuid

# isort: off
import flows.prefect_env  # noqa: F401  (first: Prefect's settings, before Prefect is imported)
from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings
from prefect.task_runners import ThreadPoolTaskRunner

# isort: on
from normalize.errors import DISK_FULL_ERRNOS, WriteFailed
from normalize.sources import SourceConfig
from pipeline.build import (
    BuildConfig,
    BuildResult,
    PreparedSource,
    StagedBuild,
    StartedBatch,
    count_finished,
    finish_build,
    source_run,
    start_batches,
)
from pipeline.chain import BatchSettings


def _not_a_disk_failure(task, task_run, state) -> bool:
    """Retry a failed batch, unless the disk written to failed: it would fail again."""
    return not isinstance(state.result(raise_on_failure=False), WriteFailed)


@task(
    name="batch",
    retries=2,
    retry_delay_seconds=1,
    retry_condition_fn=_not_a_disk_failure,
    cache_policy=NO_CACHE,
)
def batch_task(batch: StartedBatch, settings: BatchSettings) -> list[dict]:
    return batch.outcomes(settings)


def _source_batches(
    source: SourceConfig,
    batches: list[StartedBatch],
    settings: BatchSettings,
    progress,
) -> list[dict]:
    """The objects of one source that the cache does not have, one task per batch (task runs
    named `<source> <i>/<n>, <objects> objects`)."""
    futures = [
        batch_task.with_options(
            task_run_name=f"{source.name} {i}/{len(batches)}, {len(batch.batch)} objects"
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


class _SaidByTheCommand(logging.Filter):
    """Drops the ERROR records, tracebacks included, that Prefect's engine logs for a run ended
    by a failure of the disk written to, Ctrl-C or SIGTERM: `arena build` says each in one
    line (exit 4, 130, 143), and the run's state in Prefect still says what happened."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        message = record.getMessage()
        return not (
            isinstance(exc, (WriteFailed, KeyboardInterrupt))
            or (isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS)
            or f"exception {WriteFailed.__name__}: " in message  # the final state
            or "Crash detected! Execution was aborted by" in message  # Ctrl-C, SIGTERM
            or "Task run cancelled by the task runner" in message  # its batches, then
        )


@contextlib.contextmanager
def _quiet_what_the_command_says():
    loggers = [logging.getLogger(name) for name in ("prefect.flow_runs", "prefect.task_runs")]
    quiet = _SaidByTheCommand()
    for logger in loggers:
        logger.addFilter(quiet)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(quiet)


class Unwalked:
    """A flow's return value that Prefect hands back without walking it: a finished flow run
    looks for futures and states inside the lists, dicts and dataclasses it returns, which
    took about 1.5 s of the build's CPU for the corpus's outcomes."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


@flow(name="arena-source", validate_parameters=False)
def source_flow(source_name: str, objects: int, work: str) -> Unwalked:
    """The objects of one source that the cache does not have (a list of outcomes), one task
    per batch."""
    run_logger().info("%s: computing %d objects not in the cache", source_name, objects)
    return Unwalked(_source_batches(*_work(work)))


MAX_REJECT_ROWS = 1000  # rows of the rejects table artifact (the manifest has them all)


@flow(name="arena-build", validate_parameters=False)
def arena_build_flow(version: str, out: str, sources: list[str], work: str) -> Unwalked:
    """One release build: a subflow per source with work, then the release assembly; the
    release summary and the rejects become artifacts of the run. Any failure (accounting, a
    source that cannot be read) raises, so the run ends Failed."""
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

    result = _finish(*_work(work))
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
    return Unwalked(result)


def _finish(staged, prepared, started, failure, finished, progress, dask_address) -> BuildResult:
    """The flow's work: a subflow per source with objects to compute, then the assembly (or
    the release `finished` before the flow, when nothing was left to compute)."""
    if failure is not None:
        raise failure
    if finished is not None:
        return finished
    runs = {}
    for i in _in_order_of_completion(prepared, started):
        p = prepared[i]
        t = time.perf_counter()
        computed = _source_subflow(p, started, staged, progress, dask_address) if p.misses else []
        runs[i] = source_run(p, computed, time.perf_counter() - t)
    return finish_build(staged, [runs[i] for i in range(len(prepared))])


def _in_order_of_completion(prepared: list[PreparedSource], started: dict):
    """Indices of `prepared`, each source as soon as every batch started for it has finished
    (sources without started batches first, in their order): a source's subflow then runs
    while the worker processes compute the others, instead of queuing behind the slowest
    source and leaving one subflow after another to run once the workers are done."""
    waiting = list(range(len(prepared)))

    def batches(i: int) -> list[StartedBatch]:
        return started.get(prepared[i].source.name, []) if prepared[i].misses else []

    while waiting:
        ready = [i for i in waiting if all(b.done() for b in batches(i))]
        if not ready:
            futures = [b.future for i in waiting for b in batches(i) if not b.done()]
            concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_COMPLETED)
            continue
        for i in ready:
            waiting.remove(i)
            yield i


def _source_subflow(
    prepared: PreparedSource, started: dict, staged: StagedBuild, progress, dask_address
) -> list[dict]:
    config, settings, source = staged.config, staged.settings, prepared.source
    batches = started.get(source.name) or start_batches(prepared.misses, settings, config)
    runner = _task_runner(config, dask_address)
    subflow = source_flow.with_options(flow_run_name=source.name, task_runner=runner)
    # A subflow runs inside this flow's process, whose heartbeat already shows it is alive; a
    # subflow's own heartbeat thread costs up to a second when it ends (measured: most of
    # Prefect's time in a warm build of the corpus).
    with (
        _handed_over(source, batches, settings, progress) as work,
        temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}),
    ):
        return subflow(source.name, len(prepared.misses), work).value


def run_flow(
    staged: StagedBuild,
    prepared: list[PreparedSource],
    started: dict[str, list[StartedBatch]],
    failure: BaseException | None,
    finished: BuildResult | None,
    progress,
    dask_address: str | None = None,
) -> BuildResult:
    """The build's flow (`arena-build`, run `build <version>`, tagged with the source names)
    over sources already discovered and looked up (`flows.startup`), with a subflow
    (`arena-source`, run named by the source) per source that has objects to compute; the
    batches `started` per source are already running. `failure`: what went wrong before the
    flow (the run raises it, so it ends Failed); `finished`: the release, when it was
    assembled before the flow (nothing to compute), which the run then records."""
    from prefect import tags

    config = staged.config
    names = [s.name for s in config.sources]
    build = arena_build_flow.with_options(flow_run_name=f"build {config.version}")
    with (
        _handed_over(staged, prepared, started, failure, finished, progress, dask_address) as work,
        tags(*names),
        _quiet_what_the_command_says(),
    ):
        return build(config.version, str(config.out.absolute()), names, work).value


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
