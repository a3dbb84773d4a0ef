"""`arena build`: the release build, orchestrated by Prefect.

The build reads like a table of contents:

    build_flow (one Prefect flow per build)
      for each source:
        discover                every candidate of the source
        (cache lookups)         objects whose inputs did not change are taken from the cache
        source_flow (a subflow, only when something is left to compute)
          batch_task x B        one task per batch of the others: normalize, verify, categorize
      assemble                  manifests, split/eval200, release.json, CHANGELOG, card, checksums
      publish                   rename the staging folder to --out

All real work is in plain functions (`flows.pipeline`, `flows.release`, `flows.manifests`).
`--runner local` runs the same build without Prefect (benchmarks use it to measure Prefect's
share of the wall time). With `--workers N > 1` the thread runner hands each batch to a pool of
N worker processes (spawned, never forked, and without Prefect), so CPU-bound stages use every
core without booting one Prefect server per worker. `--runner dask` runs the batch tasks on a
Dask cluster through prefect-dask: a temporary local cluster whose workers are pointed at this
build's Prefect API, or an existing one with `--dask-address`.
"""

from __future__ import annotations

import os

# Prefect reads its settings when it is imported: set the defaults first.
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

import contextlib  # noqa: E402
import math  # noqa: E402
import multiprocessing  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from collections import Counter  # noqa: E402
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

from prefect import flow, task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402
from prefect.futures import as_completed  # noqa: E402
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings  # noqa: E402
from prefect.task_runners import ThreadPoolTaskRunner  # noqa: E402

from flows import manifests, pipeline, release  # noqa: E402
from flows.cache import (  # noqa: E402
    ObjectCache,
    canonical_json,
    default_cache_dir,
    sha256_file,
    sha256_hex,
)
from flows.pipeline import BatchSettings  # noqa: E402
from flows.progress import BuildProgress  # noqa: E402
from flows.selection import EvalCandidate, select_eval, split_of  # noqa: E402
from normalize.sources import (  # noqa: E402
    Candidate,
    SourceConfig,
    discover,
    load_sources,
    overrides_file,
)
from taxonomy import UNASSIGNED_SUPERCATEGORY  # noqa: E402

RUNNERS = ("thread", "dask", "local")
MAX_BATCHES_PER_SOURCE = 64
LOOKUP_THREADS = 4  # threads hashing files for cache lookups
LOOKUPS_IN_WORKERS = 1000  # a source this large is looked up by the worker processes
LOOKUP_CHUNK = 500  # at most this many candidates per lookup job of a worker process
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_LOCKED = 0, 1, 2, 3


class BuildError(RuntimeError):
    """The build cannot produce a release (a source cannot be read, a stage crashed...)."""


class AccountingError(BuildError):
    """discovered != accepted + rejected for some source: an object was lost or counted twice."""


@dataclass
class BuildConfig:
    """Everything a build needs. `cache_dir` None disables the cache."""

    sources: list[SourceConfig]
    out: Path
    version: str
    previous: Path | None = None
    batch_size: int = 64
    workers: int = 2
    runner: str = "thread"
    dask_address: str | None = None
    cache_dir: Path | None = None
    overrides: dict[str, str] = field(default_factory=dict)
    live: bool | None = None  # progress display; None: only on a terminal


@dataclass
class SourceRun:
    """What one source produced: its candidates' outcomes and how long it took."""

    source: SourceConfig
    discovered: list[str]  # object ids, sorted
    outcomes: list[dict]
    seconds: float = 0.0
    discover_seconds: float = 0.0


@dataclass
class BuildResult:
    """What a finished build wrote (`info` is its release.json) and how long each part took."""

    out: Path
    version: str
    content_hash: str
    info: dict
    cached: int
    computed: list[str]  # object ids computed by this build (the others came from the cache)
    internal_errors: list[str]
    seconds: dict[str, float]
    source_seconds: dict[str, float] = field(default_factory=dict)
    # Seconds per stage summed over objects (CPU-ish time across workers: see
    # flows.pipeline), plus discover and assemble.
    stage_seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        c = self.info["counts"]
        status = ", ".join(f"{k} {v}" for k, v in sorted(c["by_status"].items()))
        lines = [
            f"Release {self.version} written to {self.out}",
            f"  {c['discovered']} discovered, {c['accepted']} accepted ({status}), "
            f"{c['rejected']} rejected; {self.cached} objects reused from the cache",
            f"  {c['moving_joints']} moving joints, {len(c['by_supercategory'])} supercategories, "
            f"{c['eval200']} objects in eval200, {c['needs_review']} categories to review",
        ]
        for s in self.info["sources"]:
            lines.append(
                f"    {s['name']:<28} {s['accepted']:>6} accepted {s['rejected']:>6} rejected"
            )
        if self.internal_errors:
            lines.append(
                f"  WARNING: {len(self.internal_errors)} objects hit an internal error "
                f"(code internal.error in rejects.parquet): {', '.join(self.internal_errors[:5])}"
            )
        s = self.seconds
        lines.append(
            f"  {s['total']:.1f} s in all ({s.get('orchestrator_start', 0.0):.1f} s starting "
            f"Prefect), {c['discovered'] / max(s['total'], 1e-9):.1f} objects/s; "
            f"content hash {self.content_hash[:16]}"
        )
        return "\n".join(lines)


