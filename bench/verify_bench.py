"""Benchmark: what verification costs per object, and what `arena validate` costs end to end.

    .venv/bin/python bench/verify_bench.py [--n 0] [--repeat 3]

1. verify_object on every object of the generated sample library (`generate_library(tmp, n)`,
   normalized once beforehand): median wall and CPU milliseconds per object over `repeat` runs,
   by size class (moving joints), per check family, and with the simulator checks off.
2. verify_object on the corpus keyboard partnet_mobility/7619 (115 moving joints), and CPU
   milliseconds per object of every check family over the whole corpus (tests/corpus_sources.
   yaml; the simulator family loads every shipped file in MuJoCo, PyBullet and yourdfpy, the
   collision family is collision.range).
3. `arena validate /work/shared/corpus/partnet_mobility/10495` as a subprocess, including
   interpreter start-up: wall and CPU (user + sys) seconds, best and median of 5.
4. The whole sample library through `validate_candidates` with 1 and with 2 worker processes.
5. What the fidelity checks (verify/checks/fidelity.py) cost on corpus objects of each reader:
   CPU milliseconds of the family, cold (mesh hulls computed) and warm (hulls cached, as for
   meshes shared by many objects), against the whole of verify_object (warm).

The machine is shared: the load average at the start and end is recorded with the figures.
Prints the figures and writes bench/results/verify_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from normalize.adapters import discover
from normalize.errors import AssetError
from normalize.run import normalize_candidate
from normalize.sources import SourceConfig, load_sources
from samples.generate import generate_library
from verify import FAMILIES as CHECK_FAMILIES
from verify import verify_object
from verify.checks import Context, fidelity, geometry, shape_points, simulator, structure
from verify.validate import validate_candidates

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "verify_bench.json"
CORPUS = REPO.parent / "shared" / "corpus"
CORPUS_SOURCES = REPO / "tests" / "corpus_sources.yaml"
ARENA = REPO / ".venv" / "bin" / "arena"
FAMILIES = (*CHECK_FAMILIES, ("simulator", simulator.run))


def normalized(sources_file: Path, out: Path, *, skip_rejected: bool = False):
    results = []
    for source in load_sources(sources_file):
        for candidate in discover(source):
            try:
                results.append((normalize_candidate(candidate, out), source))
            except AssetError:
                if not skip_rejected:
                    raise
    return results


def timed(function, repeat: int) -> tuple[float, float]:
    """(median wall ms, median CPU ms) of `function()`."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        function()
        walls.append(1000 * (time.perf_counter() - wall))
        cpus.append(1000 * (time.process_time() - cpu))
    return statistics.median(walls), statistics.median(cpus)


def per_object(results, repeat: int) -> dict:
    rows = []
    for result, source in results:
        wall, cpu = timed(lambda r=result, s=source: verify_object(r, s), repeat)
        wall_nosim, cpu_nosim = timed(
            lambda r=result, s=source: verify_object(r, s, simulator=False), repeat
        )
        rows.append((len(result.object.moving_joints), wall, cpu, wall_nosim, cpu_nosim))
    classes = {"1-4 joints": (1, 4), "5-14 joints": (5, 14), "15+ joints": (15, 10**9)}
    out = {}
    for label, (low, high) in classes.items():
        picked = [r for r in rows if low <= r[0] <= high]
        if picked:
            out[label] = {
                "objects": len(picked),
                "mean_moving_joints": round(statistics.mean(r[0] for r in picked), 1),
                "wall_ms": round(statistics.mean(r[1] for r in picked), 1),
                "cpu_ms": round(statistics.mean(r[2] for r in picked), 1),
                "wall_ms_without_simulator": round(statistics.mean(r[3] for r in picked), 1),
                "cpu_ms_without_simulator": round(statistics.mean(r[4] for r in picked), 1),
            }
    out["all"] = {
        "objects": len(rows),
        "mean_moving_joints": round(statistics.mean(r[0] for r in rows), 1),
        "wall_ms": round(statistics.mean(r[1] for r in rows), 1),
        "cpu_ms": round(statistics.mean(r[2] for r in rows), 1),
    }
    return out


def per_family(results, repeat: int) -> dict:
    totals: dict[str, float] = defaultdict(float)
    for _ in range(repeat):
        for result, source in results:
            ctx = Context(result, source)
            start = time.process_time()
            structure.read_back(ctx)
            totals["read_back"] += time.process_time() - start
            for name, family in FAMILIES:
                start = time.process_time()
                family(ctx)
                totals[name] += time.process_time() - start
    n = repeat * len(results)
    return {name: round(1000 * seconds / n, 2) for name, seconds in totals.items()}


