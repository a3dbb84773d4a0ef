"""Realistic-mesh benchmark: PartNet-size objects of the shared corpus, copied to N objects.

    .venv/bin/python bench/realistic.py [--n 100 400] [--workers 2]

The library: every object of the corpus's partnet_mobility, gensim2_partnet and gapartnet
sources (../shared/corpus), copied round-robin under new ids until there are N, one comment line
appended to each OBJ file of a copy so that no cache can reuse another copy's work (other files
are hard links). For each N, in one run, side by side:

- cold: `--runner local` (the objects' work without Prefect; bench/orchestration.py measures
  Prefect's share), `--workers` worker processes, an empty cache;
- warm: the same cache, nothing changed;
- one mesh edited: one OBJ file of one object changed, the same cache;
- the floor: reading every file of the library and parsing its XML, in one process;
- the user's script: what a careful user writes instead, each object loaded with yourdfpy
  (meshes included) and compiled in MuJoCo (`MjSpec.from_file`), in `--workers` processes.

Per build: wall and CPU seconds (the process tree), CPU seconds per object, the stage shares
(seconds summed over objects), the peak RSS of the build process and of the largest worker.
Ratios are taken within the run; the 20,000-object projection scales the largest N's CPU per
object. Writes bench/results/realistic.json.
"""

from __future__ import annotations

import argparse
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
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
RESULTS = REPO / "bench" / "results" / "realistic.json"
LIBRARIES = ("partnet_mobility", "gensim2_partnet", "gapartnet")


def write_library(root: Path, n: int) -> Path:
    """N copies of the corpus's PartNet-Mobility objects under `root`; its sources file."""
    originals = [
        (library, folder)
        for library in LIBRARIES
        for folder in sorted((CORPUS / library).iterdir())
        if (folder / "mobility.urdf").is_file()
    ]
    for k, (library, folder) in zip(range(n), itertools.cycle(originals)):
        copy = root / library / f"{folder.name}_r{k}"

        def copy_file(src, dst, k=k):
            if src.endswith(".obj"):
                shutil.copyfile(src, dst)
                with open(dst, "a", encoding="utf-8") as f:
                    f.write(f"\n# realistic benchmark copy {k}\n")
            else:
                os.link(src, dst)

        shutil.copytree(folder, copy, copy_function=copy_file)
    sources = [
        {"name": library, "format": "partnet_mobility", "path": library, "license": "bench"}
        for library in LIBRARIES
        if (root / library).is_dir()
    ]
    (root / "sources.yaml").write_text(json.dumps({"sources": sources}), encoding="utf-8")
    return root / "sources.yaml"


# --------------------------------------------------------------------------- in subprocesses
def child_build(args) -> None:
    """One build without Prefect; its figures (and the peak RSS of its processes) to a file."""
    from flows.commands import build_release
    from normalize import workers
    from normalize.sources import load_sources
    from pipeline.build import BuildConfig

    config = BuildConfig(
        sources=load_sources(args.sources),
        out=args.out,
        version="bench",
        runner="local",
        workers=args.workers,
        cache_dir=args.cache,
        live=False,
    )
    result = build_release(config)
    for supervisor in workers._KEPT.values():  # end the worker processes: their peaks count
        supervisor.close()
    report = {
        "build_s": result.seconds["total"],
        "stage_s": result.stage_seconds,
        "objects": result.info["counts"]["discovered"],
        "accepted": result.info["counts"]["accepted"],
        "computed": len(result.computed),
        "content_hash": result.content_hash,
        "build_process_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "largest_worker_peak_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    }
    args.report.write_text(json.dumps(report), encoding="utf-8")


def _user_load(urdf: str) -> bool:
    """The user's script for one object: yourdfpy with meshes, then MuJoCo's compiler."""
    import mujoco
    import yourdfpy

    try:
        yourdfpy.URDF.load(urdf, load_meshes=True, build_scene_graph=True)
        spec = mujoco.MjSpec.from_file(urdf)
        spec.strippath = False  # PartNet's meshes are in textured_objs/
        spec.meshdir = str(Path(urdf).parent)
        spec.compile()
        return True
    except Exception:
        return False


def child_user_script(args) -> None:
    from multiprocessing import get_context

    urdfs = sorted(str(p) for p in args.sources.parent.glob("*/*/mobility.urdf"))
    with get_context("spawn").Pool(args.workers) as pool:
        loaded = pool.map(_user_load, urdfs, chunksize=4)
    args.report.write_text(json.dumps({"objects": len(urdfs), "loaded": sum(loaded)}))


