"""The `arena` command line.

Each subcommand parses its options here and calls one plain function of the stage that owns it.
Imports happen inside the commands so that `arena --help` and `arena validate` start quickly and
never import Prefect unless the command needs it.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

from pipeline import defaults as build_defaults
from scoring import defaults as score_defaults

app = typer.Typer(
    name="arena",
    help=(
        "Build, verify and release suites of articulated objects, and score predictions with the "
        "ArticulateArena kinematics metric."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)


def _print_version(asked: bool) -> None:
    if not asked:
        return
    from importlib.metadata import version

    from normalize.convention import CONVENTION_VERSION
    from taxonomy.data import load_taxonomy

    typer.echo(
        f"arena {version('articulate-arena-pipeline')} (convention {CONVENTION_VERSION}, "
        f"taxonomy {load_taxonomy().version})"
    )
    raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print the project, convention and taxonomy versions and exit.",
    ),
) -> None:
    """Build, verify and release suites of articulated objects."""


@app.command()
def generate(
    out: Path = typer.Option(..., "--out", help="Folder to write the sample library into."),
    n: int = typer.Option(
        0,
        "--n",
        help="Number of objects; 0 writes the curated demo set (every kind in every format).",
    ),
    seed: int = typer.Option(0, "--seed", help="Random seed; the same seed gives the same files."),
) -> None:
    """Write a deterministic library of procedurally generated articulated objects.

    Objects come in every source format the adapters read (PartNet-Mobility folders, URDF, MJCF,
    SDF), each with a ground-truth sidecar JSON, plus a `sources.yaml` that `arena build` reads.
    """
    from samples.generate import generate_library

    summary = generate_library(out, n=n, seed=seed)
    typer.echo(summary)


@app.command()
def normalize(
    sources: Path = typer.Option(
        ..., "--sources", help="Sources file (YAML) listing the libraries."
    ),
    out: Path = typer.Option(..., "--out", help="Folder for objects/ and normalize_report.json."),
) -> None:
    """Normalize every object of the listed sources to the common URDF convention, without Prefect.

    Writes `OUT/objects/<object_id>/object.urdf` with its meshes and `OUT/normalize_report.json`,
    which accounts for every discovered object as normalized or rejected with a reason.
    """
    from normalize.run import normalize_sources
    from normalize.sources import SourcesFileError

    try:
        report = normalize_sources(sources, out)
    except SourcesFileError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(report.summary())


@app.command()
def validate(
    paths: list[Path] = typer.Argument(
        ..., help="URDF/MJCF/SDF files, object folders or whole library folders."
    ),
    format: str | None = typer.Option(
        None,
        "--format",
        help="Source format: partnet_mobility, urdf, mjcf or sdf (default: guess).",
    ),
    json_output: bool = typer.Option(
        False, "--json", help="Print the JSON report instead of a table."
    ),
    strict: bool = typer.Option(False, "--strict", help="Treat warnings as failures."),
    root: Path | None = typer.Option(
        None,
        "--root",
        help="Confine file references to this folder (default: the nearest folder holding "
        "package.xml or model.config above each PATH, else PATH itself).",
    ),
    package_root: list[Path] = typer.Option(
        [],
        "--package-root",
        help="A folder holding ROS packages for package:// references (repeatable).",
    ),
    html: Path | None = typer.Option(
        None,
        "--html",
        help="Also write a self-contained HTML report (verdicts, checks, previews at rest and "
        "at the limits) to this file.",
    ),
) -> None:
    """Check whether assets may enter the suite, and say why not.

    Normalizes in a temporary folder (never writes next to the source), runs every check and exits
    0 when every object passes, 1 when any fails, 2 on a usage error. Every problem of a file is
    reported at once, per file, with its line and a fix hint where one is known.
    """
    from verify.validate import validate_command

    writer = None
    if html is not None:
        if not html.parent.is_dir() or html.is_dir():
            typer.echo(f"arena validate: error: --html {html}: not a file in a folder", err=True)
            raise typer.Exit(2)
        from previews.report import html_writer

        writer = html_writer(html)
    gl = os.environ.get("MUJOCO_GL")
    if html is None:  # nothing is rendered: the checks need not load OpenGL
        os.environ.setdefault("MUJOCO_GL", "disable")
    try:
        code = validate_command(
            paths,
            format=format,
            json_output=json_output,
            strict=strict,
            root=root,
            package_roots=package_root,
            report_writer=writer,
        )
    finally:
        if gl is None:
            os.environ.pop("MUJOCO_GL", None)
    raise typer.Exit(code)


@app.command()
def build(
    sources: Path | None = typer.Option(
        None, "--sources", help="Sources file (YAML). Default: the embedded demo library."
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="Release folder; required with --sources (default for the demo: release-demo).",
    ),
    version: str | None = typer.Option(
        None,
        "--version",
        help="Release version (default: date-based, e.g. 2026.08.05, or 2026.08.05-2 when taken).",
    ),
    previous: Path | None = typer.Option(
        None, "--previous", help="Earlier release to write the CHANGELOG against."
    ),
    batch_size: int = typer.Option(
        build_defaults.BATCH_SIZE,
        "--batch-size",
        help="Objects per Prefect task (at most 64 tasks per source).",
    ),
    workers: int = typer.Option(
        build_defaults.WORKERS,
        "--workers",
        help="Worker processes (process, local) or Dask workers (local cluster).",
    ),
    runner: str = typer.Option(
        build_defaults.RUNNER,
        "--runner",
        help="process (Prefect flows, batches in --workers worker processes), dask, or local "
        "(the same build without Prefect). `thread` is the deprecated name of `process`.",
    ),
    dask_address: str | None = typer.Option(
        None, "--dask-address", help="Address of an existing Dask scheduler (tcp://...)."
    ),
    cache_dir: Path | None = typer.Option(
        None,
        "--cache-dir",
        help="Result cache folder (default: $ARENA_CACHE_DIR or the user cache).",
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Recompute every object."),
    overrides: Path | None = typer.Option(
        None,
        "--overrides",
        help="Curators' category overrides (default: the file the sources file names).",
    ),
    replace: bool = typer.Option(
        False, "--replace", help="Replace the release already at --out (refused otherwise)."
    ),
    accept_modified: bool = typer.Option(
        False,
        "--accept-modified",
        help="Use a --previous whose files no longer match its checksums.sha256 (with a warning).",
    ),
) -> None:
    """Build a versioned release: ingest, normalize, verify, categorize and export manifests.

    OUT is written atomically: a failed build leaves an earlier release there untouched, and a
    release already at OUT is replaced only with --replace. The default version is the date
    (2026.08.05), with -2, -3... when the release at OUT, --previous or a release beside OUT
    already has it. Exit codes: 0 built, 1 the build failed, 2 usage error, 3 another build is
    writing OUT or OUT holds a release and --replace was not given, 4 writing failed (disk
    full, over quota, read-only): nothing published, the cache kept.
    """
    from flows.commands import build_command

    raise typer.Exit(
        build_command(
            sources=sources,
            out=out,
            version=version,
            previous=previous,
            batch_size=batch_size,
            workers=workers,
            runner=runner,
            dask_address=dask_address,
            cache_dir=cache_dir,
            no_cache=no_cache,
            overrides=overrides,
            replace=replace,
            accept_modified=accept_modified,
        )
    )


@app.command()
def check(
    release: Path = typer.Argument(..., help="Release folder."),
) -> None:
    """Check a release against its checksums.sha256: name every file missing, modified or added
    since it was built. Exit 0 intact, 1 changed, 2 not a release."""
    from flows.commands import check_command

    raise typer.Exit(check_command(release))


@app.command()
def score(
    release: Path = typer.Option(..., "--release", help="Release folder with the ground truth."),
    pred: list[str] = typer.Option(
        ..., "--pred", help="A method's predictions as NAME=PATH; repeat for several methods."
    ),
    out: Path = typer.Option(
        ...,
        "--out",
        help="Folder for scores.parquet, summary.json, report.md, plots, worst-objects tables.",
    ),
    subset: str = typer.Option(score_defaults.SUBSET, "--subset", help="eval200 or all."),
    alpha: float = typer.Option(
        score_defaults.ALPHA, "--alpha", help="Split-norm weight alpha (1/m)."
    ),
    kappa: float = typer.Option(
        score_defaults.KAPPA, "--kappa", help="Compactification scale kappa."
    ),
    bootstrap: int = typer.Option(
        score_defaults.BOOTSTRAP, "--bootstrap", help="Bootstrap resamples."
    ),
    seed: int = typer.Option(score_defaults.SEED, "--seed", help="Bootstrap random seed."),
    workers: int = typer.Option(
        score_defaults.WORKERS, "--workers", help="Processes reading and scoring objects."
    ),
    prefect: bool | None = typer.Option(
        None,
        "--prefect/--no-prefect",
        help="Run as a Prefect flow (default: only when PREFECT_API_URL names a server).",
    ),
    accept_modified: bool = typer.Option(
        False,
        "--accept-modified",
        help="Score a release whose files no longer match its checksums.sha256 (with a warning).",
    ),
) -> None:
    """Score predicted articulated objects against a release, Table-4 style.

    Each prediction folder holds one sub-folder per object id with a URDF or MJCF file in the
    release's frame; a missing or unreadable one is a failed output (Gen). Writes
    scores.parquet (per object and method), summary.json, report.md, PNG plots of E and per
    method a worst-objects CSV (linking the release's browser) into --out.
    """
    from flows.commands import score_command
    from scoring.score import Settings

    settings = Settings(subset=subset, alpha=alpha, kappa=kappa, bootstrap=bootstrap, seed=seed)
    raise typer.Exit(
        score_command(
            release=release,
            preds=pred,
            out=out,
            settings=settings,
            workers=workers,
            prefect=prefect,
            accept_modified=accept_modified,
        )
    )


@app.command()
def distance(
    a: Path | None = typer.Argument(None, help="First object: URDF/MJCF file or object folder."),
    b: Path | None = typer.Argument(None, help="Second object (the reference)."),
    norm: str = typer.Option(
        "split", "--norm", help="split, or kinetic (B's child link moments define the norm)."
    ),
    alpha: float = typer.Option(
        score_defaults.ALPHA, "--alpha", help="Split-norm weight alpha (1/m)."
    ),
    kappa: float = typer.Option(
        score_defaults.KAPPA, "--kappa", help="Compactification scale kappa."
    ),
    compact: bool = typer.Option(
        True, "--compact/--no-compact", help="Compactify (E^phi); off needs finite limits."
    ),
    joints: Path | None = typer.Option(
        None, "--joints", help="JSON file with `prediction` and `ground_truth` joint lists instead."
    ),
    json_output: bool = typer.Option(False, "--json", help="Print JSON."),
    accept_modified: bool = typer.Option(
        False,
        "--accept-modified",
        help="Read an object of a release whose files no longer match its checksums.sha256.",
    ),
) -> None:
    """Distance between two articulated objects (exact E_tree; the matched joints with each
    pair's E and what differs, the unmatched joints), or E and E^phi per pair of two joint lists
    (--joints, the reference tool's input format)."""
    from scoring.distance import distance_command

    raise typer.Exit(
        distance_command(
            a=a,
            b=b,
            norm=norm,
            alpha=alpha,
            kappa=kappa,
            joints=joints,
            json_output=json_output,
            compact=compact,
            accept_modified=accept_modified,
        )
    )


@app.command()
def schedule(
    cron: str = typer.Option(..., "--cron", help='Cron expression, e.g. "0 3 * * 1".'),
    sources: Path = typer.Option(..., "--sources", help="Sources file (YAML)."),
    out_root: Path = typer.Option(
        ..., "--out-root", help="Folder holding one sub-folder per release."
    ),
) -> None:
    """Serve a Prefect deployment that builds a new release on a cron schedule.

    Needs a running Prefect server (`prefect server start` and PREFECT_API_URL).
    """
    from flows.schedule import schedule_command

    raise typer.Exit(schedule_command(cron=cron, sources=sources, out_root=out_root))


if __name__ == "__main__":
    app()
