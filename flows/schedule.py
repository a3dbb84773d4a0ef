"""`arena schedule`: serve a Prefect deployment that builds a new release on a cron schedule.

Each scheduled run builds the sources into `OUT_ROOT/<version>/`, with a date-based version
(`2026.08.05`, then `2026.08.05-2` for a second release the same day) and `--previous` set to
the latest release already in OUT_ROOT, so every release has a CHANGELOG against the one
before. Schedules live on a Prefect server: `prefect server start` (long-running) and
PREFECT_API_URL pointing at it; the temporary server Prefect starts on its own cannot keep a
schedule, so the command refuses to run without a configured server. An OS cron line calling
`arena build` is the alternative without Prefect (see the README).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
from pathlib import Path

# isort: off
from flows.build import build_with_prefect  # first: it sets Prefect's environment defaults
from prefect import flow

# isort: on
from export import release
from flows.commands import EXIT_USAGE
from flows.progress import BuildProgress
from normalize.sources import SourcesFileError, load_sources, overrides_file
from pipeline import defaults
from pipeline.build import BuildConfig, category_overrides_for
from pipeline.cache import default_cache_dir

DEPLOYMENT_NAME = "arena-scheduled-release"


def latest_release(out_root: Path) -> Path | None:
    """The most recently created release folder in `out_root` (by release.json created_at)."""
    found = []
    for folder in Path(out_root).iterdir() if Path(out_root).is_dir() else []:
        try:
            info = json.loads((folder / release.RELEASE_JSON).read_text(encoding="utf-8"))
            found.append((info["created_at"], folder.name, folder))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return max(found)[2] if found else None


def next_version(out_root: Path, today: dt.date | None = None) -> str:
    """Today's date-based version, with -2, -3... when releases of today already exist."""
    base = release.default_version(today)
    version, n = base, 1
    while (Path(out_root) / version).exists():
        n += 1
        version = f"{base}-{n}"
    return version


def _run_name() -> str:
    """A scheduled run is named as `arena build` names its run: `build <version>`."""
    from prefect.runtime import flow_run

    return f"build {next_version(Path(flow_run.parameters['out_root']))}"


@flow(name="arena-scheduled-release", flow_run_name=_run_name)
def scheduled_release(sources: str, out_root: str, workers: int = defaults.WORKERS) -> str:
    """Build the sources into the next version folder of out_root; returns its path."""
    root = Path(out_root)
    root.mkdir(parents=True, exist_ok=True)
    version = next_version(root)
    configs = load_sources(Path(sources))
    config = BuildConfig(
        sources=configs,
        out=root / version,
        version=version,
        previous=latest_release(root),
        workers=workers,
        cache_dir=default_cache_dir(),
        overrides=category_overrides_for(configs, overrides_file(Path(sources))),
        live=False,
        sources_file=Path(sources),
    )
    result = build_with_prefect(config, time.perf_counter(), BuildProgress(live=False))
    print(result.summary())
    return str(result.out)


def schedule_command(*, cron: str, sources: Path, out_root: Path) -> int:
    """`arena schedule`: check the inputs and the Prefect server, then serve the deployment
    (blocks until interrupted). Exit 2 on a bad cron expression or sources file, or when no
    Prefect server is configured."""
    from prefect.client.schemas.schedules import CronSchedule
    from prefect.settings import PREFECT_API_URL

    try:
        CronSchedule(cron=cron)
    except ValueError as exc:
        print(f"arena schedule: invalid --cron {cron!r}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        load_sources(sources)
    except SourcesFileError as exc:
        print(f"arena schedule: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not PREFECT_API_URL.value():
        print(
            "arena schedule: no Prefect server is configured. Schedules need a long-running "
            "server: start one with `prefect server start` (in another terminal or as a "
            "service), then `export PREFECT_API_URL=http://127.0.0.1:4200/api` and run this "
            "command again. Without Prefect, an OS cron line calling `arena build` does the "
            "same (see the README).",
            file=sys.stderr,
        )
        return EXIT_USAGE
    from prefect.deployments.runner import EntrypointType

    Path(out_root).mkdir(parents=True, exist_ok=True)
    scheduled_release.serve(
        name=DEPLOYMENT_NAME,
        cron=cron,
        parameters={
            "sources": str(Path(sources).resolve()),
            "out_root": str(Path(out_root).resolve()),
        },
        description=f"Build {Path(sources).resolve()} into {Path(out_root).resolve()}/<version>",
        entrypoint_type=EntrypointType.MODULE_PATH,
    )
    return 0
