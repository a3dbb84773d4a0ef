"""Benchmark: normalize the whole shared corpus in one process.

    .venv/bin/python bench/normalize_corpus.py [--sources tests/corpus_sources.yaml] [--repeat 2]

Runs `normalize.run.normalize_sources` on every library of the sources file (default: the
corpus sources file of the tests, all 15 sources), first with an empty mesh cache (cold), then
again in the same process (warm: every mesh already parsed once). Reports seconds and objects/s,
and splits the time by stage (`normalize.timing`): mesh work (`meshes`: loading and checking mesh
files, bounding boxes, writing OBJ/MTL/texture files; `inertia`: mass properties) and the rest
(`parse`, `convention`, `export`: XML, model, convention, URDF writing, MJCF/SDF compilation).
Prints the figures and writes bench/results/normalize_corpus.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

from normalize import meshes
from normalize.run import normalize_sources
from normalize.timing import stage_record

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "normalize_corpus.json"


def one_run(sources: Path, out: Path) -> dict:
    started = time.perf_counter()
    with stage_record() as stages:
        report = normalize_sources(sources, out)
    seconds = time.perf_counter() - started
    mesh_seconds = stages.get("meshes", 0.0) + stages.get("inertia", 0.0)
    statuses = Counter(o["status"] for o in report.objects)
    return {
        "objects": len(report.objects),
        "normalized": statuses["normalized"],
        "rejected": statuses["rejected"],
        "seconds": round(seconds, 3),
        "objects_per_second": round(len(report.objects) / seconds, 2),
        "mesh_seconds": round(mesh_seconds, 3),
        "stages": {k: round(v, 3) for k, v in sorted(stages.items())},
        "other_seconds": round(seconds - mesh_seconds, 3),
        "cached_meshes": len(meshes._cache),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=Path, default=REPO / "tests" / "corpus_sources.yaml")
    parser.add_argument("--repeat", type=int, default=2, help="runs (the first one cold)")
    args = parser.parse_args()
    meshes.clear_cache()
    runs = []
    with tempfile.TemporaryDirectory(prefix="normalize-bench-") as tmp:
        for i in range(args.repeat):
            out = Path(tmp) / f"run{i}"
            runs.append({"cache": "cold" if i == 0 else "warm", **one_run(args.sources, out)})
            shutil.rmtree(out, ignore_errors=True)
    result = {
        "benchmark": "normalize the shared corpus in one process",
        "sources": str(args.sources),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "runs": runs,
    }
    for run in runs:
        print(
            f"{run['cache']:>4}: {run['objects']} objects ({run['normalized']} normalized, "
            f"{run['rejected']} rejected) in {run['seconds']:.2f} s = "
            f"{run['objects_per_second']:.1f} objects/s; mesh work {run['mesh_seconds']:.2f} s "
            f"{run['mesh_breakdown']}, the rest {run['other_seconds']:.2f} s"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()
