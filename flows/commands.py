"""The `arena build` and `arena score` commands: check the options, run the stage functions
(without Prefect for `--runner local`, or a score without a configured server) or their Prefect
flows, print the summary and return the exit code. Prefect is imported only when a flow runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from duplicates import load_settings as load_duplicate_settings
from export import release
from normalize.errors import WriteFailed, write_failure
from normalize.files import broken_link, empty_folder
from normalize.sources import load_sources, overrides_file
from pipeline import defaults as build_defaults
from pipeline.build import (
    BuildConfig,
    BuildError,
    BuildResult,
    build_locally,
    category_overrides_for,
    check_outputs_apart,
)
from pipeline.cache import default_cache_dir, entries_since
from samples.generate import demo_library
from scoring import defaults as score_defaults
from scoring import score

RUNNERS = ("process", "dask", "local")
DEPRECATED_RUNNERS = {"thread": "process"}  # old name -> its name now
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_LOCKED = 0, 1, 2, 3
EXIT_WRITE = 4  # the disk written to failed (full, over quota, read-only, an I/O error)
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143  # 128 + SIGINT, 128 + SIGTERM, as shells report

EXIT_EXISTS = EXIT_LOCKED  # --out holds a release and --replace was not given
DEMO_OUT = Path("release-demo")  # --out of the demo build (no --sources)


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that a build ends as on Ctrl-C: its staging folder
    and lock removed, its worker processes stopped, what it computed kept in the cache."""


