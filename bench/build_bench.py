"""Build benchmark: cold and warm builds of the shared corpus, with and without Prefect.

    .venv/bin/python bench/build_bench.py [--sources tests/corpus_sources.yaml] [--workers 2]
                                          [--repeat 3]

Runs, side by side in one run, `--repeat` rounds of:
1. the build without Prefect (`runner="local"`), cold (empty cache), then warm (same cache);
2. the build as a Prefect flow (`runner="process"`), cold (a fresh cache), then warm.
Each build is a subprocess of its own (this file with `--child`: `flows.commands.build_release`,
as `arena build` runs it), so each Prefect build imports Prefect and starts its own temporary
server (unless PREFECT_API_URL points at a running one), and no build profits from another's
in-process mesh cache; the wall time is the subprocess's, interpreter start included. The time
a Prefect build waits for its server after discovery is reported. `--phases cold` leaves the
warm builds out. All releases must have byte-identical manifests.

Prefect's share of the wall (and CPU) time is 1 - the build without Prefect over the Prefect
build, per round, then the median over the rounds (the rounds alternate the two, so each pair
sees the same machine load; a difference of medians of unpaired rounds came out negative on a
machine that sped up during the run). Prefect's database (in the benchmark's own
PREFECT_HOME) is created before the rounds, as it is on any machine where Prefect has run
once; what the first build on a machine pays on top for creating it (its schema migrations) is
reported on its own (`prefect_database_setup`). The target is a warm rebuild at most a tenth
of the cold build. Prints the figures and writes bench/results/build_bench.json (or --results).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
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


def child(args: argparse.Namespace) -> None:
    """One build; its figures to args.report."""
    config = BuildConfig(
        sources=load_sources(args.sources),
        out=args.out,
        version="bench",
        runner=args.runner,
        workers=args.workers,
        cache_dir=args.cache,
        live=False,
    )
    result = build_release(config)
    counts = result.info["counts"]
    report = {
        "build_s": round(result.seconds["total"], 3),
        "prefect_wait_s": round(result.seconds["orchestrator_start"], 3),
        "objects_phase_s": round(result.seconds["objects"], 3),
        "assemble_s": round(result.seconds["assemble"], 3),
        "stage_cpu_s": round(result.seconds["stages"], 3),
        "discovered": counts["discovered"],
        "accepted": counts["accepted"],
        "rejected": counts["rejected"],
        "from_cache": result.cached,
        "content_hash": result.content_hash,
    }
    args.report.write_text(json.dumps(report), encoding="utf-8")


def prefect_database_setup() -> dict:
    """Wall and CPU seconds of starting Prefect's temporary server on an empty PREFECT_HOME
    (it creates and migrates the database) in a subprocess, and of starting it again."""
    start = "from flows.server import PrefectServer; PrefectServer.start().wait()"
    command = [sys.executable, "-c", start]
    figures = {}
    for label in ("first_start", "second_start"):
        started = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(command, check=True, cwd=REPO)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        figures[label] = {"wall_s": round(time.perf_counter() - started, 3), "cpu_s": round(cpu, 3)}
    return figures


def build(sources: Path, out: Path, cache: Path, runner: str, workers: int) -> dict:
    """One build in a subprocess; its figures with the subprocess's wall time."""
    report = out.with_name(out.name + ".report.json")
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--sources", str(sources)]
    command += ["--out", str(out), "--cache", str(cache), "--runner", runner]
    command += ["--workers", str(workers), "--report", str(report)]
    started = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, cwd=REPO)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    data = json.loads(report.read_text(encoding="utf-8"))
    report.unlink()
    # CPU time of the build's process tree (the build, its worker processes, Prefect's server):
    # less sensitive than wall time to other work on a shared machine.
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        **data,
        "objects_per_s": round(data["discovered"] / wall, 2),
    }


def manifest_bytes(out: Path) -> dict[str, bytes]:
    return {t: (out / "manifest" / f"{t}.parquet").read_bytes() for t in TABLES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=Path, default=REPO / "tests" / "corpus_sources.yaml")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3, help="rounds (medians are reported)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--phases", nargs="+", default=["cold", "warm"], choices=("cold", "warm"))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--runner", help=argparse.SUPPRESS)
    parser.add_argument("--report", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return

    work = Path(tempfile.mkdtemp(prefix="build_bench-"))
    os.environ.setdefault("PREFECT_HOME", str(work / "prefect_home"))
    load_before = os.getloadavg()
    database = prefect_database_setup()
    rounds: dict[str, list[dict]] = {}
    first = None
    identical = True
    try:
        for i in range(args.repeat):
            for runner, label in (("local", "without_prefect"), ("process", "prefect")):
                cache = work / f"cache-{runner}-{i}"
                for phase in args.phases:
                    out = work / f"{runner}-{phase}-{i}"
                    run = build(args.sources, out, cache, runner, args.workers)
                    run["load_average_1min"] = round(os.getloadavg()[0], 2)
                    rounds.setdefault(f"{label}_{phase}", []).append(run)
                    print(f"round {i + 1} {label:16s} {phase}: {run}", flush=True)
                    manifests = manifest_bytes(out)
                    first = first or manifests
                    identical = identical and manifests == first
                    shutil.rmtree(out)
                cache_mb = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())
                shutil.rmtree(cache)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def median_run(runs: list[dict]) -> dict:
        """Every figure's median over the rounds (the last run's counts and hash)."""
        numbers = {k for k, v in runs[0].items() if isinstance(v, float | int)}
        return {
            **runs[-1],
            **{k: round(statistics.median(r[k] for r in runs), 3) for k in numbers},
            "wall_s_each": [r["wall_s"] for r in runs],
        }

    runs = {name: median_run(group) for name, group in rounds.items()}

    def ratio(a, b):
        return round(runs[a]["wall_s"] / runs[b]["wall_s"], 2)

    def paired(phase: str, figure: str) -> float:
        """Prefect's share of a figure: 1 - without / with Prefect, per round, the median (the
        rounds alternate the two builds, so each pair saw the same machine)."""
        pairs = zip(rounds[f"prefect_{phase}"], rounds[f"without_prefect_{phase}"], strict=True)
        return round(statistics.median(1 - b[figure] / a[figure] for a, b in pairs), 3)

    share = {
        "cold_fraction": paired("cold", "wall_s"),
        "cold_cpu_fraction": paired("cold", "cpu_s"),
        "cold_wait_for_server_s": runs["prefect_cold"]["prefect_wait_s"],
    }
    cold_over_warm = {}
    if "warm" in args.phases:
        share["warm_fraction"] = paired("warm", "wall_s")
        cold_over_warm = {
            "without_prefect": ratio("without_prefect_cold", "without_prefect_warm"),
            "prefect": ratio("prefect_cold", "prefect_warm"),
        }
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()
    result = {
        "rounds": args.repeat,
        "statistic": "median over the rounds",
        "sources": str(
            args.sources.relative_to(REPO) if args.sources.is_relative_to(REPO) else args.sources
        ),
        "workers": args.workers,
        "runs": runs,
        "manifests_identical": identical,
        "cold_over_warm": cold_over_warm,
        "prefect_share": share,
        "prefect_database_setup": database,
        "cache_bytes": cache_mb,  # of the last build's cache
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
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=2) + "\n")
    shown = ("cold_over_warm", "prefect_share", "prefect_database_setup")
    print(json.dumps({k: result[k] for k in shown}, indent=2))
    print(f"manifests identical: {identical}; written to {args.results}")


if __name__ == "__main__":
    main()
