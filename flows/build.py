"""`arena build` as Prefect flows: the steps of `pipeline.build`, each batch's work inside a
Prefect task on the task runner the user chose.

    build_with_prefect(config, called, progress, server)
      staged_build, discover_source    --out locked, every source's candidates (plain Python,
                                       while Prefect's server starts: `flows.server`)
      server.wait()
      arena_build_flow                 run `build <version>`
        source_flow x S                a subflow per source, run named and tagged after it;
                                       SOURCES_AT_ONCE at a time, so the workers go on from one
                                       source to the next without waiting for its last batch
                                       (a batch task is submitted once a worker is free)
          batch_task x B               `<source> batch k/n`: every object of the batch, from
                                       the cache or computed (`pipeline.build.run_batch`)
        assemble_task                  duplicates (pair jobs as task runs `duplicates batch
                                       k/n` when there are many), manifests, card,
                                       checksums; publish
        artifacts                      the release summary (markdown), the rejects (table)

Task runners: `process` runs the batch tasks in threads, each handing its batch to the build's
worker processes (`pipeline.build.WorkerPool`: spawned, supervised, each object within its time
and memory limits); `dask` runs them on Dask workers, of a temporary `LocalCluster` or of an
existing cluster (`--dask-address`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import logging
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field

# isort: off
import flows.prefect_env  # noqa: F401  (first: Prefect's settings, before Prefect is imported)
from prefect import flow, tags, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings
from prefect.task_runners import ThreadPoolTaskRunner

# isort: on
from duplicates.stage import PairJob, measure_job
from flows.server import PrefectServer
from normalize.errors import DISK_FULL_ERRNOS, WriteFailed
from normalize.workers import SupervisorClosed
from pipeline.build import (
    Batch,
    BuildConfig,
    BuildResult,
    DiscoveredSource,
    StagedBuild,
    WorkerPool,
    finish_build,
    open_build,
    outcome_file,
    run_batch,
    source_batches,
    source_run,
)
from pipeline.chain import BatchSettings

#: subflows running at once: the next source's batches start while a source's last ones run
SOURCES_AT_ONCE = 2
MAX_REJECT_ROWS = 1000  # rows of the rejects table artifact (the manifest has them all)


@dataclass
class BuildWork:
    """What the build's flows work on, handed over in this process (`_handed_over`)."""

    staged: StagedBuild
    found: list[DiscoveredSource]
    pool: WorkerPool | None  # the process runner's worker processes (None with Dask)
    progress: object
    dask_address: str | None
    # the task runner of every flow run of the build (Prefect copies it for each run)
    task_runner: object = None
    # set when the build ends early (Ctrl-C, SIGTERM, a failure): batch tasks not yet started
    # end at once
    stopping: threading.Event = field(default_factory=threading.Event)
    # the worker processes free for a batch (process runner): a batch task is submitted only
    # when one is, so that its run's duration is its batch's work, not a wait in a queue
    free_workers: threading.Semaphore | None = None
    has_ui: bool = False  # a configured Prefect server (the temporary one serves no UI)


# A flow run's parameters go to the Prefect API, which refuses more than 512 KB of them: passing
# the candidates failed at 5,000 generated objects. So the flows' parameters only name the work
# (version, output, source names, object counts) and a key under which the work itself is
# handed over in this process; the flows stay module-level functions.
_FLOW_WORK: dict[str, object] = {}


@contextlib.contextmanager
def _handed_over(work):
    key = uuid.uuid4().hex
    _FLOW_WORK[key] = work
    try:
        yield key
    finally:
        del _FLOW_WORK[key]


def _work(key: str) -> BuildWork:
    # A function, not the dict itself, in the tasks and flows: Dask pickles a task's function
    # with the globals it uses, and the work (locks, worker processes) must not go with it.
    return _FLOW_WORK[key]


_RUN_LOG = logging.getLogger("arena.build")


def run_logger():
    """The current run's logger (`get_run_logger`'s run context) on a logger that sends INFO
    and up to the Prefect API only: the run's page shows it, the terminal stays as it is."""
    from prefect.logging import get_run_logger
    from prefect.logging.handlers import APILogHandler
    from prefect.logging.loggers import PrefectLogAdapter

    if not _RUN_LOG.handlers:
        _RUN_LOG.addHandler(APILogHandler())
        _RUN_LOG.setLevel(logging.INFO)
        _RUN_LOG.propagate = False
    return PrefectLogAdapter(_RUN_LOG, extra=get_run_logger().extra)


# --------------------------------------------------------------------------- tasks
def _worth_retrying(task, task_run, state) -> bool:
    """Retry a failed batch, unless the disk written to failed (it would fail again) or the
    build is ending (its worker processes were stopped)."""
    return not isinstance(state.result(raise_on_failure=False), (WriteFailed, SupervisorClosed))


