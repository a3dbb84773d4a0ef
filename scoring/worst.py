"""The worst objects of a method: its valid outputs with E_alpha^{phi,tree} > 0 ranked by it
(highest first, ties by object id), each with a link to its page in the release's browser
(`index.html#object=<id>`), relative to the folder the scores are written to."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from urllib.parse import quote

#: Objects listed per method.
WORST_OBJECTS = 20
#: Columns of a worst-objects table (CSV header), the scores being columns of scores.parquet.
COLUMNS = ("rank", "object_id", "supercategory", "category", "e_tree", "e_phi", "e_b_m", "link")


def browser_link(release: Path, out: Path, object_id: str) -> str:
    """The URL of the object's browser page, relative to `out` (where the report lies); a
    file:// URL when no relative path exists (another drive)."""
    index = Path(release).absolute() / "index.html"
    try:
        url = quote(Path(os.path.relpath(index, Path(out).absolute())).as_posix())
    except ValueError:
        url = index.as_uri()
    return f"{url}#object={quote(object_id, safe='')}"


def worst_objects(
    rows: list[dict], method: str, release: Path, out: Path, n: int = WORST_OBJECTS
) -> list[dict]:
    """The `n` valid outputs of `method` with the highest E_alpha^{phi,tree}, among those where
    it is above 0, as dicts of COLUMNS."""
    scored = [r for r in rows if r["method"] == method and r["gen"] and (r["e_tree"] or 0) > 0]
    scored.sort(key=lambda r: (-r["e_tree"], r["object_id"]))
    return [
        {
            "rank": rank,
            **{key: r[key] for key in COLUMNS[1:-1]},
            "link": browser_link(release, out, r["object_id"]),
        }
        for rank, r in enumerate(scored[:n], start=1)
    ]


def write_csv(path: Path, worst: list[dict]) -> None:
    """A worst-objects table as CSV (undefined scores empty, numbers at full precision)."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(worst)
