"""The dataset card (README.md of a release) and LICENSES.md, through `huggingface_hub`.

The card's metadata is a `DatasetCardData`: license (the sources' SPDX identifiers when every
source gives one, else `other` with a link to LICENSES.md), task category, tags, size category
and the `configs` that `datasets.load_dataset(<release>)` reads: `objects` (the default, one
Parquet file per split under `data/objects/`) and one config per other table, with rows or not
(an empty table loads with `streaming=True`). A split without objects is left out of `objects`
(the `datasets` library refuses to load a split without rows) and the card says so. The body
holds counts, the verification summary, splits, the statistics, a "Dataset structure" section
generated from the manifests' schemas, and the paper's citation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from huggingface_hub import DatasetCard, DatasetCardData

from export.manifests import SCHEMAS, SPLIT_SCHEMA, TABLES
from export.selection import SPLITS

PRETTY_NAME = "ArticulateArena articulated objects"
LICENSES_FILE = "LICENSES.md"
TAGS = ["articulated-objects", "urdf", "robotics", "kinematics", "3d", "simulation"]
CITATION = """@article{he2026articulatearena,
  title   = {ArticulateArena: A Metric for Articulated Kinematics},
  author  = {He, Yumeng and She, Yongfei and Chen, Huanyu and Yuan, Chun and Li, Peihao and
             Masterjohn, Joseph and Yang, Yin and Jiang, Ying and Jiang, Chenfanfu},
  journal = {arXiv preprint arXiv:2609.33931},
  year    = {2026}
}"""


def split_path(split: str) -> str:
    """Where the objects of one split are written, relative to the release root."""
    return f"data/objects/{split}.parquet"


def size_category(n: int) -> str:
    """Hugging Face size category of a dataset of n objects."""
    bounds = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")]
    return next((label for bound, label in bounds if n < bound), "100K<n<1M")


def configs(rows_per_split: Mapping[str, int]) -> list[dict]:
    """The `configs` of the card: `objects` by split (the default; splits without objects are
    left out, since `datasets` refuses to load a split without rows), then every other table,
    with rows or not."""
    out = []
    splits = [s for s in SPLITS if rows_per_split.get(s, 0) > 0]
    if splits:
        out.append(
            {
                "config_name": "objects",
                "default": True,
                "data_files": [{"split": s, "path": split_path(s)} for s in splits],
            }
        )
    for table in TABLES:
        if table != "objects":
            out.append({"config_name": table, "data_files": f"manifest/{table}.parquet"})
    return out


def card_license(sources: list[dict]) -> dict:
    """License metadata: the SPDX identifiers (lower case, as the Hub spells them) when every
    source gives one, else `other` with a link to LICENSES.md."""
    ids = sorted({s["spdx"].lower() for s in sources if s.get("spdx")})
    if sources and all(s.get("spdx") for s in sources):
        return {"license": ids[0] if len(ids) == 1 else ids}
    return {"license": "other", "license_name": "per-source", "license_link": LICENSES_FILE}


def licenses_markdown(info: dict) -> str:
    """LICENSES.md: every source's license as stated, its SPDX identifier, and attribution."""
    lines = [
        "# Licenses",
        "",
        f"Release {info['version']} gathers objects from {len(info['sources'])} sources; each "
        "object keeps the license of its source (column `license` of `manifest/objects.parquet`).",
        "",
    ]
    for s in info["sources"]:
        lines += [f"## {s['name']}", "", f"- license (as stated): {s['license']}"]
        lines.append(f"- SPDX: {s['spdx']}" if s.get("spdx") else "- SPDX: not given")
        for key, label in (("homepage", "homepage"), ("url", "source"), ("revision", "revision")):
            if s.get(key):
                lines.append(f"- {label}: {s[key]}")
        if s.get("citation"):
            lines += ["- citation:", "", "```", s["citation"].strip(), "```"]
        lines.append("")
    return "\n".join(lines)


def _table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def _description(field) -> str:
    return field.metadata[b"description"].decode("utf-8").replace("|", "\\|")


def discovery_markdown(sources: list[dict]) -> list[str]:
    """What discovery skipped in each source (files that look like an entry but are no
    candidate), and the sources without any candidate; nothing when there is neither."""
    rows = [
        [s["name"], s["discovered"], reason, v["count"], ", ".join(v["examples"])]
        for s in sources
        for reason, v in s.get("skipped", {}).items()
    ]
    empty = [s["name"] for s in sources if s["discovered"] == 0]
    if not rows and not empty:
        return []
    lines = ["## Discovery", ""]
    if rows:
        lines += [
            "Files that look like an entry file but are not objects of the release "
            "(other_format: another format's suffix; not_selected: left out by the source's "
            "patterns; not_an_entry: included by another file or unused):",
            "",
            *_table(["source", "discovered", "skipped as", "files", "first files"], rows),
            "",
        ]
    if empty:
        lines += [
            "Sources without any candidate (allowed by `allow_empty`): " + ", ".join(empty) + ".",
            "",
        ]
    return lines


