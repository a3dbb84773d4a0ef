"""Survey: the convex collision parts of a release, per link.

    .venv/bin/python bench/collision_parts.py [--release OUT] [--sources tests/corpus_sources.yaml]
                                              [--name corpus]

Reads a release (`--release`, else builds `--sources` cold into a temporary folder, no Prefect)
and reports, from `manifest/links.parquet` and the shipped `object.urdf` files: how many
collision shapes each link has, how many links ship convex parts (`<name>_part<k>_collision.obj`)
and how many parts each of those has; the fidelity columns (`collision_hausdorff`, the one-sided
distance from the collision shapes to the visual surface over the link's box diagonal;
`collision_volume_ratio`, where the visual shapes are closed) as quantiles, for links with parts
and for the others; and whether every shipped collision mesh is convex (`convex_collision` of its
file is None: every vertex a corner of its hull and every face on it). Prints the figures and
writes bench/results/collision_parts_<name>.json.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from normalize.collision_parts import COLLISION_PART
from normalize.meshes import convex_collision, load_mesh
from normalize.urdf import read_object

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
QUANTILES = (50, 90, 99, 100)


def build(sources: Path, out: Path) -> None:
    from flows.commands import build_release
    from normalize.sources import load_sources
    from pipeline.build import BuildConfig

    config = BuildConfig(
        sources=load_sources(sources),
        out=out,
        version="bench",
        runner="local",
        workers=2,
        cache_dir=out.parent / "cache",
        live=False,
    )
    build_release(config)


def quantiles(values) -> dict:
    values = np.array([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    if len(values) == 0:
        return {"n": 0}
    found = np.percentile(values, QUANTILES)
    named = {f"p{q}": round(float(v), 4) for q, v in zip(QUANTILES, found, strict=True)}
    return {"n": len(values), **named}


def survey(release: Path) -> dict:
    links = pq.read_table(release / "manifest" / "links.parquet").to_pylist()
    parts_per_link, kinds, not_convex = {}, Counter(), []
    for folder in sorted((release / "objects").iterdir()):
        obj = read_object(folder / "object.urdf")
        for link in obj.links:
            parts = sum(
                1 for g in link.collisions if g.kind == "mesh" and COLLISION_PART.search(g.filename)
            )
            if parts:
                parts_per_link[folder.name, link.name] = parts
            for g in link.collisions:
                if g.kind != "mesh":
                    kinds["primitive"] += 1
                    continue
                kinds["part" if COLLISION_PART.search(g.filename) else "mesh"] += 1
                mesh = load_mesh(folder / g.filename, root=folder)
                if convex_collision(mesh) is not None:
                    not_convex.append(f"{folder.name}/{g.filename}")
    with_parts = [r for r in links if (r["object_id"], r["link_name"]) in parts_per_link]
    others = [r for r in links if (r["object_id"], r["link_name"]) not in parts_per_link]
    return {
        "objects": len({r["object_id"] for r in links}),
        "links": len(links),
        "collision_shapes": dict(kinds),
        "collision_meshes_not_convex": not_convex,
        "links_with_parts": len(parts_per_link),
        "objects_with_parts": len({o for o, _ in parts_per_link}),
        "parts_per_link_with_parts": quantiles(parts_per_link.values()),
        "collision_shapes_per_link": dict(
            sorted(Counter(r["collision_shapes"] for r in links).items())
        ),
        "hausdorff_over_diagonal": {
            "links_with_parts": quantiles(r["collision_hausdorff"] for r in with_parts),
            "other_links": quantiles(r["collision_hausdorff"] for r in others),
        },
        "volume_ratio": {
            "links_with_parts": quantiles(r["collision_volume_ratio"] for r in with_parts),
            "other_links": quantiles(r["collision_volume_ratio"] for r in others),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", type=Path)
    parser.add_argument("--sources", type=Path, default=REPO / "tests" / "corpus_sources.yaml")
    parser.add_argument("--name", default="corpus")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="collision-parts-") as tmp:
        release = args.release
        if release is None:
            release = Path(tmp) / "release"
            build(args.sources, release)
        result = survey(release)
    result["date"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    text = json.dumps(result, indent=1)
    print(text)
    (RESULTS / f"collision_parts_{args.name}.json").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
