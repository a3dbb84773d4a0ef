"""Preview benchmark: milliseconds per object to render previews, in a build and alone.

    .venv/bin/python bench/previews_bench.py [--n 0] [--corpus tests/corpus_sources.yaml]

For the sample library (the demo set, or `--n N` generated objects) and the shared corpus (when
../shared/corpus exists), in one process without Prefect:

1. a cold build (empty cache, one worker): the build's `previews` stage seconds per accepted
   object, and its share of the whole per-object time;
2. a warm rebuild (same cache): must render nothing (no `previews` seconds at all);
3. rendering alone: `previews.render_object` on every shipped object folder of the release
   into a temporary folder, timed per object (median, 90th percentile, max), views and bytes
   per object. The first object of the process also creates the GL context: timed apart.

The projection for a 20,000-object release is the per-object mean over two worker processes.
Writes bench/results/previews.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import previews
from flows.commands import build_release
from normalize.sources import load_sources
from pipeline.build import BuildConfig
from samples.generate import generate_library

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "previews.json"
TARGET_OBJECTS, CORES = 20_000, 2


def _build(sources: Path, out: Path, cache: Path) -> dict:
    config = BuildConfig(
        sources=load_sources(sources),
        out=out,
        version="bench",
        runner="local",
        workers=1,
        cache_dir=cache,
        live=False,
    )
    result = build_release(config)
    stages = result.stage_seconds
    accepted = result.info["counts"]["accepted"]
    per_object = sum(v for k, v in stages.items() if k not in ("discover", "assemble"))
    return {
        "accepted": accepted,
        "from_cache": result.cached,
        "previews_s": round(stages.get("previews", 0.0), 3),
        "previews_ms_per_object": round(1000 * stages.get("previews", 0.0) / max(accepted, 1), 1),
        "previews_share_of_object_time": round(stages.get("previews", 0.0) / per_object, 3)
        if per_object
        else None,
    }


def _render_alone(release: Path, scratch: Path) -> dict:
    gl = previews.backend()
    folders = sorted(p for p in (release / "objects").iterdir() if p.is_dir())
    times, views, sizes, failed = [], [], [], {}
    first = None
    for i, folder in enumerate(folders):
        out = scratch / folder.name
        started = time.perf_counter()
        try:
            document = previews.render_object(previews.model_file(folder), out, gl.name)
        except previews.PreviewError as exc:
            failed[folder.name] = str(exc)
            continue
        ms = 1000 * (time.perf_counter() - started)
        if i == 0:
            first = ms
            continue
        times.append(ms)
        views.append(len(document["views"]))
        sizes.append(sum(f.stat().st_size for f in out.iterdir()))
    times.sort()
    return {
        "objects": len(folders),
        "failed": failed,
        "first_object_ms (GL context created)": round(first or 0.0, 1),
        "ms_per_object": {
            "mean": round(statistics.fmean(times), 1),
            "median": round(statistics.median(times), 1),
            "p90": round(times[int(0.9 * (len(times) - 1))], 1),
            "max": round(times[-1], 1),
        },
        "views_per_object_mean": round(statistics.fmean(views), 2),
        "ms_per_view_mean": round(sum(times) / sum(views), 2),
        "bytes_per_object_mean": int(statistics.fmean(sizes)),
        f"projected_{TARGET_OBJECTS}_objects_on_{CORES}_cores_s": round(
            statistics.fmean(times) * TARGET_OBJECTS / CORES / 1000, 1
        ),
    }


def bench_library(name: str, sources: Path, tmp: Path) -> dict:
    cache = tmp / f"{name}-cache"
    cold = _build(sources, tmp / f"{name}-cold", cache)
    warm = _build(sources, tmp / f"{name}-warm", cache)
    assert warm["previews_s"] == 0.0, f"a warm rebuild rendered previews: {warm}"
    return {
        "cold_build": cold,
        "warm_build": warm,
        "render_alone": _render_alone(tmp / f"{name}-cold", tmp / f"{name}-scratch"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=0, help="generated objects (0: the demo set)")
    parser.add_argument("--corpus", type=Path, default=REPO / "tests" / "corpus_sources.yaml")
    args = parser.parse_args()
    gl = previews.backend()
    if not gl.available:
        raise SystemExit(f"previews cannot be rendered here: {gl.detail}")
    results = {
        "machine": {
            "python": platform.python_version(),
            "cores": os.cpu_count(),
            "load_before": os.getloadavg(),
        },
        "renderer": gl.detail,
        "libraries": {},
    }
    with tempfile.TemporaryDirectory(prefix="bench-previews-") as tmp:
        tmp = Path(tmp)
        generate_library(tmp / "library", n=args.n)
        name = f"samples_n{args.n}" if args.n else "samples_demo"
        results["libraries"][name] = bench_library(name, tmp / "library" / "sources.yaml", tmp)
        if (REPO.parent / "shared" / "corpus").is_dir() and args.corpus.is_file():
            results["libraries"]["corpus"] = bench_library("corpus", args.corpus, tmp)
    results["machine"]["load_after"] = os.getloadavg()
    RESULTS.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
