"""The dataset card (README.md of a release) and LICENSES.md, through `huggingface_hub`.

The card's metadata is a `DatasetCardData`: license (the sources' SPDX identifiers when every
source gives one, else `other` with a link to LICENSES.md), task category, tags, size category,
`source_datasets` (one name per source library), an access request (`extra_gated_prompt`) when a
source is non-commercial, and the `configs` that `datasets.load_dataset(<release>)` reads:
`objects` (the default, one Parquet file per split under `data/objects/`, with an Image
thumbnail) and one config per other table, with rows or not (an empty table loads with
`streaming=True`). A split without objects is left out of `objects` (the `datasets` library
refuses to load a split without rows) and the card says so. The body holds counts, the paper and
project page, uses and out-of-scope uses, sources and their licenses (a note for non-commercial
ones), the verification summary, splits, the statistics, a "Dataset structure" section generated
from the manifests' schemas, what the checks do not prove, and the citations (the paper's and
every source's that declares one).
"""

from __future__ import annotations

import re
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


PAPER_URL = "https://arxiv.org/abs/2609.33931"
PROJECT_PAGE = "https://heyumeng.com/ArticulateArena-web/"
# A license that forbids commercial use: said in words, or with the NC element of Creative
# Commons licenses (CC-BY-NC-4.0, CC BY-NC-SA 4.0...).
_NON_COMMERCIAL = re.compile(r"non[- ]?commercial|\bNC\b", re.IGNORECASE)


#: The manifest's `loads_in` names as the card shows them, in the manifest's order.
LOADER_LABELS = {
    "mujoco": "MuJoCo (object.urdf)",
    "mujoco_mjcf": "MuJoCo (object.xml)",
    "pybullet": "PyBullet",
    "sapien": "SAPIEN",
    "yourdfpy": "yourdfpy",
    "usd": "USD read-back (usd-core)",
}


def loads_in_markdown(objects: list[dict]) -> list[str]:
    """How many accepted objects each loader loads (the objects' `loads_in`)."""
    if not objects:
        return []
    counts = Counter(name for o in objects for name in o.get("loads_in", ()))
    rows = [[label, f"{counts[name]}/{len(objects)}"] for name, label in LOADER_LABELS.items()]
    return [
        "Where the accepted objects load (`loads_in`; a loader that was not installed at build "
        "time counts none):",
        "",
        *_table(["loads in", "objects"], rows),
        "",
    ]


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


def non_commercial(source: dict) -> bool:
    """Whether a source's license, as stated or as its SPDX id, forbids commercial use."""
    return bool(_NON_COMMERCIAL.search(f"{source['license']} {source.get('spdx') or ''}"))


def source_datasets(sources: list[dict]) -> list[str]:
    """The card's `source_datasets`: one name per source library (sources sharing an upstream
    `url`, else `homepage`, are one library read in several formats: the first one's name)."""
    names: dict[str, str] = {}
    for s in sources:
        names.setdefault(s.get("url") or s.get("homepage") or s["name"], s["name"])
    return list(names.values())


def gated_access(sources: list[dict]) -> dict:
    """The access request the Hub shows when the dataset's repository is gated (an author's
    setting): agreeing to the non-commercial terms of those sources; nothing without one."""
    names = [s["name"] for s in sources if non_commercial(s)]
    if not names:
        return {}
    return {
        "extra_gated_prompt": (
            f"Objects from {', '.join(names)} are licensed for non-commercial use only (column "
            f"`license` of the objects table; {LICENSES_FILE}). Every other object keeps the "
            "license of its source."
        ),
        "extra_gated_fields": {
            "I agree to use objects of non-commercial sources for non-commercial purposes only": (
                "checkbox"
            )
        },
    }


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
        if non_commercial(s):
            lines.append("- non-commercial use only")
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


def links_markdown() -> list[str]:
    """The paper and the project page (the Hub links a card naming an arXiv paper to it)."""
    return [
        "## Links",
        "",
        f"- Paper: [ArticulateArena: A Metric for Articulated Kinematics]({PAPER_URL})",
        f"- Project page: <{PROJECT_PAGE}>",
        "- Source libraries: their upstream addresses and revisions are in "
        f"[{LICENSES_FILE}]({LICENSES_FILE}) and `release.json`.",
        "",
    ]


def licenses_section(sources: list[dict]) -> list[str]:
    """Every source's license in a table, and a note when some forbid commercial use."""
    rows = [
        [
            s["name"],
            s["license"].replace("|", "\\|"),
            s.get("spdx") or "not given",
            "**yes**" if non_commercial(s) else "no",
            s["accepted"],
        ]
        for s in sources
    ]
    lines = [
        "## Licenses",
        "",
        "Each object keeps the license of its source (column `license` of the objects table); "
        f"[{LICENSES_FILE}]({LICENSES_FILE}) gives each source's attribution.",
        "",
        *_table(["source", "license (as stated)", "SPDX", "non-commercial", "objects"], rows),
        "",
    ]
    restricted = [s for s in sources if non_commercial(s)]
    if restricted:
        names = ", ".join(f"`{s['name']}`" for s in restricted)
        n = sum(s["accepted"] for s in restricted)
        lines += [
            f"**Non-commercial sources.** The {n} objects of {names} are licensed for "
            "non-commercial use only. Leave them out for any other use, e.g. "
            "`objects.filter(lambda o: o['source'] not in {...})`. The card's metadata carries "
            "an access request (`extra_gated_prompt`) that the Hub shows when the dataset's "
            "repository is gated (Settings, access requests).",
            "",
        ]
    return lines