# --------------------------------------------------------------------------- batches and workers
class WorkerPool:
    """`workers` spawned processes (never forked, no Prefect inside) for the stages, started
    on first use: a build whose objects all come from the cache never starts them."""

    def __init__(self, workers: int):
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    self.workers,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=pipeline.exit_with_parent,
                    initargs=(os.getpid(),),
                )
            return self._pool

    def compute(self, misses: list[Candidate], settings: BatchSettings) -> list[dict]:
        return self._executor().submit(pipeline.compute_batch, misses, settings).result()

    def lookup(self, candidates: list[Candidate], settings: BatchSettings) -> list[dict | None]:
        """Cache lookups of many candidates, in chunks across the worker processes."""
        size = max(1, min(LOOKUP_CHUNK, math.ceil(len(candidates) / (4 * self.workers))))
        chunks = [candidates[i : i + size] for i in range(0, len(candidates), size)]
        executor = self._executor()
        futures = [executor.submit(pipeline.lookup_batch, chunk, settings) for chunk in chunks]
        return [outcome for future in futures for outcome in future.result()]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)


_POOL: WorkerPool | None = None  # the worker processes of the running build, if any


def plan_batches(candidates: list[Candidate], batch_size: int, workers: int) -> list[list]:
    """Consecutive batches of at most `batch_size` objects, at least `workers` batches when
    there are enough objects (so small sources still use every worker), and at most
    MAX_BATCHES_PER_SOURCE (a huge source gets bigger batches rather than thousands of task
    runs, which the temporary Prefect server handles badly)."""
    if not candidates:
        return []
    n_batches = max(math.ceil(len(candidates) / batch_size), min(workers, len(candidates)))
    n_batches = min(n_batches, MAX_BATCHES_PER_SOURCE)
    size = math.ceil(len(candidates) / n_batches)
    return [candidates[i : i + size] for i in range(0, len(candidates), size)]


def split_cached(
    candidates: list[Candidate], settings: BatchSettings, threads: int
) -> tuple[list[dict], list[Candidate]]:
    """(outcomes found in the cache, candidates to compute); cached objects never become
    Prefect tasks. A lookup reads and hashes files, in Python mostly: a large source is looked
    up by the worker processes (on every core: 20,000 warm objects took 43 s in threads), a
    small one in a few threads here (starting the workers would cost more)."""
    if settings.cache_dir is None:
        return [], list(candidates)
    if _POOL is not None and len(candidates) >= LOOKUPS_IN_WORKERS:
        found = _POOL.lookup(candidates, settings)
    else:
        cache = ObjectCache(settings.cache_dir)
        with ThreadPoolExecutor(max_workers=threads) as pool:
            found = list(
                pool.map(lambda c: pipeline.cached_outcome(c, settings, cache), candidates)
            )
    hits = [o for o in found if o is not None]
    misses = [c for c, o in zip(candidates, found, strict=True) if o is None]
    return hits, misses


def run_batch(batch: list[Candidate], settings: BatchSettings) -> list[dict]:
    """Compute one batch of cache misses: in the build's worker processes when it has them,
    else here (a Dask worker, or a build with one worker)."""
    if _POOL is not None:
        return _POOL.compute(batch, settings)
    return pipeline.compute_batch(batch, settings)


@contextlib.contextmanager
def worker_pool(config: BuildConfig):
    """Worker processes for the thread and local runners when --workers > 1 (Dask workers
    are the pool of the dask runner)."""
    global _POOL
    if config.workers <= 1 or config.runner == "dask":
        yield
        return
    _POOL = WorkerPool(config.workers)
    try:
        yield
    finally:
        _POOL.close()
        _POOL = None


