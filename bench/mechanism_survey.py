"""Survey: how deep moving parts' collision geometry goes into their parents' in MuJoCo.

    .venv/bin/python bench/mechanism_survey.py [--sources tests/corpus_sources.yaml] [--demo]

Normalizes every object of the sources file (default: the corpus sources file of the tests) or,
with --demo, of the generated demo library (`arena generate`, `--n 0`), compiles each shipped
URDF in MuJoCo and measures every judged joint as `mechanism.penetration` does
(verify/checks/mechanism.py): joints judged, joints failing (deeper than the tolerance plus the
source-built overlap), the depth distribution, per joint type and source, and the check's own
time per object (the MuJoCo model given, as the simulator checks share theirs). Prints the figures
and writes bench/results/mechanism_survey[_demo].json.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

import taxonomy
from normalize.adapters import discover
from normalize.errors import AssetError
from normalize.mujoco_warnings import captured
from normalize.run import normalize_candidate
from normalize.sources import load_sources
from verify.checks import Context, geometry, structure
from verify.checks.collision import source_scene
from verify.checks.mechanism import DEPTH_TOLERANCE, SourceMotion, geom_origins, measure

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"


def survey(sources: list, out: Path) -> dict:
    import mujoco

    joints, objects, check_seconds = [], Counter(), []
    for source in sources:
        for candidate in discover(source):
            try:
                result = normalize_candidate(candidate, out)
            except AssetError:
                objects["rejected by normalization"] += 1
                continue
            ctx = Context(result=result, source=source)
            if not structure.read_back(ctx).passed:
                objects["unreadable"] += 1
                continue
            geometry.run(ctx)
            try:
                with captured(mujoco):
                    model = mujoco.MjModel.from_xml_path(str(result.urdf_path))
            except ValueError:
                objects["not compiled by MuJoCo"] += 1
                continue
            objects["measured"] += 1
            supercategory = taxonomy.categorize(
                result.object,
                object_id=candidate.object_id,
                source_id=candidate.source_id,
                source_overrides=candidate.source.overrides,
            ).supercategory
            started = time.perf_counter()
            motion = SourceMotion(*source_scene(ctx))
            origins = geom_origins(ctx.reread, motion.obj)
            meshes = ctx.notes.get("meshes", {})
            measured, unjudged = measure(ctx.reread, model, meshes, motion, origins)
            check_seconds.append(time.perf_counter() - started)
            objects["joints without collision geometry on one side"] += unjudged
            for m in measured:
                joints.append(
                    {
                        "object": result.object_id,
                        "source": source.name,
                        "supercategory": supercategory,
                        "joint": m.joint.name,
                        "type": m.joint.type,
                        "depth": round(m.depth, 6),
                        "allowed": round(m.threshold, 6),
                        "failed": m.depth > m.threshold,
                        "allowed_by": m.measure or None,
                        # one of the two deepest geoms is a hull or part normalization made
                        "ours": any(origins.get(g, ("", False))[1] for g in m.geoms or ()),
                    }
                )
    depths = np.array([j["depth"] for j in joints]) if joints else np.zeros(0)
    failed = [j for j in joints if j["failed"]]
    return {
        "objects": dict(objects),
        "objects_failing": len({j["object"] for j in failed}),
        "check_seconds": {
            "total": round(sum(check_seconds), 2),
            "median": round(float(np.median(check_seconds)), 4) if check_seconds else None,
            "max": round(max(check_seconds, default=0.0), 3),
        },
        "joints_judged": len(joints),
        "joints_failing": len(failed),
        "joints_allowed_by": dict(
            Counter(
                j["allowed_by"] for j in joints if j["depth"] > DEPTH_TOLERANCE and not j["failed"]
            )
        ),
        "failing_by_type": dict(Counter(j["type"] for j in failed)),
        "judged_by_type": dict(Counter(j["type"] for j in joints)),
        "failing_by_source": dict(Counter(j["source"] for j in failed)),
        # the drawers, doors and lids are in furniture, appliances and containers;
        # robots' and mechanisms' joints, a keyboard's keys (Electronics) are judged alike
        "failing_by_supercategory": dict(Counter(j["supercategory"] for j in failed)),
        "judged_by_supercategory": dict(Counter(j["supercategory"] for j in joints)),
        "failing_with_a_shape_normalization_made": sum(j["ours"] for j in failed),
        "depth_mm_quantiles": {
            q: round(1000 * float(np.quantile(depths, q / 100)), 2) if len(depths) else None
            for q in (50, 75, 90, 95, 100)
        },
        "depth_mm_histogram": dict(
            zip(
                ("<=1", "1-5", "5-20", "20-100", ">100"),
                np.histogram(1000 * depths, bins=[0, 1, 5, 20, 100, np.inf])[0].tolist(),
                strict=True,
            )
        ),
        "joints": joints,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=Path, default=REPO / "tests" / "corpus_sources.yaml")
    parser.add_argument("--demo", action="store_true", help="the generated demo library")
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        if args.demo:
            from samples.generate import generate_library

            generate_library(Path(tmp) / "library")
            sources_file = Path(tmp) / "library" / "sources.yaml"
        else:
            sources_file = args.sources
        figures = survey(load_sources(sources_file), Path(tmp) / "out")
    figures["seconds"] = round(time.perf_counter() - started, 1)
    name = "mechanism_survey_demo.json" if args.demo else "mechanism_survey.json"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / name).write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in figures.items() if k != "joints"}, indent=1))


if __name__ == "__main__":
    main()