#: Corpus objects whose fidelity cost is measured: yourdfpy (PartNet keyboard, 115 joints; the
#: panda, heavy meshes), MuJoCo (dm_control manipulator). SDF objects (plausibility only) are
#: in the sample library's per-family figure.
FIDELITY_OBJECTS = (
    "partnet_mobility__7619",
    "example_robot_data__panda__example-robot-data__robots__panda_description__urdf__panda",
    "dm_control_suite__manipulator__manipulator",
)


def fidelity_costs(out: Path, repeat: int) -> dict:
    sources = load_sources(REPO / "tests" / "corpus_sources.yaml")
    wanted = {c.object_id: (c, s) for s in sources for c in discover(s)}
    figures = {}
    for object_id in FIDELITY_OBJECTS:
        if object_id not in wanted:
            continue
        candidate, source = wanted[object_id]
        result = normalize_candidate(candidate, out)
        _, total = timed(lambda r=result, s=source: verify_object(r, s), repeat)
        ctx = Context(result, source)
        structure.read_back(ctx)
        geometry.run(ctx)
        shape_points._HULLS.clear()  # cold: the mesh hulls are computed once per mesh content
        _, cold = timed(lambda c=ctx: fidelity.run(c), 1)
        _, warm = timed(lambda c=ctx: fidelity.run(c), repeat)
        figures[object_id] = {
            "format": source.format,
            "moving_joints": len(result.object.moving_joints),
            "fidelity_cpu_ms_cold": round(cold, 1),
            "fidelity_cpu_ms_warm": round(warm, 1),
            "verify_object_cpu_ms": round(total, 1),
        }
    return figures


def cli_runs(path: Path, runs: int = 5) -> dict:
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run([str(ARENA), "validate", str(path)], capture_output=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
        assert done.returncode == 0, done.stdout.decode()[-2000:]
    return {
        "command": f"arena validate {path}",
        "wall_s_best": round(min(walls), 3),
        "wall_s_median": round(statistics.median(walls), 3),
        "cpu_s_best": round(min(cpus), 3),
        "cpu_s_median": round(statistics.median(cpus), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=0, help="sample library size (0: demo set)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    load_start = os.getloadavg()
    figures: dict = {
        "benchmark": "verify_object per object and arena validate end to end",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "load_average_start": [round(v, 2) for v in load_start],
    }
    with tempfile.TemporaryDirectory(prefix="verify-bench-") as tmp:
        library = Path(tmp) / "library"
        generate_library(library, n=args.n)
        results = normalized(library / "sources.yaml", Path(tmp) / "out")
        figures["sample_library"] = {"n": args.n, "objects": len(results)}
        figures["verify_object_ms"] = per_object(results, args.repeat)
        figures["cpu_ms_per_family"] = per_family(results, args.repeat)

        source = SourceConfig(
            "partnet_mobility", "partnet_mobility", CORPUS / "partnet_mobility", "bench",
            include=("7619",),
        )  # fmt: skip
        [candidate] = discover(source)
        keyboard = normalize_candidate(candidate, Path(tmp) / "corpus")
        wall, cpu = timed(lambda: verify_object(keyboard, source), args.repeat)
        figures["corpus_keyboard_7619_ms"] = {
            "moving_joints": len(keyboard.object.moving_joints),
            "wall_ms": round(wall, 1),
            "cpu_ms": round(cpu, 1),
        }

        corpus = normalized(CORPUS_SOURCES, Path(tmp) / "corpus_all", skip_rejected=True)
        figures["corpus_cpu_ms_per_family"] = {"objects": len(corpus), **per_family(corpus, 1)}

        candidates = [c for s in load_sources(library / "sources.yaml") for c in discover(s)]
        folder = {}
        for workers in (1, 2):
            start = time.perf_counter()
            validate_candidates(candidates, workers=workers)
            folder[f"workers_{workers}_s"] = round(time.perf_counter() - start, 2)
        folder["speedup"] = round(folder["workers_1_s"] / folder["workers_2_s"], 2)
        figures["validate_sample_library"] = {"objects": len(candidates), **folder}

        figures["fidelity_cpu_ms_on_corpus"] = fidelity_costs(Path(tmp) / "fidelity", args.repeat)

    figures["arena_validate_one_partnet_object"] = cli_runs(CORPUS / "partnet_mobility" / "10495")
    figures["load_average_end"] = [round(v, 2) for v in os.getloadavg()]
    text = json.dumps(figures, indent=2)
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