DISCOVERY_ATTEMPTS = 3


def _discover(source: SourceConfig) -> list[Candidate]:
    """Every candidate of a source; a source that cannot be read fails the build (a release
    silently missing a whole library would be worse than no new release)."""
    if not source.path.is_dir():
        raise BuildError(f"source {source.name!r}: folder {source.path} does not exist")
    try:
        for attempt in range(DISCOVERY_ATTEMPTS):
            try:
                return discover(source)
            except OSError:
                if attempt + 1 == DISCOVERY_ATTEMPTS:
                    raise
                time.sleep(1.0)  # transient I/O (network file systems): try again
    except OSError as exc:
        raise BuildError(
            f"source {source.name!r}: cannot read {source.path}: {exc.strerror or exc}"
        ) from exc
    except Exception as exc:
        raise BuildError(f"source {source.name!r}: discovery failed: {exc}") from exc


def _count(progress: BuildProgress, source: SourceConfig, outcomes: list[dict]) -> None:
    accepted = sum(o["accepted"] for o in outcomes)
    cached = sum(o["cached"] for o in outcomes)
    progress.finished(source.name, accepted, len(outcomes) - accepted, cached)


# --------------------------------------------------------------------------- Prefect
@task(name="batch", retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE)
def batch_task(batch: list[Candidate], settings: BatchSettings) -> list[dict]:
    return run_batch(batch, settings)


def _source_batches(
    source: SourceConfig,
    misses: list[Candidate],
    settings: BatchSettings,
    config: BuildConfig,
    progress: BuildProgress,
) -> list[dict]:
    """Compute the objects of one source that the cache does not have, one task per batch."""
    futures = [
        batch_task.submit(batch, settings)
        for batch in plan_batches(misses, config.batch_size, config.workers)
    ]
    outcomes: list[dict] = []
    for future in as_completed(futures):
        batch = future.result()
        _count(progress, source, batch)
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


@flow(name="arena-source", validate_parameters=False)
def source_flow(source_name: str, objects: int, work: str) -> list[dict]:
    """The objects of one source that the cache does not have, one task per batch."""
    return _source_batches(*_work(work))


@flow(name="arena-build", validate_parameters=False)
def arena_build_flow(version: str, out: str, sources: list[str], work: str) -> BuildResult:
    """One release build: a subflow per source with work, then the release assembly."""
    return _build(*_work(work))


def build_flow(config: BuildConfig, called: float, dask_address: str | None = None) -> BuildResult:
    """One release build as a Prefect flow (`arena-build`), with a subflow per source that has
    objects to compute (`source-<name>`)."""

    def run_sources(settings, progress) -> list[SourceRun]:
        def compute(source: SourceConfig, misses: list[Candidate]) -> list[dict]:
            runner = _task_runner(config, dask_address)
            subflow = source_flow.with_options(name=f"source-{source.name}", task_runner=runner)
            # A subflow runs inside this flow's process, whose heartbeat already shows it is
            # alive; a subflow's own heartbeat thread costs up to a second when it ends
            # (measured: most of Prefect's time in a warm build of the corpus).
            with (
                _handed_over(source, misses, settings, config, progress) as work,
                temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}),
            ):
                return subflow(source.name, len(misses), work)

        return [run_source(s, settings, progress, compute) for s in config.sources]

    with _handed_over(config, run_sources, called) as work:
        names = [s.name for s in config.sources]
        return arena_build_flow(config.version, str(config.out), names, work)


def run_source(source: SourceConfig, settings: BatchSettings, progress: BuildProgress, compute):
    """Discover one source, take what the cache has and `compute(source, misses)` the rest (a
    Prefect subflow, or threads without Prefect); a fully cached source computes nothing."""
    started = time.perf_counter()
    candidates = _discover(source)
    discovered = time.perf_counter()
    release.pause_point("discover")
    progress.discovered(source.name, len(candidates))
    outcomes, misses = split_cached(candidates, settings, LOOKUP_THREADS)
    _count(progress, source, outcomes)
    if misses:
        outcomes.extend(compute(source, misses))
    return SourceRun(
        source,
        [c.object_id for c in candidates],
        outcomes,
        time.perf_counter() - started,
        discovered - started,
    )


def _compute_local(config: BuildConfig, settings: BatchSettings, progress: BuildProgress):
    """Compute cache misses in threads (each hands its batch to the worker pool), no Prefect."""

    def compute(source: SourceConfig, misses: list[Candidate]) -> list[dict]:
        outcomes: list[dict] = []
        batches = plan_batches(misses, config.batch_size, config.workers)
        with ThreadPoolExecutor(max_workers=config.workers) as threads:
            for batch in threads.map(lambda b: run_batch(b, settings), batches):
                _count(progress, source, batch)
                outcomes.extend(batch)
        return outcomes

    return compute


