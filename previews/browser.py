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
from collections import Counter
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


def object_entry(
    row: dict,
    preview: dict | None,
    joints: list[dict],
    links: list[dict],
    source_files: list[dict],
    review: dict | None,
    files: list[str],
) -> dict:
    """The browser's entry of one accepted object, its page data under "details"
    (`BrowserWriter` puts it in a details file). `row`: its objects row (with split and
    eval200); `preview`: the outcome's "preview" entry; `joints`, `links`, `source_files`,
    `review`: its rows of those manifests (review None when it has none); `files`: the files of
    its folder."""
    preview = preview or {"rendered": False, "detail": "not recorded"}
    joint_entries = [
        [
            j["joint_name"],
            j["type"],
            j["parent"],
            j["child"],
            _limit(j["lower"]),
            _limit(j["upper"]),
            j["mimic_joint"],
        ]
        for j in sorted(joints, key=lambda j: j["joint_index"])
    ]
    types = Counter(j[1] for j in joint_entries if j[1] != "fixed")
    details = {
        "source_id": row["source_id"],
        "source_path": row["source_path"],
        "source_files": [[r["path"], r["sha256"]] for r in sorted(source_files, key=_path)],
        "groups": preview.get("groups", []) if preview["rendered"] else None,
        "preview_detail": preview["detail"],
        "urdf": Path(row["urdf_path"]).name,
        "mjcf": "object.xml" if "object.xml" in files else None,
        "usd": "object.usda" if "object.usda" in files else None,
        "meshes": sorted(
            n for n in files if n.split("/")[0] != PREVIEW_FOLDER and n not in MODEL_FILES
        ),
        "links": sorted(link["link_name"] for link in links),
        "joints": joint_entries,
    }
    entry = {
        "id": row["object_id"],
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
    if review is not None:
        entry["review"] = review["reason"]
        details["review"] = {
            "method": review["method"],
            "confidence": review["confidence"],
            "candidates": [[c["category"], c["score"]] for c in review["candidates"]],
            "evidence": list(review["evidence"]),
        }
    return entry


def _path(row: dict) -> str:
    return row["path"]


def browser_head(info: dict, rejects: list[dict]) -> dict:
    """What data.js holds beside the objects: the release's version, moving joints and
    sources (`info`: release.json's content) and the rejects (their manifest rows)."""
    return {
        "version": info["version"],
        "moving_joints": info["counts"]["moving_joints"],
        "sources": _sources(info),
        "rejects": [
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
            for r in sorted(rejects, key=lambda r: r["object_id"])
        ],
    }


def _json(value) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, allow_nan=False)


def _script(prefix: str, value, suffix: str) -> str:
    return prefix + _json(value) + suffix + "\n"


_LISTED = "<the listed objects>"


class BrowserWriter:
    """Writes the browser into the release folder `root` as the objects arrive (`add`, in
    object_id order): each CHUNK objects' details file at once, so that only the list stays in
    memory; `finish` writes data.js and index.html."""

    def __init__(self, root: Path):
        self.root = Path(root)
        (self.root / DETAILS).mkdir(parents=True, exist_ok=True)
        self.listed: list[str] = []  # each listed object as its JSON text, smaller than its dict
        self.details: dict[str, dict] = {}

    def add(self, entry: dict) -> None:
        """One object's entry (`object_entry`)."""
        self.details[entry["id"]] = entry["details"]
        self.listed.append(_json({key: v for key, v in entry.items() if key != "details"}))
        if len(self.details) == CHUNK:
            self._write_details()

    def _write_details(self) -> None:
        k = (len(self.listed) - 1) // CHUNK
        text = _script(DETAILS_PREFIX, {"chunk": k, "objects": self.details}, ");")
        (self.root / DETAILS / f"{k}.js").write_text(text, encoding="utf-8")
        self.details = {}

    def finish(self, head: dict) -> None:
        """data.js (`head`: `browser_head`, and the objects' list) and index.html."""
        if self.details:
            self._write_details()
        # the list goes in as the text it is kept as; only numbers sort before "objects", so
        # the placeholder's first occurrence is the list's place
        text = _script(DATA_PREFIX, {**head, "objects": _LISTED, "chunk": CHUNK}, ";")
        before, after = text.split(json.dumps(_LISTED), 1)
        with (self.root / DATA).open("w", encoding="utf-8") as f:
            f.write(before + "[")
            f.write(",".join(self.listed))
            f.write("]" + after)
        page = resources.files("previews").joinpath("static", INDEX).read_text(encoding="utf-8")
        (self.root / INDEX).write_text(page, encoding="utf-8")


def write_browser(root: Path, data: dict) -> None:
    """Write index.html, browser/data.js and browser/details/ into the release folder `root`
    from the whole of `data` (what `read_data` returns)."""
    writer = BrowserWriter(root)
    for entry in data["objects"]:
        writer.add(entry)
    writer.finish({key: v for key, v in data.items() if key != "objects"})


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
