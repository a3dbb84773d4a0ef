"""Build benchmark: cold and warm builds of the shared corpus, with and without Prefect.

    .venv/bin/python bench/build_bench.py [--sources tests/corpus_sources.yaml] [--workers 2]

Runs, side by side in one process:
1. the build without Prefect (`runner="local"`), cold (empty cache), then warm (same cache);
2. the build as a Prefect flow (`runner="process"`), cold (a fresh cache), then warm. The first
   flow of the process starts Prefect's temporary server (unless PREFECT_API_URL points at a
   running one); that start-up is reported on its own.
Objects are computed in spawned worker processes (a fresh pool per build), so no build profits
from another's in-process mesh cache. All four releases must have byte-identical manifests.

Prefect's share of the wall time is the Prefect build minus the build without Prefect. The
target is a warm rebuild at most a tenth of the cold build. Prints the figures and writes
bench/results/build_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

from export.manifests import TABLES  # noqa: E402
from flows.commands import build_release  # noqa: E402
from normalize.sources import load_sources  # noqa: E402
from pipeline.build import BuildConfig  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "build_bench.json"


def build(sources: Path, out: Path, cache: Path, runner: str, workers: int) -> dict:
    config = BuildConfig(
        sources=load_sources(sources),
        out=out,
        version="bench",
        runner=runner,
        workers=workers,
        cache_dir=cache,
        live=False,
    )
    started = time.perf_counter()
    result = build_release(config)
    wall = time.perf_counter() - started
    counts = result.info["counts"]
    return {
        "wall_s": round(wall, 3),
        "prefect_start_s": round(result.seconds["orchestrator_start"], 3),
        "objects_phase_s": round(result.seconds["objects"], 3),
        "assemble_s": round(result.seconds["assemble"], 3),
        "stage_cpu_s": round(result.seconds["stages"], 3),
        "discovered": counts["discovered"],
        "accepted": counts["accepted"],
        "rejected": counts["rejected"],
        "from_cache": result.cached,
        "objects_per_s": round(counts["discovered"] / wall, 2),
        "content_hash": result.content_hash,
    }


def manifest_bytes(out: Path) -> dict[str, bytes]:
    return {t: (out / "manifest" / f"{t}.parquet").read_bytes() for t in TABLES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=Path, default=REPO / "tests" / "corpus_sources.yaml")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="build_bench-"))
    os.environ.setdefault("PREFECT_HOME", str(work / "prefect_home"))
    load_before = os.getloadavg()
    runs = {}
    try:
        for runner, label in (("local", "without_prefect"), ("process", "prefect")):
            cache = work / f"cache-{runner}"
            for phase in ("cold", "warm"):
                out = work / f"{runner}-{phase}"
                runs[f"{label}_{phase}"] = build(args.sources, out, cache, runner, args.workers)
                print(f"{label:16s} {phase}: {runs[f'{label}_{phase}']}")
        outs = [work / f"{r}-{p}" for r in ("local", "process") for p in ("cold", "warm")]
        identical = all(manifest_bytes(o) == manifest_bytes(outs[0]) for o in outs[1:])
        cache_mb = sum(p.stat().st_size for p in (work / "cache-local").rglob("*") if p.is_file())
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def ratio(a, b):
        return round(runs[a]["wall_s"] / runs[b]["wall_s"], 2)

    prefect_cold = runs["prefect_cold"]["wall_s"] - runs["without_prefect_cold"]["wall_s"]
    prefect_warm = runs["prefect_warm"]["wall_s"] - runs["without_prefect_warm"]["wall_s"]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()
    result = {
        "sources": str(
            args.sources.relative_to(REPO) if args.sources.is_relative_to(REPO) else args.sources
        ),
        "workers": args.workers,
        "runs": runs,
        "manifests_identical": identical,
        "cold_over_warm": {
            "without_prefect": ratio("without_prefect_cold", "without_prefect_warm"),
            "prefect": ratio("prefect_cold", "prefect_warm"),
            "prefect_excluding_server_start": round(
                (runs["prefect_cold"]["wall_s"] - runs["prefect_cold"]["prefect_start_s"])
                / runs["prefect_warm"]["wall_s"],
                2,
            ),
        },
        "prefect_share": {
            "cold_s": round(prefect_cold, 2),
            "cold_fraction": round(prefect_cold / runs["prefect_cold"]["wall_s"], 3),
            "server_start_s": runs["prefect_cold"]["prefect_start_s"],
            "warm_s": round(prefect_warm, 2),
            "warm_fraction": round(prefect_warm / runs["prefect_warm"]["wall_s"], 3),
        },
        "cache_bytes": cache_mb,
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
        "commit": commit,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("cold_over_warm", "prefect_share")}, indent=2))
    print(f"manifests identical: {identical}; written to {RESULTS}")


if __name__ == "__main__":
    main()