# --------------------------------------------------------------------------- the build
def _build(config: BuildConfig, run_sources, called: float) -> BuildResult:
    """Lock --out, process every source into a staging folder, assemble, publish.
    `run_sources(settings, progress)` returns the SourceRun of every source, in order;
    `called`: when the build was asked for (time.perf_counter), to time Prefect's start-up."""
    started = time.perf_counter()
    seconds = {"orchestrator_start": started - called}
    out = config.out.absolute()
    with release.build_lock(out):
        release.recover(out)
        release.check_out(out)
        staging = release.new_staging(out)
        try:
            settings = BatchSettings(
                staging=staging,
                cache_dir=config.cache_dir,
                overrides=tuple(sorted(config.overrides.items())),
                versions=pipeline.current_versions(),
            )
            (staging / "objects").mkdir()
            with BuildProgress(live=config.live) as progress, worker_pool(config):
                runs = run_sources(settings, progress)
            seconds["objects"] = time.perf_counter() - started
            t = time.perf_counter()
            result = assemble(staging, runs, config, dict(settings.versions))
            seconds["assemble"] = time.perf_counter() - t
            release.publish(staging, out)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    stages = Counter({"discover": sum(run.discover_seconds for run in runs)})
    for o in (o for run in runs for o in run.outcomes):
        stages.update({k: v for k, v in o["seconds"].items() if k != "total"})
    seconds["stages"] = sum(v for k, v in stages.items() if k != "discover")
    seconds["total"] = time.perf_counter() - called
    result.seconds = seconds
    result.stage_seconds = {**dict(sorted(stages.items())), "assemble": seconds["assemble"]}
    return result


def build_release(config: BuildConfig) -> BuildResult:
    """Build a release as configured (Prefect flow unless `config.runner == "local"`)."""
    called = time.perf_counter()
    if config.runner == "local":

        def run_sources(settings, progress) -> list[SourceRun]:
            compute = _compute_local(config, settings, progress)
            return [run_source(s, settings, progress, compute) for s in config.sources]

        return _build(config, run_sources, called)
    with prefect_api():
        if config.runner == "dask" and config.dask_address is None:
            with local_dask_cluster(config.workers) as address:
                return build_flow(config, called, dask_address=address)
        return build_flow(config, called, dask_address=config.dask_address)


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


# --------------------------------------------------------------------------- assembly
def _snapshot(run: SourceRun) -> str:
    """sha256 over the source config (without its local path), its candidates, and the
    content of every file they read (paths relative to the source root)."""
    config = {k: v for k, v in run.source.as_dict().items() if k not in ("path", "package_roots")}
    root = str(run.source.path) + os.sep

    def relative(path: str) -> str:
        return path[len(root) :] if path.startswith(root) else os.path.relpath(path, root)

    per_object = {}
    for o in run.outcomes:
        per_object[o["source_id"]] = sorted(
            (relative(path), digest) for path, digest in o["inputs"].items()
        )
    return sha256_hex(canonical_json({"config": config, "objects": per_object}))


def check_accounting(runs: list[SourceRun]) -> None:
    """Every discovered object has exactly one outcome, per source; raise otherwise."""
    problems = []
    for run in runs:
        seen = Counter(o["object_id"] for o in run.outcomes)
        accepted = sum(o["accepted"] for o in run.outcomes)
        rejected = len(run.outcomes) - accepted
        missing = sorted(set(run.discovered) - set(seen))
        extra = sorted(set(seen) - set(run.discovered))
        twice = sorted(i for i, n in seen.items() if n > 1)
        if len(run.discovered) != accepted + rejected or missing or extra or twice:
            problems.append(
                f"source {run.source.name}: discovered {len(run.discovered)} != accepted "
                f"{accepted} + rejected {rejected}"
                + (f"; without outcome: {missing[:5]}" if missing else "")
                + (f"; not discovered: {extra[:5]}" if extra else "")
                + (f"; counted twice: {twice[:5]}" if twice else "")
            )
    if problems:
        raise AccountingError("accounting failed:\n  " + "\n  ".join(problems))


