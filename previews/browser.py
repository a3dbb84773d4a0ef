"""The release browser: `index.html` at the release root, static and self-contained.

One page (inline style and script, nothing fetched from the network) and its data as scripts,
because browsers refuse `fetch()` of a file next to a page opened from `file://`, while a
`<script src>` loads from `file://` and from any static host alike:

- `browser/data.js` (`window.ARENA_BROWSER = {...};`): every decided object, what the list,
  its filters and sorting need: accepted objects (review items among them) and rejects (code,
  message, files relative to the source root), and per source its license and upstream.
- `browser/details/<k>.js` (`window.ARENA_DETAILS({...});`): what an object's page adds (joint
  groups of its previews, kinematic tree, files (URDF, MJCF, USD, meshes), source files with
  their sha256, its review item), for the accepted objects `k * CHUNK` to `(k + 1) * CHUNK - 1`
  of data.js; the page loads one when it opens an object, so data.js stays small for 20,000
  objects with hundreds of source files each.

The page lists the objects with their thumbnails (lazy-loaded, 200 rows at a time); filters by
status (accepted, review, rejected, all), supercategory, category, joint type, checks, source,
split, eval200, license, where it loads (`loads_in`) and id; sorts by id, moving joints or size;
keeps all of it and the object shown in the URL hash (`#status=all&sort=-joints&object=<id>`).
An object's page also says where it loads.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from importlib import resources
from pathlib import Path

from previews import PREVIEW_FOLDER

INDEX = "index.html"
DATA = "browser/data.js"
DATA_PREFIX = "window.ARENA_BROWSER = "
DETAILS = "browser/details"
DETAILS_PREFIX = "window.ARENA_DETAILS("
#: Accepted objects per details file.
CHUNK = 100

# A repository's home page on a forge whose tree at a revision has a known address.
_FORGE = re.compile(r"^(https://(?:github\.com|gitlab\.com)/[^/?#]+/[^/?#]+?)(?:\.git)?/?$")
MODEL_FILES = ("object.urdf", "object.xml", "object.usda")  # linked by name, not with the meshes


def _limit(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None  # JSON has no infinity


def revision_link(url: str | None, revision: str | None) -> str | None:
    """Where a person sees the source at its revision: the tree at `revision` for a GitHub or
    GitLab repository, else `url` itself; None for no URL or one that is not http(s)."""
    if not url or not re.match(r"^https?://", url):
        return None
    forge = _FORGE.match(url)
    if forge and revision:
        tree = "/-/tree/" if "gitlab.com" in url else "/tree/"
        return forge.group(1) + tree + revision
    return url


def _sources(info: dict) -> dict:
    return {
        s["name"]: {
            "license": s["license"],
            "spdx": s.get("spdx"),
            "url": s.get("url"),
            "revision": s.get("revision"),
            "link": revision_link(s.get("url"), s.get("revision")),
        }
        for s in info["sources"]
    }


def browser_data(
    info: dict,
    tables: dict[str, list[dict]],
    previews: dict[str, dict | None],
    files: dict[str, list[str]],
) -> dict:
    """The browser's data. `info`: release.json's content; `tables`: manifest rows by table
    (objects, joints, links, rejects, review, source_files); `previews`: object_id -> the
    outcome's "preview" entry; `files`: object_id -> the files of its folder. Each accepted
    object's page data is under its "details" (write_browser puts it in the details files)."""
    joints_of, links_of, sources_of = defaultdict(list), defaultdict(list), defaultdict(list)
    for j in sorted(tables["joints"], key=lambda j: (j["object_id"], j["joint_index"])):
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
    for link in tables["links"]:
        links_of[link["object_id"]].append(link["link_name"])
    for row in sorted(tables["source_files"], key=lambda r: (r["object_id"], r["path"])):
        sources_of[row["object_id"]].append([row["path"], row["sha256"]])
    review = {r["object_id"]: r for r in tables["review"]}
    objects = []
    for row in sorted(tables["objects"], key=lambda r: r["object_id"]):
        oid = row["object_id"]
        preview = previews.get(oid) or {"rendered": False, "detail": "not recorded"}
        names = files.get(oid, [])
        types = Counter(j[1] for j in joints_of[oid] if j[1] != "fixed")
        details = {
            "source_id": row["source_id"],
            "source_path": row["source_path"],
            "source_files": sources_of[oid],
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
        entry = {
            "id": oid,
            "category": row["category"],
            "supercategory": row["supercategory"],
            "source": row["source"],
            "status": row["status"],
            "warnings": list(row["warnings"]),
            "loads_in": list(row["loads_in"]),
            "types": dict(sorted(types.items())),
            "bytes": row["total_bytes"],
            "split": row["split"],
            "eval200": row["eval200"],
            "preview": preview["rendered"],
            "details": details,
        }
        if oid in review:
            item = review[oid]
            entry["review"] = item["reason"]
            details["review"] = {
                "method": item["method"],
                "confidence": item["confidence"],
                "candidates": [[c["category"], c["score"]] for c in item["candidates"]],
                "evidence": list(item["evidence"]),
            }
        objects.append(entry)
    rejects = [
        {
            "id": r["object_id"],
            "source": r["source"],
            "source_id": r["source_id"],
            "source_path": r["source_path"],
            "stage": r["stage"],
            "code": r["code"],
            "message": r["message"],
            "path": r["path"],
            "element": r["element"],
        }
        for r in sorted(tables["rejects"], key=lambda r: r["object_id"])
    ]
    return {
        "version": info["version"],
        "moving_joints": info["counts"]["moving_joints"],
        "sources": _sources(info),
        "objects": objects,
        "rejects": rejects,
    }


def _script(prefix: str, value, suffix: str) -> str:
    text = json.dumps(value, separators=(",", ":"), sort_keys=True, allow_nan=False)
    return prefix + text + suffix + "\n"


def write_browser(root: Path, data: dict) -> None:
    """Write index.html, browser/data.js and browser/details/ into the release folder `root`."""
    root = Path(root)
    (root / DETAILS).mkdir(parents=True, exist_ok=True)
    objects = data["objects"]
    for k, start in enumerate(range(0, len(objects), CHUNK)):
        part = {o["id"]: o["details"] for o in objects[start : start + CHUNK]}
        text = _script(DETAILS_PREFIX, {"chunk": k, "objects": part}, ");")
        (root / DETAILS / f"{k}.js").write_text(text, encoding="utf-8")
    listed = [{key: v for key, v in o.items() if key != "details"} for o in objects]
    text = _script(DATA_PREFIX, {**data, "objects": listed, "chunk": CHUNK}, ";")
    (root / DATA).write_text(text, encoding="utf-8")
    page = resources.files("previews").joinpath("static", INDEX).read_text(encoding="utf-8")
    (root / INDEX).write_text(page, encoding="utf-8")


def _read_script(path: Path, prefix: str, suffix: str):
    text = path.read_text(encoding="utf-8")
    return json.loads(text.removeprefix(prefix).rstrip().removesuffix(suffix))


def read_data(root: Path) -> dict:
    """The data a release's browser shows, details included (the inverse of `write_browser`)."""
    root = Path(root)
    data = _read_script(root / DATA, DATA_PREFIX, ";")
    chunk = data.pop("chunk")
    objects = data["objects"]
    for k in range(math.ceil(len(objects) / chunk)):
        part = _read_script(root / DETAILS / f"{k}.js", DETAILS_PREFIX, ");")["objects"]
        for o in objects[k * chunk : (k + 1) * chunk]:
            o["details"] = part[o["id"]]
    return data
