"""`arena score` as a Prefect flow: the same plain steps as `scoring.score.score_release`, as two
tasks (score the objects; summarize and write), so runs are recorded on a Prefect server.

Importing this module imports Prefect; `scoring.score` only does so when the flow is asked for.
"""

from __future__ import annotations

import os

# Prefect reads its settings when it is imported: set the defaults first.
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

import time  # noqa: E402
from pathlib import Path  # noqa: E402

from prefect import flow, task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402

from scoring import defaults, score  # noqa: E402


@task(name="score-objects", cache_policy=NO_CACHE)
def score_objects_task(release: Path, predictions: dict, settings, workers: int) -> list[dict]:
    return score.score_objects(release, predictions, settings, workers=workers)


@task(name="summarize-and-write", cache_policy=NO_CACHE)
def summarize_task(release: Path, predictions: dict, rows: list[dict], settings, out) -> dict:
    summary = score.build_summary(release, predictions, rows, settings)
    score.write_outputs(out, rows, summary)
    return summary


@flow(name="arena-score", log_prints=False)
def score_flow(
    release: Path,
    predictions: dict,
    out: Path,
    settings: score.Settings,
    workers: int = defaults.WORKERS,
) -> score.ScoreResult:
    """Prefect flow of `scoring.score.score_release` (its arguments, `settings` required; the
    same outputs)."""
    settings.check()
    started = time.perf_counter()
    rows = score_objects_task(release, predictions, settings, workers)
    summary = summarize_task(release, predictions, rows, settings, out)
    seconds = {"total": time.perf_counter() - started}
    return score.ScoreResult(Path(out), summary, rows, seconds)