def assemble(
    staging: Path, runs: list[SourceRun], config: BuildConfig, versions: dict[str, str]
) -> BuildResult:
    """Write manifests, plots, release.json, CHANGELOG.md, README.md and checksums.sha256 into
    the staging folder (everything but the object folders, which the batches wrote)."""
    check_accounting(runs)
    outcomes = [o for run in runs for o in run.outcomes]
    accepted = [o for o in outcomes if o["accepted"]]
    tables: dict[str, list[dict]] = {name: [] for name in manifests.TABLES}
    for o in accepted:
        for name in ("objects", "joints", "links", "review"):
            tables[name].extend(o["rows"].get(name, []))
    tables["rejects"] = [o["reject"] for o in outcomes if not o["accepted"]]

    eval_ids = select_eval(
        [
            EvalCandidate(
                r["object_id"], r["category"], r["supercategory"], r["status"], r["n_joints"]
            )
            for r in tables["objects"]
        ],
        last={UNASSIGNED_SUPERCATEGORY},
    )
    tables["objects"] = [
        {**r, "split": split_of(r["object_id"]), "eval200": r["object_id"] in eval_ids}
        for r in tables["objects"]
    ]

    # Object folders that no accepted outcome claims (none expected) do not enter the release.
    claimed = {o["object_id"] for o in accepted}
    for folder in (staging / "objects").iterdir():
        if folder.name not in claimed:
            shutil.rmtree(folder)

    (staging / "manifest").mkdir()
    arrow = {name: manifests.to_table(name, rows) for name, rows in tables.items()}
    for name, table in arrow.items():
        manifests.write_table(table, staging / "manifest" / f"{name}.parquet")
    release.pause_point("assemble")
    known = {
        f"objects/{o['object_id']}/{name}": digest
        for o in accepted
        for name, digest in o["files"].items()
    }
    for name in manifests.TABLES:
        path = staging / "manifest" / f"{name}.parquet"
        known[f"manifest/{name}.parquet"] = sha256_file(path)
    content = release.content_hash(known)

    stats_md = _statistics(arrow, staging)
    previous_info = release.read_release(config.previous) if config.previous else None
    previous_objects = release.read_objects(config.previous) if config.previous else None
    info = release.write_release_json(
        staging, _release_info(runs, tables, config, versions, content, previous_info)
    )
    (staging / "CHANGELOG.md").write_text(
        release.changelog_markdown(
            config.version,
            tables["objects"],
            previous_objects,
            previous_info["version"] if previous_info else None,
        ),
        encoding="utf-8",
    )
    (staging / "README.md").write_text(
        release.card_markdown(info, tables["objects"], tables["rejects"], stats_md),
        encoding="utf-8",
    )
    release.write_checksums(staging, known)
    return BuildResult(
        out=config.out.absolute(),
        version=config.version,
        content_hash=content,
        info=info,
        cached=sum(o["cached"] for o in outcomes),
        computed=sorted(o["object_id"] for o in outcomes if not o["cached"]),
        internal_errors=sorted(o["object_id"] for o in outcomes if o["internal_error"]),
        seconds={},
        source_seconds={run.source.name: run.seconds for run in runs},
    )


def _statistics(arrow: dict, staging: Path) -> str:
    """The taxonomy stage's statistics: plots/*.png and their markdown for the card."""
    from taxonomy import write_release_statistics

    objects = arrow["objects"].select(["object_id", "category", "supercategory", "source"])
    joints = arrow["joints"].select(["object_id", "type"])
    return write_release_statistics(objects.to_pandas(), joints.to_pandas(), staging / "plots")


def _release_info(runs, tables, config, versions, content, previous_info) -> dict:
    objects = tables["objects"]
    joints = tables["joints"]
    sources = []
    for run in runs:
        accepted = sum(o["accepted"] for o in run.outcomes)
        sources.append(
            {
                "name": run.source.name,
                "format": run.source.format,
                "license": run.source.license,
                "snapshot_sha256": _snapshot(run),
                "discovered": len(run.discovered),
                "accepted": accepted,
                "rejected": len(run.outcomes) - accepted,
            }
        )
    return {
        "format": release.RELEASE_FORMAT,
        "version": config.version,
        "pipeline_version": versions["pipeline"],
        "code_fingerprint": versions["code"],
        "convention_version": versions["convention"],
        "taxonomy_version": versions["taxonomy"],
        "sources": sources,
        "counts": {
            "discovered": sum(s["discovered"] for s in sources),
            "accepted": len(objects),
            "rejected": len(tables["rejects"]),
            "joints": len(joints),
            "moving_joints": sum(j["type"] != "fixed" for j in joints),
            "links": len(tables["links"]),
            "eval200": sum(o["eval200"] for o in objects),
            "needs_review": len(tables["review"]),
            "by_supercategory": dict(sorted(Counter(o["supercategory"] for o in objects).items())),
            "by_joint_type": dict(sorted(Counter(j["type"] for j in joints).items())),
            "by_status": dict(sorted(Counter(o["status"] for o in objects).items())),
            "by_split": dict(sorted(Counter(o["split"] for o in objects).items())),
            "rejects_by_stage": dict(
                sorted(Counter(r["stage"] for r in tables["rejects"]).items())
            ),
        },
        "previous": (
            {"version": previous_info["version"], "content_hash": previous_info["content_hash"]}
            if previous_info
            else None
        ),
        "content_hash": content,
    }


