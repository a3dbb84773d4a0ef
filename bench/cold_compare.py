"""Benchmark: cold corpus builds of several git revisions side by side, in one run.

    .venv/bin/python bench/cold_compare.py REV [REV ...] [--rounds 2] [--workers 2]
                                           [--also-without-previews REV ...] [--realistic N]

Each revision is exported (`git archive`) into a temporary folder and built cold (empty cache,
no Prefect, `runner="local"`, `--workers` worker processes) from this checkout's
`tests/corpus_sources.yaml` (or, with `--realistic N`, bench/realistic.py's library of N
PartNet-size copies of corpus objects), in its own Python process that imports only the
revision (first on the path; the checkout's editable install is taken off the import system).
Revisions need the build API of `flows.commands.build_release` and `pipeline.build.BuildConfig`.
Builds alternate between the revisions (A B C A B C ...) so that the shared machine's load
falls on all of them alike. Each build has its own cache and mesh store (`ARENA_MESH_STORE` is
unset). Per build: wall seconds and CPU seconds (user + sys of the build process and its
workers) and the stage seconds summed over objects (`collision` is the convex collision parts);
per revision the median of each, and each revision's ratio to the first one. The load average
at the start and end is recorded. `--also-without-previews REV` adds builds of REV with
previews turned off (MUJOCO_GL=disable), labelled `REV without previews`: the cost of the
checks alone, for revisions that render previews. Prints the figures and writes
bench/results/cold_compare.json (or `--results`).
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

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "cold_compare.json"
SOURCES = REPO / "tests" / "corpus_sources.yaml"

BUILD = """
import json, sys, time
from pathlib import Path
# Only the exported revision: not this checkout's editable install.
sys.meta_path = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
from flows.commands import build_release
from normalize.sources import load_sources
from pipeline.build import BuildConfig
sources, out, cache, workers = sys.argv[1:5]
config = BuildConfig(sources=load_sources(Path(sources)), out=Path(out), version="bench",
                     runner="local", workers=int(workers), cache_dir=Path(cache), live=False)
started = time.perf_counter()
result = build_release(config)
print(json.dumps({"wall_s": time.perf_counter() - started,
                  "accepted": result.info["counts"]["accepted"],
                  "stage_seconds": result.stage_seconds}))
"""


def export(revision: str, folder: Path) -> str:
    """The revision's tree in `folder`; returns its short commit id."""
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", revision],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    folder.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", commit], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return commit


def build(tree: Path, work: Path, workers: int, sources: Path, previews: bool = True) -> dict:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = dict(os.environ, PYTHONPATH=str(tree))
    env.pop("ARENA_MESH_STORE", None)
    if not previews:
        env["MUJOCO_GL"] = "disable"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            BUILD,
            str(sources),
            str(work / "out"),
            str(work / "cache"),
            str(workers),
        ],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"the build of {tree} failed:\n{done.stderr[-3000:]}")
    process_wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    shutil.rmtree(work, ignore_errors=True)
    return {
        "build_wall_s": round(figures["wall_s"], 3),
        "process_wall_s": round(process_wall, 3),
        "cpu_s": round(cpu, 3),
        "accepted": figures["accepted"],
        "verify_s": round(figures["stage_seconds"].get("verify", 0.0), 3),
        "stage_s": {k: round(v, 3) for k, v in sorted(figures["stage_seconds"].items())},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revisions", nargs="+")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--also-without-previews", nargs="+", default=[], metavar="REV")
    parser.add_argument("--realistic", type=int, metavar="N", help="build N realistic objects")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="cold_compare-"))
    load_before = os.getloadavg()
    try:
        sources = SOURCES
        if args.realistic:
            sys.path.insert(0, str(REPO / "bench"))
            from realistic import write_library

            sources = write_library(root / "library", args.realistic)
        trees = {}  # label -> (commit, tree, previews)
        for i, revision in enumerate(args.revisions):
            commit = export(revision, root / f"tree{i}")
            trees[revision] = (commit, root / f"tree{i}", True)
        for revision in args.also_without_previews:
            commit, tree, _ = trees[revision]
            trees[f"{revision} without previews"] = (commit, tree, False)
        runs: dict[str, list[dict]] = {label: [] for label in trees}
        for _ in range(args.rounds):
            for label, (commit, tree, previews) in trees.items():
                run = build(tree, root / "work", args.workers, sources, previews)
                runs[label].append(run)
                print(f"{label} ({commit}): {run}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    first = args.revisions[0]
    summary = {}
    for revision, builds in runs.items():
        wall = statistics.median(b["build_wall_s"] for b in builds)
        cpu = statistics.median(b["cpu_s"] for b in builds)
        summary[revision] = {
            "commit": trees[revision][0],
            "median_build_wall_s": round(wall, 3),
            "median_cpu_s": round(cpu, 3),
            "median_verify_stage_s": round(statistics.median(b["verify_s"] for b in builds), 3),
            "median_stage_s": {
                stage: round(statistics.median(b["stage_s"].get(stage, 0.0) for b in builds), 3)
                for stage in sorted({stage for b in builds for stage in b["stage_s"]})
            },
            "accepted": builds[0]["accepted"],
        }
    base = summary[first]
    for figures in summary.values():
        figures["wall_over_first"] = round(
            figures["median_build_wall_s"] / base["median_build_wall_s"], 2
        )
        figures["cpu_over_first"] = round(figures["median_cpu_s"] / base["median_cpu_s"], 2)
    for revision, figures in summary.items():
        print(f"{revision}: {figures}")
    result = {
        "benchmark": "cold corpus builds of git revisions side by side (no Prefect)",
        "sources": (
            f"bench/realistic.py's library of {args.realistic} objects"
            if args.realistic
            else "tests/corpus_sources.yaml"
        ),
        "workers": args.workers,
        "rounds": args.rounds,
        "summary": summary,
        "runs": runs,
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    }
    args.results.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