@task(
    name="batch",
    retries=2,
    retry_delay_seconds=1,
    retry_condition_fn=_worth_retrying,
    cache_policy=NO_CACHE,
)
def batch_task(batch: Batch, settings: BatchSettings, work_key: str | None) -> Unwalked:
    """Every object of one batch (`pipeline.build.run_batch`), a list of outcomes; each
    rejected object is logged at WARNING with its code. `work_key`: the build's work in this
    process (the process runner: its worker processes and progress display), None on a Dask
    worker."""
    work = _work(work_key) if work_key is not None else None
    if work is not None and work.stopping.is_set():
        raise SupervisorClosed("the build is stopping")
    if work is None:
        outcomes = run_batch(batch, settings, None)
    else:
        progress = work.progress
        outcomes = run_batch(
            batch, settings, work.pool, lambda o: progress.object_finished(batch.source, o)
        )
    log = run_logger()
    for outcome in outcomes:
        if not outcome.accepted:
            reject = outcome.reject
            log.warning("%s rejected: %s: %s", outcome.object_id, reject["code"], reject["message"])
    return Unwalked(outcomes)


@task(name="pairs", retries=1, cache_policy=NO_CACHE)
def pairs_task(job: Unwalked, work_key: str | None) -> Unwalked:
    """The duplicate stage's evidence on one job of pairs (a PairJob): in the build's worker
    processes, or here on a Dask worker (`work_key` None)."""
    if work_key is not None and _work(work_key).pool is not None:
        return Unwalked(_work(work_key).pool.measure_pairs(job.value))
    return Unwalked(measure_job(job.value))


@dataclass
class PairTasks:
    """The duplicate stage's pair jobs as task runs (`duplicates batch k/n`) on the build
    flow's task runner (`duplicates.stage.JobRunner`)."""

    workers: int
    work_key: str | None  # None on Dask

    def run(self, jobs: list[PairJob]) -> list[list]:
        futures = [
            pairs_task.with_options(task_run_name=f"duplicates batch {k}/{len(jobs)}").submit(
                Unwalked(job), self.work_key
            )
            for k, job in enumerate(jobs, 1)
        ]
        return [future.result().value for future in futures]


@task(name="assemble release", cache_policy=NO_CACHE)
def assemble_task(work_key: str, runs: Unwalked) -> Unwalked:
    """Check the accounting, assemble the release (duplicates, their pair jobs as task runs of
    their own; manifests, card, checksums) and publish it (`pipeline.build.finish_build`)."""
    work = _work(work_key)
    local = None if work.dask_address is not None else work_key
    runner = PairTasks(max(work.staged.config.workers, 1), local)
    return Unwalked(finish_build(work.staged, runs.value, runner))


class Unwalked:
    """A value that Prefect hands over without walking it: a run looks for futures and states
    inside the lists, dicts and dataclasses of its parameters and of what it returns, which
    took about 1.5 s of the build's CPU for the corpus's outcomes."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


# --------------------------------------------------------------------------- flows
@flow(name="arena-source", validate_parameters=False)
def source_flow(source_name: str, number: int, objects: int, work_key: str) -> Unwalked:
    """The objects of one source, one batch task per batch (run named
    `<source> batch k/n`), on the build's task runner; their outcomes go to the `number`th
    source's outcome file as each batch ends (`pipeline.build.outcome_file`), which it returns."""
    work = _work(work_key)
    [found] = [f for f in work.found if f.source.name == source_name]
    batches = source_batches(found, work.staged.config)
    run_logger().info("%s: %d objects in %d batches", source_name, objects, len(batches))
    local = None if work.dask_address is not None else work_key
    futures = []
    for batch in batches:
        _wait_for_a_free_worker(work)
        future = batch_task.with_options(task_run_name=batch.name).submit(
            batch, work.staged.settings, local
        )
        if work.free_workers is not None:
            future.add_done_callback(lambda _: work.free_workers.release())
        futures.append(future)
    outcomes = outcome_file(work.staged.settings.staging, number)
    for future in as_completed(futures):
        batch = future.result().value
        if local is None:  # on Dask: counted as each batch ends
            for outcome in batch:
                work.progress.object_finished(source_name, outcome)
        outcomes.add(batch)
        batch.clear()  # its future keeps the list: the build process keeps no outcome
    return Unwalked(outcomes)


@flow(name="arena-build", validate_parameters=False)
def arena_build_flow(version: str, out: str, sources: list[str], work_key: str) -> Unwalked:
    """One release build: a subflow per source, then the release's assembly; the release
    summary and the rejects become artifacts of the run. Any failure raises, so the run ends
    Failed."""
    work = _work(work_key)
    if work.has_ui:
        _say_where_the_run_is()
    work.progress.stage("objects")
    runs = _run_sources(work, work_key)
    work.progress.stage("assembling the release")
    assemble = assemble_task.with_options(task_run_name=f"assemble {version}")
    result = assemble(work_key, Unwalked(runs)).value
    _record(result)
    return Unwalked(result)


def _wait_for_a_free_worker(work: BuildWork) -> None:
    """Block until a worker process is free for one more batch (process runner only)."""
    if work.free_workers is None:
        return
    while not work.free_workers.acquire(timeout=0.2):
        if work.stopping.is_set():
            raise SupervisorClosed("the build is stopping")


