"""The release build without Prefect: discover each source, run its objects in batches (each
object from the cache when unchanged, else computed in worker processes, --workers of them),
check that every discovered object is accounted for, assemble the release
(`export.assemble`) and publish it.

    build_locally(config, progress)        `arena build --runner local`
      staged_build                         lock --out, a staging folder, the batch settings
      discover_source per source           candidates (plain Python, before any work)
      run_sources_locally                  every source's batches, `run_batch` each
      finish_build                         check_accounting; export.assemble.assemble_release
                                           (duplicates, manifests, card, changelog,
                                           checksums); export.release.publish

`run_batch` is the work of one batch, whoever runs it: a thread here, or a Prefect batch task
(`flows.build`) on the task runner the user chose.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from duplicates import DuplicateSettings
from duplicates.stage import PairJob, measured_jobs
from export import release
from export.assemble import assemble_release
from export.outcome import ObjectOutcome, OutcomeFile
from normalize.adapters import discover
from normalize.discovery import Candidate, skipped_files
from normalize.sources import SourceConfig
from normalize.workers import (
    default_object_memory,
    default_object_seconds,
    hard_seconds,
    shared,
)
from pipeline import chain, defaults
from pipeline.cache import FORMAT as CACHE_FORMAT
from pipeline.cache import ObjectCache, ResultStore
from pipeline.chain import BatchSettings

MAX_BATCHES_PER_SOURCE = 64
MIN_BATCH = 8  # objects a source's batch gets at least when the source is split among workers
#: a batch this large is looked up in the cache by the worker process that computes it (on
#: every core: 20,000 warm objects took 43 s looked up in threads), a smaller one in the
#: batch task's thread (no worker process starts for a build with nothing to compute)
LOOKUPS_IN_WORKERS = 128


class BuildError(RuntimeError):
    """The build cannot produce a release (a source cannot be read, a stage crashed...)."""


class OutputsOverlapError(ValueError):
    """--out (with its staging folder beside it) or the cache lies inside a source root, or
    one inside the other: a usage error, found before anything is read or written."""


def _nested(a: Path, b: Path) -> bool:
    """Whether `a` is `b` or lies inside it, symlinks followed."""
    real_a, real_b = os.path.realpath(a), os.path.realpath(b)
    return real_a == real_b or real_a.startswith(real_b.rstrip(os.sep) + os.sep)


def check_outputs_apart(sources: list[SourceConfig], out: Path, cache_dir: Path | None) -> None:
    """Raise OutputsOverlapError when the build would read what it writes: --out, the cache or
    the mesh store inside a source (or package) root or holding one (discovery would ingest the
    build's own staging folder; publishing would replace the library), or --out and the cache
    or the mesh store nested (publishing would delete them)."""
    out = Path(out).absolute()
    writes = [("--out", out)]
    kept = []  # what publishing --out must not delete
    if cache_dir is not None:  # where the cache writes (a library below it, as the demo's, is fine)
        cache = Path(cache_dir).absolute()
        writes.append(("the cache", cache / f"v{CACHE_FORMAT}"))
        kept.append(("the cache", cache))
    store = chain.mesh_store(Path(cache_dir) if cache_dir is not None else None)
    if store is not None:
        store = store.absolute()
        if any(_nested(store, path) for _, path in kept):
            writes.append(("the cache", store))
        else:
            writes.append(("the mesh store ($ARENA_MESH_STORE)", store))
            kept.append(writes[-1])
    problems = []
    for source in sources:
        for root in (source.path, *source.package_roots):
            for what, path in writes:
                if _nested(path, root) or _nested(root, path):
                    inside = "inside" if _nested(path, root) else "around"
                    problems.append(f"{what} {path} is {inside} the root {root} of {source.name}")
    for what, path in kept:
        if _nested(path, out) or _nested(out, path):
            problems.append(f"--out {out} and {what} {path} lie inside one another")
    if problems:
        raise OutputsOverlapError(
            "outputs must lie apart from the inputs and from each other:\n  "
            + "\n  ".join(problems)
        )


class AccountingError(BuildError):
    """discovered != accepted + rejected for some source: an object was lost or counted twice."""


@dataclass
class BuildConfig:
    """Everything a build needs. `cache_dir` None disables the cache."""

    sources: list[SourceConfig]
    out: Path
    version: str
    previous: Path | None = None
    batch_size: int = defaults.BATCH_SIZE
    # worker processes computing the objects, each object within its limits; 0: in this
    # process, without per-object limits (tests that patch the stages; the command line
    # needs at least 1)
    workers: int = defaults.WORKERS
    runner: str = defaults.RUNNER
    dask_address: str | None = None
    cache_dir: Path | None = None
    overrides: dict[str, str] = field(default_factory=dict)
    duplicates: DuplicateSettings | None = None  # None: keep and flag, priority = sources order
    live: bool | None = None  # progress display; None: only on a terminal
    replace: bool = False  # replace a release already at `out` (`--replace`)
    sources_file: Path | None = None  # copied into the release (else the settings as YAML)
    # wall clock per object in the worker processes (limits.time): $ARENA_OBJECT_SECONDS or
    # normalize.workers.OBJECT_SECONDS; None: unlimited
    object_seconds: float | None = field(default_factory=default_object_seconds)
    # address space one object may add in a worker process (limits.memory):
    # $ARENA_OBJECT_MEMORY_MB or normalize.workers.OBJECT_MEMORY; None: unlimited
    object_memory: int | None = field(default_factory=default_object_memory)


@dataclass
class SourceRun:
    """What one source produced: its candidates' outcomes and how long it took."""

    source: SourceConfig
    discovered: list[str]  # object ids, sorted
    outcomes: list[ObjectOutcome] | OutcomeFile  # builds keep a file; a list in tests
    seconds: float = 0.0
    discover_seconds: float = 0.0
    skipped: dict = field(default_factory=dict)  # normalize.discovery.skipped_files


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
    # pipeline.chain), plus discover and assemble.
    stage_seconds: dict[str, float] = field(default_factory=dict)
    rejects: list[dict] = field(default_factory=list)  # the rejects table's rows

    def markdown(self) -> str:
        """The release summary as markdown (the Prefect build's artifact)."""
        c, s = self.info["counts"], self.seconds
        lines = [
            f"# Release {self.version}",
            "",
            f"Written to `{self.out}`: {c['discovered']} discovered, {c['accepted']} accepted, "
            f"{c['rejected']} rejected, {self.cached} reused from the cache; content hash "
            f"`{self.content_hash}`.",
            "",
            "| source | discovered | accepted | rejected | seconds |",
            "|---|---|---|---|---|",
            *(
                f"| {x['name']} | {x['discovered']} | {x['accepted']} | {x['rejected']} | "
                f"{self.source_seconds.get(x['name'], 0.0):.1f} |"
                for x in self.info["sources"]
            ),
            "",
        ]
        codes = c.get("rejects_by_code", {})
        if codes:
            lines += ["| rejection code | candidates |", "|---|---|"]
            lines += [f"| {code} | {n} |" for code, n in codes.items()]
            lines += ["", f"Details: `{self.out / 'manifest' / 'rejects.parquet'}`.", ""]
        lines.append(
            f"{s['total']:.1f} s in all: {s.get('orchestrator_start', 0.0):.1f} s waiting for "
            f"Prefect's server, {s.get('objects', 0.0):.1f} s for the objects, "
            f"{s.get('assemble', 0.0):.1f} s assembling."
        )
        return "\n".join(lines)

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
            for reason, v in s.get("skipped", {}).items():
                lines.append(
                    f"      skipped {v['count']} files ({reason}, e.g. {v['examples'][0]})"
                )
        codes = c.get("rejects_by_code", {})
        if codes:
            listed = ", ".join(f"{code} {n}" for code, n in codes.items())
            lines.append(
                f"  rejected by code: {listed} (each with its message, file and element in "
                f"{self.out / 'manifest' / 'rejects.parquet'})"
            )
        if self.internal_errors:
            lines.append(
                f"  WARNING: {len(self.internal_errors)} objects hit an internal error "
                f"(code internal.error in rejects.parquet): {', '.join(self.internal_errors[:5])}"
            )
        s = self.seconds
        lines.append(
            f"  {s['total']:.1f} s in all ({s.get('orchestrator_start', 0.0):.1f} s waiting for "
            f"Prefect's server), {c['discovered'] / max(s['total'], 1e-9):.1f} objects/s; "
            f"content hash {self.content_hash[:16]}"
        )
        return "\n".join(lines)


# --------------------------------------------------------------------------- batches and workers
class WorkerPool:
    """`workers` spawned processes (never forked, no Prefect inside) for the stages, started
    on first use: a build whose objects all come from the cache never starts them. Each object
    is watched from outside (`normalize.workers.Supervisor`): one that kills its process (a
    crash in C code, the out-of-memory killer) is refused with `limits.crash`, one stuck in C
    code past its wall clock with `limits.time`; the process is replaced and the batch goes on.
    Thread-safe: each batch runs in one process, a caller waits for a free one."""

    def __init__(self, workers: int):
        self.workers = workers
        self.supervisor = shared(workers)  # the last build's processes, when they fit

    def run(self, fn, candidates: list[Candidate], settings: BatchSettings, on_outcome) -> list:
        """`fn(candidates, settings)` (a `pipeline.chain` generator) in one worker process;
        `on_outcome(outcome)` as each object's outcome arrives."""
        return self.supervisor.run(
            fn,
            candidates,
            (settings,),
            hard_seconds(settings.object_seconds),
            lambda candidate, lost: chain.lost_outcome(candidate, settings, lost),
            on_outcome,
        )

    def measure_pairs(self, job: PairJob) -> list:
        """The duplicate stage's evidence on one job of pairs, in a worker process."""
        [evidence] = self.supervisor.run(measured_jobs, [job], (), None, _pair_job_lost)
        return evidence

    def close(self, failed: bool = False) -> None:
        """The worker processes are kept for the next build (`shared`) unless this one
        `failed`, when batches may still run in them."""
        if failed:
            self.supervisor.close()


def _pair_job_lost(job: PairJob, lost) -> list:
    raise BuildError(f"the duplicate stage lost its worker process: {lost.message}")


@dataclass
class PairJobsInWorkers:
    """The duplicate stage's pair jobs (`duplicates.stage.JobRunner`) on the build's worker
    processes, as many at once as there are."""

    pool: WorkerPool

    @property
    def workers(self) -> int:
        return self.pool.workers

    def run(self, jobs: list[PairJob]) -> list[list]:
        with ThreadPoolExecutor(self.pool.workers, "arena-pairs") as threads:
            return list(threads.map(self.pool.measure_pairs, jobs))


@contextlib.contextmanager
def worker_pool(config: BuildConfig):
    """The WorkerPool of a build (None for the dask runner, whose workers are its pool, and for
    --workers 0), also for --workers 1: each object has its memory and time limits, and a
    crash loses only it."""
    if config.runner == "dask" or config.workers == 0:
        yield None
        return
    pool = WorkerPool(config.workers)
    failed = True
    try:
        yield pool
        failed = False
    finally:
        pool.close(failed)


def plan_batches(candidates: list, batch_size: int, workers: int) -> list[list]:
    """Consecutive batches of at most `batch_size` objects, at least `workers` batches when
    each gets MIN_BATCH objects (so small sources still use every worker; smaller ones are one
    batch, since two sources run at once and each batch is a task run of Prefect's), and at
    most MAX_BATCHES_PER_SOURCE (a huge source gets bigger batches rather than thousands of
    task runs, which the temporary Prefect server handles badly)."""
    if not candidates:
        return []
    spread = min(workers, max(1, len(candidates) // MIN_BATCH))
    n_batches = max(math.ceil(len(candidates) / batch_size), spread)
    n_batches = min(n_batches, MAX_BATCHES_PER_SOURCE)
    size = math.ceil(len(candidates) / n_batches)
    return [candidates[i : i + size] for i in range(0, len(candidates), size)]


class Batch:
    """What one batch task works on: batch `number` of `of` of a source's candidates. A plain
    class: Prefect walks the dataclasses among a task's parameters, and would walk every
    candidate."""

    __slots__ = ("source", "number", "of", "candidates")

    def __init__(self, source: str, number: int, of: int, candidates: list[Candidate]):
        self.source, self.number, self.of, self.candidates = source, number, of, candidates

    @property
    def name(self) -> str:
        return f"{self.source} batch {self.number}/{self.of}"


def source_batches(found: DiscoveredSource, config: BuildConfig) -> list[Batch]:
    """The batches of a discovered source (`plan_batches`)."""
    chunks = plan_batches(found.candidates, config.batch_size, config.workers)
    return [Batch(found.source.name, k, len(chunks), c) for k, c in enumerate(chunks, 1)]


def run_batch(
    batch: Batch, settings: BatchSettings, pool: WorkerPool | None, on_outcome=None
) -> list[dict]:
    """Every object of a batch, from the cache or computed: in the build's worker processes
    (`pool`), else here (a Dask worker, or a build with 0 workers). A small batch is looked up
    in the cache here, so that a build with nothing to compute never starts a worker process;
    a large one (LOOKUPS_IN_WORKERS) in the worker process, on every core.
    `on_outcome(outcome)` as each object's outcome is known."""
    report = on_outcome or _ignore
    if pool is None:
        outcomes = []
        for outcome in chain.batch_outcomes(batch.candidates, settings):
            report(outcome)
            outcomes.append(outcome)
        return outcomes
    if settings.cache_dir is None or len(batch.candidates) >= LOOKUPS_IN_WORKERS:
        return pool.run(chain.batch_outcomes, batch.candidates, settings, report)
    cache = ObjectCache(settings.cache_dir)
    found = []
    for candidate in batch.candidates:
        found.append(chain.cached_outcome(candidate, settings, cache))
        if found[-1] is not None:
            report(found[-1])
    misses = [c for c, o in zip(batch.candidates, found, strict=True) if o is None]
    computed = iter(pool.run(chain.computed_outcomes, misses, settings, report) if misses else [])
    return [o if o is not None else next(computed) for o in found]


def _ignore(outcome: ObjectOutcome) -> None:
    pass


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


@dataclass
class DiscoveredSource:
    """A source's candidates, found by discovery (plain Python, before any object's work)."""

    source: SourceConfig
    candidates: list[Candidate]
    discover_seconds: float
    skipped: dict  # normalize.discovery.skipped_files


def discover_source(source: SourceConfig, progress) -> DiscoveredSource:
    """Discover one source; a source with no candidate fails the build unless allowed empty."""
    started = time.perf_counter()
    candidates = _discover(source)
    skipped = skipped_files(source, candidates)
    if not candidates and not source.allow_empty:
        raise BuildError(
            f"source {source.name!r}: discovery found no {source.format} candidates in "
            f"{source.path}{_skipped_text(skipped)}; fix the source's path, entry or include "
            "patterns, or set `allow_empty: true` for it in the sources file"
        )
    release.pause_point("discover")
    progress.discovered(source.name, len(candidates))
    return DiscoveredSource(source, candidates, time.perf_counter() - started, skipped)


def source_run(found: DiscoveredSource, outcomes: OutcomeFile, seconds: float) -> SourceRun:
    """The SourceRun of a discovered source once its batches gave `outcomes` (in `seconds`)."""
    return SourceRun(
        found.source,
        sorted(c.object_id for c in found.candidates),
        outcomes,
        found.discover_seconds + seconds,
        found.discover_seconds,
        found.skipped,
    )


def _skipped_text(skipped: dict) -> str:
    if not skipped:
        return ""
    parts = [f"{v['count']} {reason} (e.g. {v['examples'][0]})" for reason, v in skipped.items()]
    return " (skipped files: " + ", ".join(parts) + ")"


def run_sources_locally(
    found: list[DiscoveredSource], staged: StagedBuild, pool: WorkerPool | None, progress
) -> list[SourceRun]:
    """Every batch of every source, `workers` at a time in threads (each hands its batch to a
    worker process), without Prefect; a source's SourceRun as soon as its batches are done."""
    config, settings = staged.config, staged.settings
    batches = [(i, b) for i, f in enumerate(found) for b in source_batches(f, config)]
    outcomes = [outcome_file(settings.staging, i) for i in range(len(found))]
    ended = [0.0] * len(found)

    stopping = threading.Event()
    writing = threading.Lock()

    def run(i: int, batch: Batch) -> None:
        if stopping.is_set():
            return
        name = batch.source
        done = run_batch(batch, settings, pool, lambda o: progress.object_finished(name, o))
        with writing:
            outcomes[i].add(done)
        ended[i] = time.perf_counter()

    started = time.perf_counter()
    threads = ThreadPoolExecutor(max_workers=max(1, config.workers))
    try:
        for future in [threads.submit(run, i, b) for i, b in batches]:
            future.result()
    except BaseException:
        # Ctrl-C, SIGTERM, a failure: the batches end now (their worker processes stopped),
        # before the staging folder is removed under them
        stopping.set()
        if pool is not None:
            pool.close(failed=True)
        threads.shutdown(wait=True, cancel_futures=True)
        raise
    threads.shutdown()
    return [source_run(f, outcomes[i], max(ended[i] - started, 0.0)) for i, f in enumerate(found)]


# --------------------------------------------------------------------------- the build
class NoProgress:
    """The progress display of a build nobody watches (`flows.progress` draws one)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def discovered(self, source: str, n: int) -> None:
        pass

    def object_finished(self, source: str, outcome: ObjectOutcome) -> None:
        pass

    def stage(self, text: str) -> None:
        pass


@dataclass
class StagedBuild:
    """A build holding --out's lock, with its staging folder and batch settings."""

    config: BuildConfig
    settings: BatchSettings
    started: float
    # orchestrator_start: how long the build waited for Prefect's server once discovery, cache
    # lookups and the batches were under way (0 without Prefect)
    seconds: dict[str, float]


def outcomes_folder(staging: Path) -> Path:
    """Where the sources' outcomes are kept during a build: beside the staging folder, named
    like it, so that `release.recover` removes it after a killed build."""
    return staging.with_name(f"{staging.name}-outcomes")


def outcome_file(staging: Path, number: int) -> OutcomeFile:
    """The file of the `number`th source's outcomes (`outcomes_folder`)."""
    return OutcomeFile(outcomes_folder(staging) / f"{number}.jsonl")


@contextlib.contextmanager
def staged_build(config: BuildConfig, called: float):
    """Lock --out, recover a killed build's leftovers, refuse a release that may not be
    replaced, create the staging folder (removed again if the build fails). `called`: when the
    build was asked for (time.perf_counter)."""
    started = time.perf_counter()
    out = config.out.absolute()
    check_outputs_apart(config.sources, out, config.cache_dir)
    if config.previous is not None:  # a bad --previous is found before the build, not after
        release.read_release(config.previous)
        release.read_objects(config.previous)
    with release.build_lock(out):
        release.recover(out)
        release.check_out(out)
        release.check_replace(out, config.replace)
        staging = release.new_staging(out)
        try:
            settings = BatchSettings(
                staging=staging,
                cache_dir=config.cache_dir,
                overrides=tuple(sorted(config.overrides.items())),
                versions=chain.current_versions(),
                object_seconds=config.object_seconds,
                object_memory=config.object_memory,
                mesh_store=chain.mesh_store(config.cache_dir),
            )
            (staging / "objects").mkdir()
            yield StagedBuild(
                config, settings, started, {"orchestrator_start": 0.0, "called": called}
            )
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        finally:
            shutil.rmtree(outcomes_folder(staging), ignore_errors=True)


def finish_build(staged: StagedBuild, runs: list[SourceRun], pair_runner=None) -> BuildResult:
    """Check the accounting, assemble the release in the staging folder and publish it.
    `pair_runner`: where the duplicate stage measures many pairs (`duplicates.stage.JobRunner`;
    None: the stage's own processes)."""
    config, settings, seconds = staged.config, staged.settings, dict(staged.seconds)
    called = seconds.pop("called")
    seconds["objects"] = time.perf_counter() - staged.started
    t = time.perf_counter()
    check_accounting(runs)
    info, content = assemble_release(
        settings.staging,
        runs,
        config.version,
        config.previous,
        dict(settings.versions),
        config.sources_file,
        config.duplicates,
        seconds,
        cache=None
        if settings.cache_dir is None
        else ResultStore(settings.cache_dir, dict(settings.versions)["code"]),
        pair_runner=pair_runner,
    )
    seconds["assemble"] = time.perf_counter() - t
    release.publish(settings.staging, config.out.absolute())
    stages = Counter({"discover": sum(run.discover_seconds for run in runs)})
    cached, computed, internal_errors, rejects = 0, [], [], []
    for run in runs:
        for o in run.outcomes:  # one at a time: a file's outcomes are read back
            stages.update({k: v for k, v in o.seconds.items() if k != "total"})
            cached += o.cached
            if not o.cached:
                computed.append(o.object_id)
            if o.internal_error:
                internal_errors.append(o.object_id)
            if not o.accepted:
                rejects.append(o.reject)
    seconds["stages"] = sum(v for k, v in stages.items() if k != "discover")
    seconds["total"] = time.perf_counter() - called
    stages["duplicates"] = seconds["duplicates"]
    return BuildResult(
        out=config.out.absolute(),
        version=config.version,
        content_hash=content,
        info=info,
        cached=cached,
        computed=sorted(computed),
        internal_errors=sorted(internal_errors),
        seconds=seconds,
        source_seconds={run.source.name: run.seconds for run in runs},
        stage_seconds={**dict(sorted(stages.items())), "assemble": seconds["assemble"]},
        rejects=rejects,
    )


@dataclass
class OpenBuild:
    """A build holding --out's lock with its sources discovered: what every runner starts
    from (`open_build`)."""

    staged: StagedBuild
    progress: object
    pool: WorkerPool | None
    found: list[DiscoveredSource]


@contextlib.contextmanager
def open_build(config: BuildConfig, called: float, progress=None):
    """Lock --out and stage the build (`staged_build`), show its progress, provide its worker
    processes (started on first use) and discover every source (plain Python, no object's
    work yet)."""
    with (
        staged_build(config, called) as staged,
        progress or NoProgress() as shown,
        worker_pool(config) as pool,
    ):
        shown.stage("discovering")
        found = [discover_source(source, shown) for source in config.sources]
        yield OpenBuild(staged, shown, pool, found)


def build_locally(config: BuildConfig, progress=None) -> BuildResult:
    """The whole build in this process and its worker processes, without Prefect: discover
    every source, run their batches, assemble and publish."""
    with open_build(config, time.perf_counter(), progress) as build:
        build.progress.stage("objects")
        runs = run_sources_locally(build.found, build.staged, build.pool, build.progress)
        build.progress.stage("assembling the release")
        pairs = PairJobsInWorkers(build.pool) if build.pool else None
        return finish_build(build.staged, runs, pairs)


def check_accounting(runs: list[SourceRun]) -> None:
    """Every discovered object has exactly one outcome, per source; raise otherwise."""
    problems = []
    for run in runs:
        seen, accepted = Counter(), 0
        for o in run.outcomes:
            seen[o.object_id] += 1
            accepted += o.accepted
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