USES = """## Uses

### Direct use

- Evaluating methods that reconstruct or generate articulated objects: score their predicted
  kinematics against the `test` split or the `eval200` objects with the ArticulateArena metric
  (`arena score`, `arena distance`), which compares the motions joints induce, not their
  parameters.
- Training such methods on the `train` split: splits are drawn by duplicate cluster, so copies of
  one object shipped by several sources never straddle two splits.
- Simulation: every object is a URDF (and an MJCF) that loads in MuJoCo, PyBullet and yourdfpy,
  with meshes, masses and inertias, and a UsdPhysics articulation for Isaac Sim and Isaac Lab
  (`object.usda`, where `usd_path` is set; mimic couplings, helical joints included, are
  recorded there but not enforced).
- Statistics of articulated objects: joint types, categories and sources.

### Out-of-scope use

- Commercial use of the objects of non-commercial sources (see Licenses), or any use their
  source's license does not allow.
- Physical ground truth: geometry, masses and inertias are the sources' (or computed from the
  geometry where a source gives none, see `links.inertia_method`), not measurements of real
  objects; do not identify dynamics or deploy robots on them without checking.
- Statements about real-world objects: the mix of categories and sizes follows the source
  libraries, not the world.
- Categories as classification ground truth: they are assigned automatically
  (`category_method`, `category_confidence`); the doubtful ones are listed in `review`.
"""

LIMITATIONS = """## Limitations: what the checks do not prove

Every accepted object passed the error checks of verification (the pipeline's
docs/verification.md; the warning checks it failed are in `warnings`). They prove less than "the
object is right":

- The metric checks prove that normalization kept the motion the pipeline read from the source
  (self-distance zero to rounding in two norms); a joint axis, origin or limit that is wrong
  upstream ships as the source has it.
- The fidelity checks compare the shipped file with a second reader of the source (yourdfpy for
  URDF, MuJoCo for MJCF, Drake for SDF when installed: frames, limits and masses, not shapes;
  without Drake, plausibility only). Two readers agreeing is evidence, not proof.
- Attachment (parts floating or leaving their housing) and collision (parts passing through each
  other) are sampled heuristics with tolerances of 5 % of the object's largest extent (at least
  5 mm): they warn and send objects to review, they never refuse one, and they do not see parts
  touching at rest, a part wholly inside another or an intersection under the tolerance.
- The simulator checks load each file in MuJoCo, PyBullet and yourdfpy and compare forward
  kinematics at a few configurations, and read `object.usda` back with usd-core (links, joints,
  limits, rest poses, masses); they do not simulate dynamics or contacts, nor run Isaac Sim or
  other simulators.
- Masses and inertias the pipeline computed (where a source gives none) are a model of solid or
  walled parts, checked for plausibility only.
- Duplicates are found among copies turned about the vertical axis and scaled by a unit factor;
  other copies stay separate objects.
- Licenses are those the sources file states; the pipeline does not check them upstream.
"""


def citation_markdown(sources: list[dict]) -> list[str]:
    """The suite's paper, then every citation a source declares (once each)."""
    lines = ["## Citation", "", "```bibtex", CITATION, "```", ""]
    cited: dict[str, list[str]] = {}
    for s in sources:
        if s.get("citation"):
            cited.setdefault(s["citation"].strip(), []).append(s["name"])
    if cited:
        lines += ["The objects come from these libraries; please cite them too:", ""]
        for text, names in cited.items():
            lines += [", ".join(f"`{n}`" for n in names) + ":", "", "```bibtex", text, "```", ""]
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


#: What `card_markdown` counts of an objects row.
README_COLUMNS = ("split", "warnings", "loads_in")


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
        source_datasets=source_datasets(info["sources"]),
        configs=configs(by_split),
        **gated_access(info["sources"]),
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
        *links_markdown(),
        USES,
        "## Sources",
        "",
        *_table(
            ["source", "format", "upstream", "discovered", "accepted", "rejected"],
            [
                [
                    s["name"],
                    s["format"],
                    s.get("url") or s.get("homepage") or "not given",
                    *(s[k] for k in ("discovered", "accepted", "rejected")),
                ]
                for s in info["sources"]
            ],
        ),
        "",
        *licenses_section(info["sources"]),
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
    lines += loads_in_markdown(objects)
    if warnings:
        lines += ["Most frequent warnings:", ""]
        lines += _table(["check", "objects"], warnings.most_common(10)) + [""]
    if codes:
        lines += ["Most frequent reasons for refusal:", ""]
        lines += _table(["code", "candidates"], codes.most_common(10)) + [""]
    lines += [
        "## Splits and evaluation set",
        "",
        "`split` is a stable hash of `cluster_id` (80/10/10), so an object keeps its split across "
        "releases and the copies of one object share it. "
        f"`eval200` marks {counts['eval200']} objects covering every supercategory and "
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
        LIMITATIONS,
        *citation_markdown(info["sources"]),
    ]
    card = DatasetCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(lines))
    return str(card)