@contextlib.contextmanager
def termination_raises():
    """Within the block, SIGTERM raises Terminated instead of ending the process at once."""

    def terminate(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def cache_line(cache_dir: Path | None) -> str:
    """What the first line of a build says of its cache: where it is, and whether it holds
    results of earlier builds (of this checkout or another: the default cache is the user's)."""
    if cache_dir is None:
        return "no cache (--no-cache): every object is computed"
    stored = entries_since(cache_dir, 0.0)
    if not stored:
        return f"cache {cache_dir} (empty: every object is computed and stored there)"
    return (
        f"cache {cache_dir} (holds {stored} results of earlier builds, perhaps of another "
        "checkout: unchanged objects are taken from it; --no-cache or --cache-dir to avoid it)"
    )


def _fail(command: str, message: str, code: int) -> int:
    print(f"arena {command}: {message}", file=sys.stderr)
    return code


def build_release(config: BuildConfig) -> BuildResult:
    """Build a release as configured: Prefect flows unless `config.runner == "local"`
    (`flows.build`: Prefect's server starts while the sources are discovered)."""
    from flows.progress import BuildProgress

    progress = BuildProgress(live=config.live, expected_sources=len(config.sources))
    if config.runner == "local":
        return build_locally(config, progress)
    called = time.perf_counter()
    from flows.server import PrefectServer

    server = PrefectServer.start()  # in the background, while flows.build is imported
    from flows.build import build_with_prefect

    return build_with_prefect(config, called, progress, server)


def build_command(
    *,
    sources: Path | None = None,
    out: Path | None = None,
    version: str | None = None,
    previous: Path | None = None,
    batch_size: int = build_defaults.BATCH_SIZE,
    workers: int = build_defaults.WORKERS,
    runner: str = build_defaults.RUNNER,
    dask_address: str | None = None,
    cache_dir: Path | None = None,
    no_cache: bool = False,
    overrides: Path | None = None,
    replace: bool = False,
    accept_modified: bool = False,
) -> int:
    """`arena build`: exit 0 on success, 1 when the build fails, 2 on a usage error (bad
    sources file, options or --previous; --sources without --out), 3 when another build holds
    --out or --out already holds a release and `replace` is not set, 4 when writing the release
    or the cache fails (disk full, over quota, read-only, an I/O error): nothing is published
    and the objects cached so far stay cached. The keywords are its options, with their
    defaults."""
    if runner in DEPRECATED_RUNNERS:
        print(
            f"arena build: --runner {runner} is deprecated, use --runner "
            f"{DEPRECATED_RUNNERS[runner]} (the batches run in worker processes)",
            file=sys.stderr,
        )
        runner = DEPRECATED_RUNNERS[runner]
    if runner not in RUNNERS:
        return _fail(
            "build", f"--runner must be one of {', '.join(RUNNERS)}, not {runner!r}", EXIT_USAGE
        )
    if batch_size < 1 or workers < 1:
        return _fail("build", "--batch-size and --workers must be at least 1", EXIT_USAGE)
    if dask_address and runner != "dask":
        return _fail("build", "--dask-address needs --runner dask", EXIT_USAGE)
    if sources is not None and out is None:
        return _fail("build", "--out is required with --sources (the release folder)", EXIT_USAGE)
    out = Path(out if out is not None else DEMO_OUT)
    cache_root = Path(cache_dir) if cache_dir else default_cache_dir()
    for option, place in (("--out", out), ("--cache-dir", None if no_cache else cache_root)):
        why = place is not None and broken_link(place)
        if why:
            return _fail("build", f"{option} {place} {why}", EXIT_USAGE)
    if sources is None:
        sources = demo_library(cache_root)
    try:
        configs = load_sources(sources)
        overrides = overrides or overrides_file(sources)
        category_overrides = category_overrides_for(configs, overrides)
        duplicate_settings = load_duplicate_settings(sources, overrides, [c.name for c in configs])
        previous_version = None
        if previous is not None:  # found now, not after the whole build
            read = (release.RELEASE_JSON, "manifest/objects.parquet")
            for warning in release.check_integrity(
                previous, lambda name: name in read, accept_modified=accept_modified
            ):
                print(f"arena build: warning: --previous {warning}", file=sys.stderr)
            previous_version = release.read_release(previous)["version"]
            release.read_objects(previous)
        check_outputs_apart(configs, Path(out), None if no_cache else cache_root)
        release.check_out(out)
    except (release.ReleaseError, ValueError) as exc:  # SourcesFileError, TaxonomyError...
        return _fail("build", str(exc), EXIT_USAGE)
    empty = [c for c in configs if not c.allow_empty and empty_folder(c.path)]
    if empty:  # said before anything starts (Prefect's server among them)
        named = ", ".join(f"{c.name!r} ({c.path})" for c in empty)
        return _fail(
            "build",
            f"source folder(s) empty: {named}; fix the path, or set `allow_empty: true` for the "
            "source in the sources file",
            EXIT_USAGE,
        )
    if version is not None and version == previous_version:
        return _fail(
            "build",
            f"--version {version} is the version of --previous {previous}; a release's changelog "
            "cannot be against its own version",
            EXIT_USAGE,
        )
    try:
        release.check_replace(out, replace)
    except release.ReleaseExists as exc:
        return _fail("build", str(exc), EXIT_EXISTS)
    config = BuildConfig(
        sources=configs,
        out=out,
        version=version or release.unique_version(release.taken_versions(out, previous)),
        previous=previous,
        batch_size=batch_size,
        workers=workers,
        runner=runner,
        dask_address=dask_address,
        cache_dir=None if no_cache else cache_root,
        overrides=category_overrides,
        replace=replace,
        sources_file=Path(sources),
        duplicates=duplicate_settings,
    )
    print(f"arena build: {cache_line(config.cache_dir)}", file=sys.stderr, flush=True)
    written = (Path(out).absolute().parent, config.cache_dir)
    started = time.time()
    try:
        with termination_raises():
            result = build_release(config)
    except (KeyboardInterrupt, Terminated) as exc:
        kept = entries_since(config.cache_dir, started) if config.cache_dir else 0
        resume = "run the same command again to resume" if kept else "nothing is kept"
        return _fail(
            "build",
            f"interrupted: nothing published, {kept} objects cached; {resume}",
            EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED,
        )
    except (release.BuildLocked, release.ReleaseExists) as exc:
        return _fail("build", str(exc), EXIT_LOCKED)
    except (BuildError, release.ReleaseError) as exc:
        return _fail("build", f"FAILED, nothing was published: {exc}", EXIT_FAILED)
    except (WriteFailed, OSError) as exc:
        failed = exc if isinstance(exc, WriteFailed) else write_failure(exc, written, out)
        if failed is None:
            raise
        return _fail("build", f"{failed}: nothing published; the cache is intact", EXIT_WRITE)
    print(result.summary())
    return EXIT_OK


def check_command(root: Path) -> int:
    """`arena check RELEASE`: exit 0 when every file of the release matches its
    checksums.sha256, 1 after naming every file that is missing, modified or added since, 2
    when RELEASE is not a release."""
    try:
        listing = release.checksum_listing(root)
    except release.ReleaseError as exc:
        return _fail("check", str(exc), EXIT_USAGE)
    problems = release.integrity_problems(root, listing)
    problems += [(name, "added") for name in release.unlisted_files(root, listing)]
    for name, what in problems:
        print(f"{what}: {name}")
    if problems:
        return _fail(
            "check",
            f"{root} has changed since it was built: {len(problems)} file(s) differ from "
            f"{release.CHECKSUMS} ({len(listing)} listed)",
            EXIT_FAILED,
        )
    print(f"arena check: {root} is intact: its {len(listing)} files match {release.CHECKSUMS}")
    return EXIT_OK


def score_command(
    *,
    release: Path,
    preds: Sequence[str],
    out: Path,
    settings: score.Settings,
    workers: int = score_defaults.WORKERS,
    prefect: bool | None = None,
    accept_modified: bool = False,
) -> int:
    """`arena score`: exit 0 when the outputs are written, 2 on unusable inputs (a release whose
    files no longer match its checksums.sha256 among them, unless `accept_modified`).
    `prefect`: run as a Prefect flow (None: only when PREFECT_API_URL names a server)."""
    try:
        predictions = score.parse_predictions(preds)
        settings.check()
        if not (Path(release) / "manifest" / "objects.parquet").is_file():
            raise score.ScoreError(f"{release} is not a release (no manifest/objects.parquet)")
        if workers < 1:
            raise score.ScoreError(f"--workers must be at least 1, got {workers}")
        for warning in score.checked_release(release, settings.subset, accept_modified):
            print(f"arena score: warning: {warning}", file=sys.stderr)
    except score.ScoreError as exc:
        return _fail("score", str(exc), EXIT_USAGE)
    use_flow = bool(os.environ.get("PREFECT_API_URL")) if prefect is None else prefect
    try:
        if use_flow:
            from flows.score import score_flow

            result = score_flow(release, predictions, out, settings, workers)
        else:
            result = score.score_release(release, predictions, out, settings, workers)
    except score.ScoreError as exc:
        return _fail("score", str(exc), EXIT_FAILED)
    for method, ids in result.summary["unmatched_predictions"].items():
        shown = ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
        print(
            f"arena score: warning: --pred {method}: {len(ids)} folder(s) name no object of the "
            f"release and were not scored: {shown}",
            file=sys.stderr,
        )
    print(result.text())
    return EXIT_OK