def child_floor(args) -> None:
    from normalize.safe_xml import parse_xml

    files = xml = 0
    for path in args.sources.parent.rglob("*"):
        if path.is_file():
            path.read_bytes()
            files += 1
            if path.suffix in (".urdf", ".xml"):
                parse_xml(path, 64 * 1024**2)
                xml += 1
    args.report.write_text(json.dumps({"files": files, "xml": xml}))


# --------------------------------------------------------------------------- the run
def run(kind: str, work: Path, sources: Path, workers: int, out=None, cache=None) -> dict:
    report = work / f"{kind}.report.json"
    command = [sys.executable, str(Path(__file__).resolve()), "--child", kind]
    command += ["--sources", sources, "--workers", str(workers), "--report", report]
    if out is not None:
        command += ["--out", out, "--cache", cache]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, cwd=REPO)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    data = json.loads(report.read_text(encoding="utf-8"))
    report.unlink()
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), **data}


def edit_one_mesh(sources: Path) -> str:
    obj = sorted(sources.parent.glob("*/*/textured_objs/*.obj"))[0]
    with open(obj, "a", encoding="utf-8") as f:
        f.write("# edited\n")
    return str(obj.relative_to(sources.parent))


def shares(stage_s: dict) -> dict:
    objects = {k: v for k, v in stage_s.items() if k not in ("discover", "duplicates", "assemble")}
    total = sum(objects.values())
    return {k: round(v / total, 3) for k, v in sorted(objects.items(), key=lambda kv: -kv[1])}


def measure(n: int, work: Path, workers: int) -> dict:
    sources = write_library(work / f"library{n}", n)
    out, cache = work / f"out{n}", work / f"cache{n}"
    figures = {"floor": run("floor", work, sources, workers)}
    figures["user_script"] = run("user", work, sources, workers)
    figures["cold"] = run("build", work, sources, workers, out, cache)
    shutil.rmtree(out)
    figures["warm"] = run("build", work, sources, workers, out, cache)
    shutil.rmtree(out)
    edited = edit_one_mesh(sources)
    figures["one_mesh_edited"] = {
        "edited": edited,
        **run("build", work, sources, workers, out, cache),
    }
    shutil.rmtree(out)
    shutil.rmtree(cache)
    cold = figures["cold"]
    objects = cold["objects"]
    return {
        "objects": objects,
        "figures": figures,
        "cold_cpu_s_per_object": round(cold["cpu_s"] / objects, 4),
        "cold_stage_shares": shares(cold["stage_s"]),
        "ratios": {
            "cold_cpu_over_user_script": round(cold["cpu_s"] / figures["user_script"]["cpu_s"], 2),
            "cold_cpu_over_floor": round(cold["cpu_s"] / figures["floor"]["cpu_s"], 2),
            "warm_over_cold_wall": round(figures["warm"]["wall_s"] / cold["wall_s"], 3),
            "edited_over_cold_wall": round(
                figures["one_mesh_edited"]["wall_s"] / cold["wall_s"], 3
            ),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[100, 400])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--child", choices=("build", "user", "floor"), help=argparse.SUPPRESS)
    for hidden in ("--sources", "--out", "--cache", "--report"):
        parser.add_argument(hidden, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        {"build": child_build, "user": child_user_script, "floor": child_floor}[args.child](args)
        return

    work = Path(tempfile.mkdtemp(prefix="realistic-"))
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    results: dict = {"sizes": {}}
    try:
        for n in args.n:
            results["sizes"][str(n)] = measure(n, work, args.workers)
            print(
                json.dumps(
                    {n: {k: v for k, v in results["sizes"][str(n)].items() if k != "figures"}},
                    indent=2,
                ),
                flush=True,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sizes = sorted(args.n)
    small, large = (results["sizes"][str(k)] for k in (sizes[0], sizes[-1]))
    worker_peak = [s["figures"]["cold"]["largest_worker_peak_mb"] for s in (small, large)]
    build_peak = [s["figures"]["cold"]["build_process_peak_mb"] for s in (small, large)]
    per_object = large["cold_cpu_s_per_object"]
    results["memory"] = {
        "sizes": [sizes[0], sizes[-1]],
        "largest_worker_peak_mb": [round(x) for x in worker_peak],
        "worker_peak_ratio": round(worker_peak[1] / worker_peak[0], 2),
        "build_process_peak_mb": [round(x) for x in build_peak],
    }
    results["projection_20000"] = {
        f"cold_wall_min_on_{w}_workers": round(per_object * 20000 / w / 60, 1) for w in (2, 16)
    }
    results["commit"] = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()
    results["machine"] = {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    results["date"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps({k: v for k, v in results.items() if k != "sizes"}, indent=2))


if __name__ == "__main__":
    main()