# --------------------------------------------------------------------------- command line
def _fail(message: str, code: int) -> int:
    print(f"arena build: {message}", file=sys.stderr)
    return code


def demo_sources(cache_root: Path) -> Path:
    """The embedded demo library (the generator's curated set), generated once into the cache
    folder under a key of the generator's code, and its sources.yaml."""
    from flows.generate import generate_library

    generator = Path(__file__).resolve().parent
    files = sorted([generator / "generate.py", *(generator / "samples").rglob("*.py")])
    key = sha256_hex(b"".join(p.read_bytes() for p in files if p.is_file()))[:16]
    folder = cache_root / "demo" / key
    if not (folder / "sources.yaml").is_file():
        tmp = folder.with_name(f".{key}.{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        generate_library(tmp, n=0, seed=0)
        with contextlib.suppress(OSError):  # a concurrent demo build may have won the race
            os.rename(tmp, folder)
        shutil.rmtree(tmp, ignore_errors=True)
    return folder / "sources.yaml"


def category_overrides_for(configs: list[SourceConfig], path: Path | None) -> dict[str, str]:
    """The curators' overrides file (object_id -> category), after checking that it and every
    source's own `overrides` name categories of the taxonomy (a TaxonomyError otherwise)."""
    from taxonomy import TaxonomyError, load_overrides, load_taxonomy

    taxonomy = load_taxonomy()
    for source in configs:
        unknown = sorted(set(source.overrides.values()) - set(taxonomy.categories))
        if unknown:
            raise TaxonomyError(
                f"source {source.name!r} overrides name categories not in taxonomy "
                f"{taxonomy.version}: {', '.join(unknown)}",
                code="overrides.unknown_category",
            )
    return load_overrides(path, taxonomy) if path is not None else {}


def build_command(
    *,
    sources: Path | None,
    out: Path,
    version: str | None,
    previous: Path | None,
    batch_size: int,
    workers: int,
    runner: str,
    dask_address: str | None,
    cache_dir: Path | None,
    no_cache: bool,
    overrides: Path | None = None,
) -> int:
    """`arena build`: exit 0 on success, 1 when the build fails, 2 on a usage error (bad
    sources file, options or --previous), 3 when another build holds --out."""
    if runner not in RUNNERS:
        return _fail(f"--runner must be one of {', '.join(RUNNERS)}, not {runner!r}", EXIT_USAGE)
    if batch_size < 1 or workers < 1:
        return _fail("--batch-size and --workers must be at least 1", EXIT_USAGE)
    if dask_address and runner != "dask":
        return _fail("--dask-address needs --runner dask", EXIT_USAGE)
    cache_root = Path(cache_dir) if cache_dir else default_cache_dir()
    if sources is None:
        sources = demo_sources(cache_root)
    try:
        configs = load_sources(sources)
        category_overrides = category_overrides_for(configs, overrides or overrides_file(sources))
        if previous is not None:
            release.read_release(previous)
        release.check_out(out)
    except (release.ReleaseError, ValueError) as exc:  # SourcesFileError, TaxonomyError...
        return _fail(str(exc), EXIT_USAGE)
    config = BuildConfig(
        sources=configs,
        out=Path(out),
        version=version or release.default_version(),
        previous=previous,
        batch_size=batch_size,
        workers=workers,
        runner=runner,
        dask_address=dask_address,
        cache_dir=None if no_cache else cache_root,
        overrides=category_overrides,
    )
    try:
        result = build_release(config)
    except release.BuildLocked as exc:
        return _fail(str(exc), EXIT_LOCKED)
    except (BuildError, release.ReleaseError) as exc:
        return _fail(f"FAILED, nothing was published: {exc}", EXIT_FAILED)
    print(result.summary())
    return EXIT_OK