def _run_sources(work: BuildWork, work_key: str) -> list:
    """Each source's subflow, SOURCES_AT_ONCE at a time (each in a thread with a copy of this
    run's context), with the build's task runner; their SourceRuns in the sources' order."""

    def run(number: int, found: DiscoveredSource):
        name = found.source.name
        subflow = source_flow.with_options(flow_run_name=name, task_runner=work.task_runner)
        started = time.perf_counter()
        with tags(name):
            outcomes = subflow(name, number, len(found.candidates), work_key).value
        return source_run(found, outcomes, time.perf_counter() - started)

    threads = concurrent.futures.ThreadPoolExecutor(SOURCES_AT_ONCE, "arena-source")
    # A subflow runs inside this flow's process, whose heartbeat already shows it is alive. The
    # setting is changed once for every subflow (each thread's context is a copy of this one):
    # a copy of Prefect's settings takes about 40 ms of CPU, 15 of them for the corpus
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        futures = [
            threads.submit(contextvars.copy_context().run, run, number, found)
            for number, found in enumerate(work.found)
        ]
    try:
        runs = [future.result() for future in futures]
    except BaseException:
        # Ctrl-C, SIGTERM or a failure: the batches end now (their worker processes stopped,
        # the tasks not yet started ending at once) rather than computing on after the build
        # has said it stopped, and before the staging folder is removed under them
        work.stopping.set()
        if work.pool is not None:
            work.pool.close(failed=True)
        threads.shutdown(wait=True, cancel_futures=True)
        raise
    threads.shutdown()
    return runs


def _say_where_the_run_is() -> None:
    """Print the flow run's page on the configured server's UI."""
    from prefect.runtime import flow_run
    from prefect.settings import PREFECT_UI_URL

    ui = PREFECT_UI_URL.value()
    if ui:
        print(f"arena build: Prefect flow run {ui}/runs/flow-run/{flow_run.id}", file=sys.stderr)


def _record(result: BuildResult) -> None:
    """The release summary and the rejects as artifacts of the run, a line per source."""
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

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


# --------------------------------------------------------------------------- the command's side
class _SaidByTheCommand(logging.Filter):
    """Drops the ERROR records, tracebacks included, that Prefect's engine logs for runs ended
    by a failure of the disk written to, Ctrl-C or SIGTERM (and the batches stopped with them):
    `arena build` says each in one line (exit 4, 130, 143), and the runs' states in Prefect
    still say what happened."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        message = record.getMessage()
        return not (
            isinstance(exc, (WriteFailed, KeyboardInterrupt, SupervisorClosed))
            or (isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS)
            or f"exception {WriteFailed.__name__}: " in message  # the final state
            or f"exception {SupervisorClosed.__name__}: " in message
            or "Crash detected! Execution was aborted by" in message  # Ctrl-C, SIGTERM
            or "Task run cancelled by the task runner" in message  # its batches, then
        )


_QUIET = _SaidByTheCommand()


def _quiet_what_the_command_says() -> None:
    """Put the filter on Prefect's run loggers, for the rest of the process: the threads of
    an interrupted build may still log its batches' end after the command has said it."""
    for name in ("prefect.flow_runs", "prefect.task_runs"):
        logger = logging.getLogger(name)
        if _QUIET not in logger.filters:
            logger.addFilter(_QUIET)


def build_with_prefect(
    config: BuildConfig,
    called: float,
    progress=None,
    server: PrefectServer | None = None,
) -> BuildResult:
    """One release build as Prefect flows. `server`: the build's API, started by the caller
    before this call so that it starts while the sources are discovered (None: start it
    here). A source that discovery cannot use ends the build before the wait for the server."""
    server = server or PrefectServer.start()
    with open_build(config, called, progress) as opened:
        opened.progress.stage("waiting for Prefect's server")
        opened.staged.seconds["orchestrator_start"] = server.wait()
        with server.active(), _task_runner(config) as (address, runner):
            work = BuildWork(opened.staged, opened.found, opened.pool, opened.progress, address)
            work.task_runner = runner
            work.has_ui = server.url is None
            if opened.pool is not None:
                work.free_workers = threading.Semaphore(opened.pool.workers)
            build = arena_build_flow.with_options(
                flow_run_name=f"build {config.version}", task_runner=runner
            )
            names = [s.name for s in config.sources]
            _quiet_what_the_command_says()
            with _handed_over(work) as key:
                return build(config.version, str(config.out.absolute()), names, key).value


@contextlib.contextmanager
def _task_runner(config: BuildConfig):
    """The Dask scheduler's address (None for the process runner) and the build's task runner:
    threads handing batches to the worker processes, or one Dask client for the whole build,
    on the existing cluster at --dask-address (made ready for this build:
    `dask.ready_cluster`) or on a temporary LocalCluster; its dashboard is printed."""
    if config.runner != "dask":
        yield None, ThreadPoolTaskRunner(max_workers=max(config.workers, 1))
        return
    from flows import dask

    with contextlib.ExitStack() as stack:
        address = config.dask_address
        if address is None:
            address = stack.enter_context(dask.local_cluster(config.workers))
        existing = config.dask_address is not None
        yield address, stack.enter_context(dask.build_task_runner(address, existing))