def structure_markdown(rows_per_table: Mapping[str, int]) -> list[str]:
    """The "Dataset structure" section: every table's columns, types and descriptions, from the
    manifests' schemas (the same text is in each Parquet field's metadata)."""
    lines = [
        "## Dataset structure",
        "",
        "Each table is a Parquet file in `manifest/`; the objects of each split are also in "
        "`data/objects/<split>.parquet` (the `objects` config). Each column's description is "
        "also in its Parquet field's metadata (`description`): "
        "`pyarrow.parquet.read_schema(path).field(name).metadata`.",
        "",
    ]
    for table in TABLES:
        schema = SCHEMAS[table]
        lines += [f"### {table} ({rows_per_table.get(table, 0)} rows)", ""]
        lines += _table(
            ["column", "type", "description"],
            [[f"`{f.name}`", f"`{f.type}`", _description(f)] for f in schema],
        )
        lines.append("")
        if table == "objects":
            added = [f for f in SPLIT_SCHEMA if f.name not in schema.names]
            lines += [
                "The split files of the `objects` config (`data/objects/<split>.parquet`) add:",
                "",
                *_table(
                    ["column", "type", "description"],
                    [[f"`{f.name}`", "`Image`", _description(f)] for f in added],
                ),
                "",
            ]
    return lines


def card_markdown(
    info: dict,
    objects: list[dict],
    rejects: list[dict],
    stats_md: str,
    rows_per_table: Mapping[str, int],
    previews_md: str = "",
) -> str:
    """README.md of the release (validated by huggingface_hub's DatasetCard); `previews_md` is
    the previews section (gallery, or why previews were skipped)."""
    by_split = Counter(o["split"] for o in objects)
    data = DatasetCardData(
        pretty_name=PRETTY_NAME,
        **card_license(info["sources"]),
        task_categories=["robotics"],
        tags=TAGS,
        size_categories=[size_category(len(objects))],
        configs=configs(by_split),
    )
    counts = info["counts"]
    empty = [t for t in TABLES if t != "objects" and rows_per_table.get(t, 0) == 0]
    left_out = [s for s in SPLITS if by_split.get(s, 0) == 0]
    lines = [
        f"# ArticulateArena release {info['version']}",
        "",
        f"{counts['accepted']} articulated objects ({counts['moving_joints']} moving joints) from "
        f"{len(info['sources'])} sources; {counts['rejected']} candidates were refused and are "
        "listed with their reasons in `manifest/rejects.parquet`. Every object is a URDF under "
        "`objects/<object_id>/` following convention "
        f"{info['convention_version']}; taxonomy {info['taxonomy_version']}. Each source keeps its "
        f"own license: see the table below and [{LICENSES_FILE}]({LICENSES_FILE}).",
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        'objects = load_dataset("path/to/release")            # train / validation / test',
        'joints = load_dataset("path/to/release", "joints")   # one config per table',
        "```",
        "",
        "The manifests open in any Parquet reader too, e.g. "
        '`pandas.read_parquet("manifest/objects.parquet")`, or in DuckDB '
        "`SELECT * FROM 'manifest/joints.parquet'`.",
        "",
    ]
    if empty:
        lines += [
            "Without rows in this release: "
            + ", ".join(f"`{t}`" for t in empty)
            + '. Their configs load with `streaming=True` (`load_dataset("path/to/release", '
            f'"{empty[0]}", streaming=True)`: no rows, every column typed); without streaming, '
            "`datasets` refuses a split without rows.",
            "",
        ]
    if left_out:
        lines += [
            "Splits without objects, left out of the `objects` config: "
            + ", ".join(f"`{s}`" for s in left_out)
            + ".",
            "",
        ]
    lines += [
        "## Sources",
        "",
        *_table(
            ["source", "format", "license", "discovered", "accepted", "rejected"],
            [
                [s[k] for k in ("name", "format", "license", "discovered", "accepted", "rejected")]
                for s in info["sources"]
            ],
        ),
        "",
        *discovery_markdown(info["sources"]),
        "## Verification",
        "",
    ]
    warnings = Counter(w for o in objects for w in o["warnings"])
    codes = Counter(r["code"] for r in rejects)
    lines += [
        *_table(["status", "objects"], sorted(counts["by_status"].items())),
        "",
        *_table(["refused at stage", "candidates"], sorted(counts["rejects_by_stage"].items())),
        "",
    ]
    if warnings:
        lines += ["Most frequent warnings:", ""]
        lines += _table(["check", "objects"], warnings.most_common(10)) + [""]
    if codes:
        lines += ["Most frequent reasons for refusal:", ""]
        lines += _table(["code", "candidates"], codes.most_common(10)) + [""]
    lines += [
        "## Splits and evaluation set",
        "",
        "`split` is a stable hash of `object_id` (80/10/10), so an object keeps its split across "
        f"releases. `eval200` marks {counts['eval200']} objects covering every supercategory and "
        "as many categories as possible.",
        "",
        *_table(["split", "objects"], [[s, by_split.get(s, 0)] for s in SPLITS]),
        "",
    ]
    if previews_md.strip():
        lines += [previews_md.strip(), ""]
    if stats_md.strip():
        lines += ["## Statistics", "", stats_md.strip(), ""]
    lines += structure_markdown(rows_per_table)
    lines += [
        "## Integrity",
        "",
        f"`checksums.sha256` lists every file; `release.json` holds `content_hash` "
        f"({info['content_hash']}), a hash over the manifests and object files only.",
        "",
        "## Citation",
        "",
        "```bibtex",
        CITATION,
        "```",
        "",
    ]
    card = DatasetCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(lines))
    return str(card)
