"""The release browser: `index.html` at the release root, static and self-contained.

One page (inline style and script, nothing fetched from the network) and one data file,
`browser/data.js`: the release's objects as JSON, wrapped as `window.ARENA_BROWSER = {...};`
because browsers refuse `fetch()` of a file next to a page opened from `file://`, while a
`<script src>` loads from `file://` and from any static host alike. The page lists every object
with its thumbnail (lazy-loaded, 200 rows at a time), category, supercategory, joint counts by
type, status and warnings; filters by supercategory, category, joint type and status (and the
object id); `#object=<object_id>` opens an object's panel with its previews (lower | rest |
upper per driving joint group), its kinematic tree (links and joints with type and limits) and
links to its URDF, MJCF, USD and meshes.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from importlib import resources
from pathlib import Path

from previews import PREVIEW_FOLDER

INDEX = "index.html"
DATA = "browser/data.js"
DATA_PREFIX = "window.ARENA_BROWSER = "
MODEL_FILES = ("object.urdf", "object.xml", "object.usda")  # linked by name, not with the meshes


def _limit(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None  # JSON has no infinity


def browser_data(
    info: dict,
    objects: list[dict],
    joints: list[dict],
    links: list[dict],
    previews: dict[str, dict | None],
    files: dict[str, list[str]],
) -> dict:
    """The browser's data. `objects`, `joints`, `links`: manifest rows; `previews`: object_id
    -> the outcome's "preview" entry; `files`: object_id -> the files of its folder."""
    joints_of, links_of = defaultdict(list), defaultdict(list)
    for j in sorted(joints, key=lambda j: (j["object_id"], j["joint_index"])):
        joints_of[j["object_id"]].append(
            [
                j["joint_name"],
                j["type"],
                j["parent"],
                j["child"],
                _limit(j["lower"]),
                _limit(j["upper"]),
                j["mimic_joint"],
            ]
        )
    for link in links:
        links_of[link["object_id"]].append(link["link_name"])
    out = []
    for row in sorted(objects, key=lambda r: r["object_id"]):
        oid = row["object_id"]
        preview = previews.get(oid) or {"rendered": False, "detail": "not recorded"}
        names = files.get(oid, [])
        types = Counter(j[1] for j in joints_of[oid] if j[1] != "fixed")
        out.append(
            {
                "id": oid,
                "category": row["category"],
                "supercategory": row["supercategory"],
                "source": row["source"],
                "status": row["status"],
                "warnings": list(row["warnings"]),
                "types": dict(sorted(types.items())),
                "groups": preview.get("groups", []) if preview["rendered"] else None,
                "preview_detail": preview["detail"],
                "urdf": Path(row["urdf_path"]).name,
                "mjcf": "object.xml" if "object.xml" in names else None,
                "usd": "object.usda" if "object.usda" in names else None,
                "meshes": sorted(
                    n for n in names if n.split("/")[0] != PREVIEW_FOLDER and n not in MODEL_FILES
                ),
                "links": sorted(links_of[oid]),
                "joints": joints_of[oid],
            }
        )
    counts = info["counts"]
    return {
        "version": info["version"],
        "moving_joints": counts["moving_joints"],
        "supercategories": sorted({o["supercategory"] for o in out}),
        "categories": sorted({o["category"] for o in out}),
        "joint_types": sorted({t for o in out for t in o["types"]}),
        "statuses": sorted({o["status"] for o in out}),
        "objects": out,
    }


def write_browser(root: Path, data: dict) -> None:
    """Write index.html and browser/data.js into the release folder `root`."""
    root = Path(root)
    (root / DATA).parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, separators=(",", ":"), sort_keys=True, allow_nan=False)
    (root / DATA).write_text(DATA_PREFIX + text + ";\n", encoding="utf-8")
    page = resources.files("previews").joinpath("static", INDEX).read_text(encoding="utf-8")
    (root / INDEX).write_text(page, encoding="utf-8")


def read_data(root: Path) -> dict:
    """The data a release's browser shows (the inverse of `write_browser`)."""
    text = (Path(root) / DATA).read_text(encoding="utf-8")
    return json.loads(text.removeprefix(DATA_PREFIX).rstrip().removesuffix(";"))
