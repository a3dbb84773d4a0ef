"""Which decomposition: CoACD and V-HACD against the contact-guided splitting, on corpus objects.

    .venv/bin/python -m pip install -e '.[decomposition]'   # coacd and vhacdx
    .venv/bin/python bench/decomposition_libraries.py [--seconds 900]

Issue 32 asks to decompose each link's collision geometry with a maintained library (CoACD,
PyPI `coacd`, or V-HACD through `vhacdx`), measured on the corpus for quality and time. For a
sample of PartNet-style corpus objects whose hulls the splitting cuts, each object is normalized
once; the collision shapes the splitting starts from (every collision shape, the meshes whose
hulls normalization made as whole meshes) are kept, and each way of decomposing them is judged
as the `mechanism.penetration` check judges the shipped files: MuJoCo's collision pipeline on
every piece, every driving joint at rest and at the sampled points of its range
(`normalize.collision_parts._contacts`).

- `splitting`: `normalize.collision_parts.clear_mechanisms`, what the release ships;
- `coacd`: CoACD with its default parameters (concavity threshold 0.05) on each whole mesh;
- `vhacd`: V-HACD with vhacdx's defaults (64 hulls at most, 400,000 voxels) on each whole mesh.

Per object and way: seconds of wall clock (one thread per library: OMP_NUM_THREADS=1), parts,
contacts deeper than 1 mm left and the deepest. Each library runs in its own process, killed
after --seconds (CoACD can run for minutes on one mesh). Writes
bench/results/decomposition_libraries.json.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
SOURCES = REPO / "tests" / "corpus_sources.yaml"
#: PartNet-style objects with hulls of visual meshes: two whose whole hulls already clear their
#: mechanisms, one the splitting clears, five where it leaves contacts (chosen before measuring)
SAMPLE = [
    ("partnet_mobility", "40147"),
    ("gensim2_partnet", "7221"),
    ("gensim2_partnet", "22301"),
    ("gensim2_partnet", "47645"),
    ("partnet_mobility", "kettle"),
    ("partnet_mobility", "bucket"),
    ("gensim2_partnet", "7179"),
    ("gensim2_partnet", "100550"),
]
WAYS = ("splitting", "coacd", "vhacd")


def _shapes_before_splitting(source_name: str, object_id: str):
    """The object (`obj`), its collision shapes as the splitting receives them (`shapes`, a
    copy) and as it leaves them (`after`), its parts and seconds: one normalization."""
    import normalize.urdf_writer as writer
    from normalize.adapters import discover
    from normalize.run import normalize_candidate
    from normalize.sources import load_sources

    source = next(s for s in load_sources(SOURCES) if s.name == source_name)
    candidate = next(c for c in discover(source) if c.source_id == object_id)
    seen = {}
    splitting = writer.clear_mechanisms

    def keep_input(obj, shapes):
        seen["obj"], seen["shapes"] = obj, copy.deepcopy(shapes)
        started = time.perf_counter()
        seen["cleared"] = splitting(obj, shapes)
        seen["seconds"] = time.perf_counter() - started
        seen["after"] = shapes
        seen["parts"] = sum(len(s.parts) for s in shapes.values() if s.ours)
        return seen["cleared"]

    writer.clear_mechanisms = keep_input
    try:
        with tempfile.TemporaryDirectory() as out:
            normalize_candidate(candidate, Path(out))
    finally:
        writer.clear_mechanisms = splitting
    return seen


def _judged(obj, shapes) -> tuple[int, float]:
    """(contacts deeper than DEPTH_TOLERANCE, the deepest in m) over every judged joint."""
    import mujoco

    from normalize import collision_parts as cp

    pieces = [(key, k) for key, s in shapes.items() for k in range(max(1, len(s.parts)))]
    links = {link.name for link in obj.links}
    model = cp._model(mujoco, obj, shapes, pieces, cp._Hulls(shapes), links)
    contacts = cp._contacts(mujoco, model, obj, cp.judged_joints(obj))
    return len(contacts), max((c.depth for c in contacts), default=0.0)


def _decomposed(way: str, vertices: np.ndarray, faces: np.ndarray) -> list:
    if way == "coacd":
        import coacd

        coacd.set_log_level("error")
        mesh = coacd.Mesh(
            np.ascontiguousarray(vertices, dtype=np.float64),
            np.ascontiguousarray(faces, dtype=np.int32),  # other integer types crash it
        )
        return coacd.run_coacd(mesh)
    import vhacdx

    return vhacdx.compute_vhacd(
        np.ascontiguousarray(vertices, dtype=np.float64),
        np.ascontiguousarray(faces, dtype=np.uint32),
    )


def measure_one(source_name: str, object_id: str, way: str) -> dict:
    seen = _shapes_before_splitting(source_name, object_id)
    if way == "splitting":
        left, deepest = _judged(seen["obj"], seen["after"])
        whole_left, whole_deepest = _judged(seen["obj"], seen["shapes"])
        return {
            "seconds": round(seen["seconds"], 3),
            "parts": seen["parts"],
            "contacts_left": left,
            "deepest_mm": round(1000 * deepest, 2),
            "whole_hulls": {"contacts": whole_left, "deepest_mm": round(1000 * whole_deepest, 2)},
        }
    shapes = seen["shapes"]
    started = time.perf_counter()
    for shape in shapes.values():
        if shape.ours:
            vertices, faces = shape.parts[0]
            shape.parts = [
                (np.asarray(v, dtype=float), np.asarray(f, dtype=np.int64))
                for v, f in _decomposed(way, vertices, faces)
            ]
    seconds = time.perf_counter() - started
    left, deepest = _judged(seen["obj"], shapes)
    return {
        "seconds": round(seconds, 3),
        "parts": sum(len(s.parts) for s in shapes.values() if s.ours),
        "contacts_left": left,
        "deepest_mm": round(1000 * deepest, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=900.0, help="per object and library")
    parser.add_argument(
        "--one", nargs=3, metavar=("SOURCE", "OBJECT", "WAY"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure_one(*args.one)))
        return
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("ARENA_MESH_STORE", None)
    rows = []
    for source_name, object_id in SAMPLE:
        row = {"source": source_name, "object": object_id}
        for way in WAYS:
            command = [sys.executable, __file__, "--one", source_name, object_id, way]
            try:
                done = subprocess.run(
                    command, capture_output=True, text=True, timeout=args.seconds, env=env
                )
            except subprocess.TimeoutExpired:
                row[way] = {"stopped_after_s": args.seconds}
            else:
                lines = done.stdout.strip().splitlines()
                row[way] = (
                    json.loads(lines[-1])
                    if done.returncode == 0 and lines
                    else {"exit_code": done.returncode, "error": done.stderr.strip()[-300:]}
                )
            print(source_name, object_id, way, row[way], flush=True)
        rows.append(row)
    summary = {}
    for way in WAYS:
        done = [r[way] for r in rows if "seconds" in r[way]]
        summary[way] = {
            "objects_measured": len(done),
            "objects_cleared": sum(r["contacts_left"] == 0 for r in done),
            "median_seconds": float(np.median([r["seconds"] for r in done])) if done else None,
            "median_parts": float(np.median([r["parts"] for r in done])) if done else None,
        }
    from importlib.metadata import version

    results = {
        "benchmark": "decomposition libraries against the contact-guided splitting",
        "versions": {name: version(name) for name in ("coacd", "vhacdx", "mujoco")},
        "per_object_seconds_limit": args.seconds,
        "objects": rows,
        "summary": summary,
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
        ).stdout.strip(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "decomposition_libraries.json").write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
