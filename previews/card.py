"""The dataset card's previews section: the gallery (one object per supercategory at rest and
at its limits, like the paper's Figure 3a), which objects have previews, and why the others not.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np

from previews import PREVIEW_FOLDER, SHEET_JSON
from previews.render import png_bytes

GALLERY = "gallery.png"  # under plots/
GALLERY_CELL = 128  # thumbnails halved
GALLERY_COLUMNS = 3  # objects per row


def gallery_objects(objects: list[dict]) -> list[dict]:
    """One object per supercategory (in name order) among those with previews: verified
    without warnings first, with moving joints, the most of them up to 6, then by object_id."""
    best: dict[str, dict] = {}
    for row in objects:
        if not row.get("preview_path"):
            continue
        rank = (row["status"] != "pass", row["n_joints"] == 0, -min(row["n_joints"], 6))
        key = (*rank, row["object_id"])
        held = best.get(row["supercategory"])
        if held is None or key < held[0]:
            best[row["supercategory"]] = (key, row)
    return [best[name][1] for name in sorted(best)]


def _views(folder: Path) -> tuple[dict, dict | None, dict | None]:
    """The rest view and the first group's lower and upper views (all joints at once when the
    object has several) of an object's previews.json."""
    document = json.loads((folder / SHEET_JSON).read_text(encoding="utf-8"))
    views = document["views"]
    rest = views[0]
    first = [v for v in views[1:] if v["group"] == views[1]["group"]] if len(views) > 1 else []
    by_end = {v["end"]: v for v in first}
    return rest, by_end.get("lower"), by_end.get("upper")


def write_gallery(root: Path, objects: list[dict], path: Path) -> list[dict]:
    """Write the gallery image to `path` from the previews under the release `root`; returns
    the objects shown (none: no image)."""
    from PIL import Image, ImageDraw, ImageFont

    chosen = gallery_objects(objects)
    if not chosen:
        return []
    font = ImageFont.load_default(size=12)
    cell, pad, label_h = GALLERY_CELL, 4, 30
    block_w = 3 * cell + 2 * pad
    rows = -(-len(chosen) // GALLERY_COLUMNS)
    width = GALLERY_COLUMNS * block_w + (GALLERY_COLUMNS + 1) * 3 * pad
    height = rows * (label_h + cell + 3 * pad) + pad
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    for i, row in enumerate(chosen):
        folder = root / Path(row["preview_path"]).parent
        x0 = 3 * pad + (i % GALLERY_COLUMNS) * (block_w + 3 * pad)
        y0 = pad + (i // GALLERY_COLUMNS) * (label_h + cell + 3 * pad)
        draw.text((x0, y0), row["supercategory"][:40], fill=(0, 0, 0), font=font)
        draw.text((x0, y0 + 14), row["category"][:48], fill=(90, 90, 90), font=font)
        rest, lower, upper = _views(folder)
        for k, view in enumerate((lower, rest, upper)):
            if view is None:
                continue
            with Image.open(folder / view["file"]) as thumbnail:
                small = thumbnail.convert("RGB").reduce(thumbnail.width // cell)
            x = x0 + k * (cell + pad)
            image.paste(small, (x, y0 + label_h))
            caption = view["end"]
            draw.text((x + 3, y0 + label_h + cell - 15), caption, fill=(90, 90, 90), font=font)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png_bytes(np.asarray(image)))
    return chosen


#: What `card_section` reads of a preview entry, and of an objects row (`write_gallery`).
CARD_PREVIEW = ("rendered", "detail", "meshes_left_out")
CARD_COLUMNS = ("object_id", "category", "supercategory", "status", "n_joints", "preview_path")


def card_section(root: Path, objects: list[dict], previews: dict[str, dict | None]) -> str:
    """Write plots/gallery.png under the release `root` and return the Markdown of the
    previews section. `objects`: the objects-table rows; `previews`: object_id -> the outcome's
    "preview" entry ({"rendered": bool, "detail": str}; `pipeline.chain`)."""
    entries = [
        previews.get(row["object_id"]) or {"rendered": False, "detail": "skipped: not recorded"}
        for row in objects
    ]
    rendered = [p for p in entries if p["rendered"]]
    missing = Counter(p["detail"] for p in entries if not p["rendered"])
    lines = ["## Previews", ""]
    if not objects:
        return "\n".join([*lines, "No objects.", ""])
    shown = write_gallery(root, objects, root / "plots" / GALLERY)
    if shown:
        lines += [
            "One object per supercategory at its lower limits, at rest and at its upper limits "
            "(every driving joint at once):",
            "",
            f"![Gallery: one object per supercategory](plots/{GALLERY})",
            "",
            "| supercategory | category | object |",
            "| --- | --- | --- |",
        ]
        for r in shown:
            link = f"[`{r['object_id']}`]({r['preview_path']})"
            lines.append(f"| {r['supercategory']} | {r['category']} | {link} |")
        lines.append("")
    if rendered:
        renderers = ", ".join(sorted({p["detail"] for p in rendered}))
        lines += [
            f"{len(rendered)} of {len(objects)} objects have previews, rendered offscreen from "
            f"the shipped file ({renderers}) under `objects/<object_id>/{PREVIEW_FOLDER}/`: "
            "`rest.png`, `<joint group>-lower.png` and `-upper.png` for every driving joint "
            "group, `sheet.png` (the contact sheet: lower | rest | upper) and `previews.json` "
            "(the pose of every view). The camera is the same for every object; moving parts "
            "are coloured by the joint that moves them.",
            "",
        ]
    partial = [p["meshes_left_out"] for p in rendered if p.get("meshes_left_out")]
    if partial:
        lines += [
            f"The previews of {len(partial)} objects leave out {sum(partial)} meshes that MuJoCo "
            "refuses for having fewer than 4 vertices (`geometry.mesh_degenerate` reports them; "
            "each object's `previews.json` names them).",
            "",
        ]
    if missing:
        lines += [
            f"Previews were not rendered for {sum(missing.values())} of {len(objects)} objects:",
            "",
            "| reason | objects |",
            "| --- | ---: |",
        ]
        lines += [f"| {reason} | {n} |" for reason, n in sorted(missing.items())]
        lines.append("")
    return "\n".join(lines)
