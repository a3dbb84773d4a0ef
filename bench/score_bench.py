"""Scoring benchmark: `score_release` on 2,000 objects for one method, without Prefect.

    .venv/bin/python bench/score_bench.py [--n 2000] [--workdir DIR] [--keep]

Setup (not timed): the sample generator writes N objects (`generate_library(n=N)`), the real
build turns them into a release (`build_release`, runner local, no cache), and one method's
predictions are written from the release: every object read back, perturbed in memory (every
revolute interval shifted by 0.1 rad; every tenth object loses a leaf joint; every twentieth
prediction is missing) and written with its meshes by the project's URDF writer.

Timed: the plain `score_release` (subset all, 10,000 bootstrap resamples), once with one process
and once with two worker processes, split into reading + matching + scoring the objects, the
summary (bootstrap) and writing the outputs. Prefect start-up is not involved (plain path).
Writes bench/results/score_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "score_bench.json"


def build(workdir: Path, n: int) -> Path:
    """The release of N generated objects (reused when already built in `workdir`)."""
    from flows.commands import build_release
    from normalize.sources import load_sources
    from pipeline.build import BuildConfig
    from samples.generate import generate_library

    release = workdir / "release"
    if (release / "manifest" / "objects.parquet").is_file():
        return release
    started = time.perf_counter()
    generate_library(workdir / "library", n=n, seed=0)
    config = BuildConfig(
        sources=load_sources(workdir / "library" / "sources.yaml"),
        out=release,
        version="bench",
        runner="local",
        workers=os.cpu_count() or 1,
        cache_dir=None,
        live=False,
    )
    result = build_release(config)
    print(
        f"setup: built {result.info['counts']['accepted']} objects in "
        f"{time.perf_counter() - started:.0f} s"
    )
    return release


def absolute_meshes(obj, folder: Path):
    """`obj` with its (relative) mesh filenames made absolute, as the writer needs them."""
    from verify.checks.geometry import absolute

    links = tuple(
        replace(
            link,
            visuals=tuple(absolute(g, folder) for g in link.visuals),
            collisions=tuple(absolute(g, folder) for g in link.collisions),
        )
        for link in obj.links
    )
    return obj.replace(links=links)


def perturbed(obj, index: int):
    joints = []
    for joint in obj.joints:
        if joint.type == "revolute":
            joint = replace(joint, lower=joint.lower + 0.1, upper=joint.upper + 0.1)
        joints.append(joint)
    obj = obj.replace(joints=tuple(joints))
    if index % 10 == 0:
        parents = {j.parent for j in obj.joints}
        coupled = {j.mimic.joint for j in obj.joints if j.mimic is not None}
        leaves = [
            j
            for j in obj.joints
            if j.moving and j.child not in parents and j.mimic is None and j.name not in coupled
        ]
        if leaves:
            drop = leaves[-1]
            obj = obj.replace(
                links=tuple(link for link in obj.links if link.name != drop.child),
                joints=tuple(j for j in obj.joints if j.name != drop.name),
            )
    return obj


def predictions(release: Path, folder: Path) -> int:
    """Write the method's predictions; returns how many were written."""
    from normalize.urdf import read_object
    from normalize.urdf_writer import write_object

    if folder.is_dir():
        return sum(1 for _ in folder.iterdir())
    written = 0
    ids = sorted(p.name for p in (release / "objects").iterdir())
    for index, object_id in enumerate(ids):
        if index % 20 == 7:
            continue
        source = release / "objects" / object_id
        obj = read_object(source / "object.urdf")
        write_object(absolute_meshes(perturbed(obj, index), source), folder / object_id)
        written += 1
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the temporary work folder")
    args = parser.parse_args()

    from scoring.score import Settings, score_release

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="score_bench_"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        release = build(workdir, args.n)
        written = predictions(release, workdir / "method")
        runs = {}
        for workers in (1, 2):
            load = os.getloadavg()[0]
            started = time.perf_counter()
            result = score_release(
                release,
                {"method": workdir / "method"},
                workdir / f"out{workers}",
                Settings(subset="all", bootstrap=10000),
                workers,
            )
            wall = time.perf_counter() - started
            coverage = result.summary["methods"]["method"]["coverage"]
            runs[f"workers_{workers}"] = {
                "seconds": round(wall, 2),
                "objects_seconds": round(result.seconds["objects"], 2),
                "summary_seconds": round(result.seconds["summary"], 2),
                "write_seconds": round(result.seconds["write"], 2),
                "ms_per_object": round(1000 * result.seconds["objects"] / coverage["objects"], 2),
                "load_average_before": round(load, 2),
            }
            print(f"workers={workers}: {wall:.1f} s in all ({runs[f'workers_{workers}']})")
        scores = result.summary["methods"]["method"]["scores"]
        figures = {
            "objects": coverage["objects"],
            "predictions_written": written,
            "gen": coverage["gen"],
            "moving_joints_matched": coverage["matched_pairs"],
            "certified_share": coverage["certified_share"],
            "search_share": coverage["search_share"],
            "e_tree_mean": scores["e_tree"]["mean"],
            "bootstrap_resamples": 10000,
            "runs": runs,
            "target": "well under 60 s for 2,000 objects, one method, without Prefect start-up",
            "machine": {
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "note": "shared machine: other sessions' load shows in load_average_before",
            },
        }
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
        print(json.dumps(figures, indent=2))
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
