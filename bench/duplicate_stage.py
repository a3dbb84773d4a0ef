"""Benchmark of the duplicate stage: a generated library with planted duplicates and
near-misses (`samples.twins`), built cold; precision and recall of the duplicate pairs found,
and the stage's wall time against the whole build's, in one run.

    .venv/bin/python bench/duplicate_stage.py [--n 2000] [--twins 0.2] [--seed 0] [--workers 2]
                                         [--runner process]

The build is the default one (`arena build`: previews on, `--runner process`, i.e. Prefect;
`--runner local` without it) with an empty cache, in a subprocess of its own (this file with
`--child`, `flows.commands.build_release`); recorded beside the scores: the build's wall time
(the subprocess's, interpreter start included) and CPU time (it and every process it waited
for: workers, Prefect's server), the build's own seconds (objects phase, assembly, the stage)
and its per-stage split (seconds summed over objects). `--n 20000` is the issue's measurement
and also a 20,000-object cold build with previews (the scale target: 30 minutes).
    .venv/bin/python bench/duplicate_stage.py --stage-only KEPT [--json PATH]
    .venv/bin/python bench/duplicate_stage.py --blocking-only KEPT [--copies 20] [--json PATH]

`--keep DIR` keeps the release and the library's twins.json in DIR; `--stage-only DIR` runs the
stage again on such a kept release (its per-object results as the build left them: manifests
and written files) and reports its wall time against the kept build's; `--blocking-only DIR`
times the cheap keys alone on copies of its records (`blocking_only`).

Truth: the objects of twins.json with equal `design` are the same object: a duplicate twin
(reexport, yaw, any_yaw, millimetres, renamed, welded, merged or split meshes) and its
original, two near-miss twins of one design, two objects that happened to draw the same
design; a near-miss (one_more_drawer, another_size) is not its original. Pairs are counted
among accepted objects. Writes bench/results/duplicates.json (or --json PATH).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from duplicates import find_duplicates, record_from_rows
from duplicates.keys import candidate_pairs, cheap_match
from duplicates.settings import load_settings
from normalize.sources import load_sources
from pipeline.build import BuildConfig
from samples.generate import generate_library

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "duplicates.json"


def _pairs(groups) -> set[frozenset]:
    return {frozenset(p) for g in groups for p in itertools.combinations(sorted(g), 2)}


def truth_pairs(library: Path, folder_to_id: dict) -> tuple[set, set, Counter, set]:
    """(duplicate pairs, near-miss pairs, twins by variant, planted pairs: each duplicate twin
    with its original) among accepted objects."""
    data = json.loads((library / "twins.json").read_text())
    groups: dict[str, set] = defaultdict(set)
    for o in data["objects"]:
        object_id = folder_to_id.get((o["source"], o["folder"]))
        if object_id is not None:
            groups[o["design"]].add(object_id)
    near, planted = set(), set()
    variants = Counter()
    for t in data["twins"]:
        twin = folder_to_id.get((t["source"], t["folder"]))
        original = folder_to_id.get((t["original_source"], t["original_folder"]))
        variants[(t["variant"], twin is not None and original is not None)] += 1
        if twin is not None and original is not None:
            (planted if t["duplicate"] else near).add(frozenset((original, twin)))
    return _pairs(groups.values()), near, variants, planted


def child(args: argparse.Namespace) -> None:
    """One cold build of a generated library (`--child`); its timings to args.report."""
    from flows.commands import build_release

    config = BuildConfig(
        sources=load_sources(args.library / "sources.yaml"),
        out=args.out,
        version="bench",
        runner=args.runner,
        workers=args.workers,
        cache_dir=args.cache,
        live=False,
    )
    result = build_release(config)
    report = {
        "seconds": {k: round(v, 3) for k, v in result.seconds.items()},
        "stage_seconds": {k: round(v, 3) for k, v in result.stage_seconds.items()},
        "source_seconds": {k: round(v, 3) for k, v in result.source_seconds.items()},
        "counts": {k: result.info["counts"][k] for k in ("discovered", "accepted", "rejected")},
    }
    args.report.write_text(json.dumps(report), encoding="utf-8")


def run(n: int, twins: float, seed: int, workers: int, runner: str, keep: Path | None) -> dict:
    root = Path(tempfile.mkdtemp(prefix="dup-bench-"))
    try:
        library = root / "library"
        started = time.perf_counter()
        generate_library(library, n=n, seed=seed, twins=twins)
        generate_s = time.perf_counter() - started
        report = root / "build.json"
        command = [sys.executable, str(Path(__file__).resolve()), "--child", "--library"]
        command += [str(library), "--out", str(root / "release"), "--cache", str(root / "cache")]
        command += ["--runner", runner, "--workers", str(workers), "--report", str(report)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        env = {
            **os.environ,
            "PREFECT_HOME": str(root / "prefect_home"),  # never the user's Prefect database
            "PREFECT_LOGGING_LEVEL": "WARNING",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        }
        env.pop("PREFECT_API_URL", None)  # the temporary server, as `arena build` alone runs
        subprocess.run(command, check=True, cwd=REPO, env=env)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        build = json.loads(report.read_text())
        seconds = build["seconds"]
        manifest = root / "release" / "manifest"
        objects = pq.read_table(manifest / "objects.parquet").to_pylist()
        rows = pq.read_table(manifest / "duplicates.parquet").to_pylist()
        out = {
            "benchmark": "duplicate stage on a generated library with planted twins, cold build",
            "machine": f"{platform.machine()}, {workers} workers, runner {runner}",
            "objects_generated": n,
            "twin_fraction": twins,
            "seed": seed,
            **scores(library, objects, rows),
            "stage_wall_s": round(seconds["duplicates"], 3),
            "build_wall_s": round(seconds["total"], 3),
            "stage_share": round(seconds["duplicates"] / seconds["total"], 4),
            "cold_build": {
                "wall_s": round(wall, 3),  # the build subprocess, interpreter start included
                "cpu_s": round(cpu, 3),  # it and every process it waited for
                "wall_min": round(wall / 60, 2),
                "objects_per_s": round(build["counts"]["discovered"] / wall, 3),
                "counts": build["counts"],
                "seconds": seconds,
                "stage_seconds": build["stage_seconds"],
                "source_seconds": build["source_seconds"],
            },
            "generate_s": round(generate_s, 3),
        }
        if keep:
            shutil.copytree(root / "release", keep, dirs_exist_ok=True)
            shutil.copy(library / "twins.json", keep / "twins.json")
            (keep / "bench.json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
        return out
    finally:
        shutil.rmtree(root, ignore_errors=True)


def scores(library: Path, objects: list[dict], rows: list[dict]) -> dict:
    """Precision and recall of the pairs the duplicates rows join (twins.json of `library`)."""
    folder_to_id = {(o["source"], o["source_id"].split("/")[0]): o["object_id"] for o in objects}
    truth, near, variants, planted = truth_pairs(library, folder_to_id)
    clusters: dict[str, set] = defaultdict(set)
    for r in rows:
        if r["decision"] != "override.distinct":
            clusters[r["cluster_id"]].add(r["object_id"])
    found = _pairs(clusters.values())
    hit = found & truth
    return {
        "accepted": len(objects),
        "twins_by_variant": {
            f"{v} ({'both accepted' if ok else 'one rejected'})": c
            for (v, ok), c in sorted(variants.items())
        },
        "truth_pairs": len(truth),
        "near_miss_pairs": len(near),
        "found_pairs": len(found),
        "true_positive_pairs": len(hit),
        "precision": len(hit) / len(found) if found else 1.0,
        "recall": len(hit) / len(truth) if truth else 1.0,
        "near_misses_joined": len(found & near),
        # each duplicate twin with its original (the truth adds every other pair of one design,
        # such as two independent objects that drew the same design)
        "planted_pairs": len(planted),
        "planted_recall": len(found & planted) / len(planted) if planted else 1.0,
        "false_pairs": sorted(sorted(p) for p in found - truth)[:20],
        "missed_pairs": sorted(sorted(p) for p in truth - found)[:20],
        "clusters": len(clusters),
    }


def stage_only(kept: Path) -> dict:
    """The stage again on a release kept by `--keep` (records from its manifests and
    checksums, files as written), timed, scored and set against the kept build's wall time."""
    manifest = kept / "manifest"
    objects = pq.read_table(manifest / "objects.parquet").to_pylist()
    joints: dict[str, list] = defaultdict(list)
    for j in pq.read_table(manifest / "joints.parquet").to_pylist():
        joints[j["object_id"]].append(j)
    files: dict[str, dict] = defaultdict(dict)
    for line in (kept / "checksums.sha256").read_text(encoding="utf-8").splitlines():
        digest, name = line.split(maxsplit=1)
        if name.startswith("objects/"):
            _, object_id, rest = name.split("/", 2)
            files[object_id][rest] = digest
    sources = [s["name"] for s in json.loads((kept / "release.json").read_text())["sources"]]
    settings = load_settings(None, None, sources)
    started, cpu = time.perf_counter(), time.process_time()
    records = [
        record_from_rows(
            o, joints[o["object_id"]], files[o["object_id"]], kept / "objects" / o["object_id"]
        )
        for o in objects
    ]
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    found = find_duplicates(records, settings)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu += (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
    build = json.loads((kept / "bench.json").read_text())
    without_stage = build["build_wall_s"] - build["stage_wall_s"]
    return {
        "benchmark": "duplicate stage run again on a kept release (per-object results cached)",
        "objects_generated": build["objects_generated"],
        **scores(kept, objects, found.rows),
        "stage_wall_s": round(seconds, 3),
        "stage_cpu_s": round(cpu, 3),  # its worker processes too
        "candidate_pairs_measured": len(found.evidence),
        "build_wall_s_without_stage": round(without_stage, 3),
        "stage_share": round(seconds / (without_stage + seconds), 4),
        "kept_build": {k: build[k] for k in ("stage_wall_s", "build_wall_s", "stage_share")},
    }


def blocking_only(kept: Path, copies: int) -> dict:
    """The cheap keys alone on `copies` copies of a kept release's records (their joints
    kept), each copy's boxes scaled by a random factor in [0.5, 2] and stretched in x by a
    random 0-5 % (distinct objects of the same kinds): how many pairs the blocking proposes,
    by block, and pass `cheap_match`."""
    objects = pq.read_table(kept / "manifest" / "objects.parquet").to_pylist()
    joints: dict[str, list] = defaultdict(list)
    for j in pq.read_table(kept / "manifest" / "joints.parquet").to_pylist():
        joints[j["object_id"]].append(j)
    base = [
        record_from_rows(o, joints[o["object_id"]], {}, kept / "objects" / o["object_id"])
        for o in objects
    ]
    rng = np.random.default_rng(0)
    records = []
    for k in range(copies):
        for r in base:
            size, stretch = rng.uniform(0.5, 2.0), np.array([1 + rng.uniform(0, 0.05), 1, 1])
            records.append(
                dataclasses.replace(
                    r,
                    object_id=f"{r.object_id}#{k}",
                    bbox_min=tuple(np.array(r.bbox_min) * size * stretch),
                    bbox_max=tuple(np.array(r.bbox_max) * size * stretch),
                )
            )
    cpu = time.process_time()
    pairs = candidate_pairs(records)
    cpu = time.process_time() - cpu
    return {
        "benchmark": "blocking alone on copies of a kept release's records",
        "records": len(records),
        "proposed_pairs": len(pairs),
        "proposed_by_block": dict(sorted(Counter(b for w in pairs.values() for b in w).items())),
        "passing_cheap_match": sum(cheap_match(records[i], records[j])[0] for i, j in pairs),
        "blocking_cpu_s": round(cpu, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--twins", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path, default=RESULTS)
    parser.add_argument("--keep", type=Path, default=None, help="copy the release here")
    parser.add_argument("--stage-only", type=Path, default=None, help="a release kept by --keep")
    parser.add_argument("--blocking-only", type=Path, default=None, help="a kept release")
    parser.add_argument("--copies", type=int, default=20, help="with --blocking-only")
    parser.add_argument("--runner", default="process", help="process (Prefect) or local")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    for name in ("--library", "--out", "--cache", "--report"):  # of the --child build
        parser.add_argument(name, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    if args.blocking_only:
        out = blocking_only(args.blocking_only, args.copies)
    elif args.stage_only:
        out = stage_only(args.stage_only)
    else:
        out = run(args.n, args.twins, args.seed, args.workers, args.runner, args.keep)
    print(json.dumps(out, indent=1))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
