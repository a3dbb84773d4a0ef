"""Corpus benchmark: builds of the shared corpus with a per-stage profile, against the floor.

    .venv/bin/python bench/corpus.py [--sources tests/corpus_sources.yaml] [--workers 2]

Builds without Prefect (`runner="local"`; bench/build_bench.py and bench/scale.py measure
Prefect's share), each in fresh worker processes:

1. cold: empty cache, `--workers` worker processes;
2. warm: the same cache (every object reused);
3. code change: the object cache deleted (what any code change does, since the code
   fingerprint keys it) but the mesh store kept (parsed meshes, mass properties, converted OBJ
   text, keyed by content): every object recomputed;
4. cold in one process (workers=1, in-process mesh cache cleared): the per-stage profile
   without two workers competing for the machine.

Every build records seconds per stage, summed over objects (discover, parse, convention,
meshes, inertia, verify, taxonomy, export, cache, assemble), so the slowest stage is visible.
The floor is what no build can avoid: reading the bytes of every file the objects read
(recorded by the cold build) and parsing every XML file among them with the hardened parser,
in one process. The build's distance from the floor is the ratio of the one-process cold build
to it. All builds must give the same content hash. Writes bench/results/corpus.json.
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

from flows.commands import build_release
from normalize import meshes
from normalize.safe_xml import parse_xml
from normalize.sources import load_sources
from pipeline.build import BuildConfig
from pipeline.cache import ObjectCache

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "corpus.json"
XML_SUFFIXES = (".urdf", ".xml", ".sdf", ".world")


def build(sources: Path, out: Path, cache: Path | None, workers: int) -> dict:
    config = BuildConfig(
        sources=load_sources(sources),
        out=out,
        version="bench",
        runner="local",
        workers=workers,
        cache_dir=cache,
        live=False,
    )
    started = time.perf_counter()
    result = build_release(config)
    wall = time.perf_counter() - started
    counts = result.info["counts"]
    stages = {k: round(v, 3) for k, v in result.stage_seconds.items()}
    work = {k: v for k, v in stages.items() if k not in ("discover", "assemble", "cache")}
    return {
        "wall_s": round(wall, 3),
        "objects_per_s": round(counts["discovered"] / wall, 2),
        "objects_phase_s": round(result.seconds["objects"], 3),
        "discovered": counts["discovered"],
        "accepted": counts["accepted"],
        "rejected": counts["rejected"],
        "from_cache": result.cached,
        "stage_seconds": stages,
        "slowest_stage": max(work, key=work.get) if work else None,
        "content_hash": result.content_hash,
    }


def recorded_inputs(cache: Path) -> list[str]:
    """Every file the objects of a build read (from the cache index: what each object read)."""
    files = set()
    for index in (ObjectCache(cache).root / "index").glob("*/*.json"):
        files.update(json.loads(index.read_bytes())["inputs"])
    return sorted(f for f in files if os.path.isfile(f))


def floor(files: list[str]) -> dict:
    """Seconds to read every file once and to parse the XML ones (page cache warm, as for the
    builds)."""
    started = time.perf_counter()
    total = 0
    for name in files:
        with open(name, "rb") as f:
            total += len(f.read())
    read_s = time.perf_counter() - started
    xml = [Path(n) for n in files if n.lower().endswith(XML_SUFFIXES)]
    started = time.perf_counter()
    parsed = 0
    for path in xml:
        try:
            parse_xml(path)
            parsed += 1
        except Exception:  # hostile or broken files of the corpus: refused, time still counts
            pass
    parse_s = time.perf_counter() - started
    return {
        "files": len(files),
        "bytes": total,
        "read_s": round(read_s, 3),
        "xml_files": len(xml),
        "xml_parsed": parsed,
        "parse_s": round(parse_s, 3),
        "total_s": round(read_s + parse_s, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=Path, default=REPO / "tests" / "corpus_sources.yaml")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="corpus_bench-"))
    load_before = os.getloadavg()
    runs = {}
    try:
        cache = work / "cache"
        runs["cold"] = build(args.sources, work / "cold", cache, args.workers)
        files = recorded_inputs(cache)
        runs["warm"] = build(args.sources, work / "warm", cache, args.workers)
        shutil.rmtree(ObjectCache(cache).root)  # the object cache; cache/meshes stays
        runs["code_change"] = build(args.sources, work / "code_change", cache, args.workers)
        meshes.clear_cache()
        runs["cold_one_process"] = build(args.sources, work / "one", work / "cache1", 1)
        floor_figures = floor(files)
        cache_bytes = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())
        mesh_store_bytes = sum(
            p.stat().st_size for p in (cache / "meshes").rglob("*") if p.is_file()
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for name, run in runs.items():
        print(
            f"{name:>17}: {run['wall_s']:7.2f} s, {run['objects_per_s']:6.1f} objects/s, "
            f"{run['from_cache']} from the cache; stages {run['stage_seconds']}"
        )
    hashes = {run["content_hash"] for run in runs.values()}
    one = runs["cold_one_process"]
    result = {
        "benchmark": "builds of the shared corpus (no Prefect), per-stage profile, the floor",
        "sources": str(
            args.sources.relative_to(REPO) if args.sources.is_relative_to(REPO) else args.sources
        ),
        "workers": args.workers,
        "runs": runs,
        "same_content_hash": len(hashes) == 1,
        "floor": floor_figures,
        "from_floor": {
            "one_process_cold_over_floor": round(one["wall_s"] / floor_figures["total_s"], 1),
            "cold_over_floor": round(runs["cold"]["wall_s"] / floor_figures["total_s"], 1),
            "cold_over_warm": round(runs["cold"]["wall_s"] / runs["warm"]["wall_s"], 1),
            "code_change_over_cold": round(
                runs["code_change"]["wall_s"] / runs["cold"]["wall_s"], 2
            ),
        },
        "slowest_stage": one["slowest_stage"],
        "cache_bytes": cache_bytes,
        "mesh_store_bytes": mesh_store_bytes,
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
        "commit": subprocess.run(
            ["git", "describe", "--always", "--dirty"], capture_output=True, text=True, cwd=REPO
        ).stdout.strip(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    assert len(hashes) == 1, f"builds disagree: {hashes}"
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("floor", "from_floor", "slowest_stage")}, indent=2))
    print(f"written to {args.results}")


if __name__ == "__main__":
    main()
