"""Release assembly: from the outcomes of every object to the release files.

`assemble_release` writes, into the staging folder (whose `objects/` the batches filled): the
Parquet manifests with split and eval200, the objects of each split under `data/objects/`, the
statistics plots and the previews gallery, release.json, CHANGELOG.md, the dataset card
README.md, LICENSES.md, the release browser (index.html and browser/) and
checksums.sha256. `runs` are the build's per-source results (source, discovered ids, outcomes:
see `pipeline.chain` for an outcome's fields).

The outcomes stay in their files: the assembly keeps a duplicate-stage record per object and
the objects table's rows as Arrow columns, and reads an object's outcome back whenever it needs
the rest (its snapshot files, its other manifest rows and browser page, its file digests for
the content hash and checksums.sha256), so the build process does not grow with every object's
rows.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from duplicates import (
    DuplicateResult,
    DuplicateSettings,
    ObjectRecord,
    find_duplicates,
    record_from_rows,
)
from duplicates.report import card_section as duplicates_section
from duplicates.report import counts as duplicate_counts
from export import card, manifests, release
from export.digests import canonical_json
from export.manifest_writer import RowBatches, TableWriter
from export.selection import SPLITS, assign_splits
from normalize.collision_parts import parts_method
from normalize.safe_yaml import load_yaml
from normalize.sources import PROVENANCE_KEYS
from previews.browser import BrowserWriter, browser_head, object_entry
from previews.card import CARD_COLUMNS, CARD_PREVIEW, card_section
from taxonomy import UNASSIGNED_SUPERCATEGORY

SOURCES_FILE = "sources.yaml"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _relative_to_source(run, path: str) -> str:
    root = str(run.source.path) + os.sep
    relative = path[len(root) :] if path.startswith(root) else os.path.relpath(path, root)
    return relative.replace(os.sep, "/")


def _shippable_reject(reject: dict, source, staging: Path) -> dict:
    """A rejects row without the build machine's paths: its file relative to the source root
    (`..` where it lies outside); in its message and element every source or package root and
    the staging folder written as `<source>/`, `<package root>/` and `<release>/`, and any other
    absolute path relative to the source root (`<source>/../elsewhere.obj`)."""
    names = [(str(source.path), "<source>")]
    names += [(str(root), "<package root>") for root in source.package_roots]
    names.append((str(Path(staging).absolute()), "<release>"))
    path = reject["path"]
    if path is not None and os.path.isabs(path):
        path = os.path.relpath(path, source.path).replace(os.sep, "/")
    return {
        **reject,
        "message": _shippable_text(reject["message"], names, source.path),
        "path": path,
        "element": _shippable_text(reject["element"], names, source.path),
    }


# An absolute path in a message: "/" at the start of a word (not inside "a/b", "<source>/",
# "https://"), up to a blank, a quote or a bracket.
_ABSOLUTE_PATH = re.compile(r"(?<![\w.~<>/:-])/[^\s'\"`,;()\[\]{}<>]+")


def _shippable_text(text: str | None, names: list[tuple[str, str]], root: Path) -> str | None:
    if text is None:
        return None
    for folder, name in sorted(names, key=lambda n: -len(n[0])):
        text = text.replace(folder + os.sep, name + "/").replace(folder, name)
    return _ABSOLUTE_PATH.sub(
        lambda m: "<source>/" + os.path.relpath(m.group(), root).replace(os.sep, "/"), text
    )


def _source_files(run, outcome) -> list[dict]:
    """source_files rows of an accepted object: every file it read, with the digest the build
    computed (inputs that were missing or led out of the root have no digest and no row)."""
    return [
        {"object_id": outcome.object_id, "path": _relative_to_source(run, p), "sha256": d}
        for p, d in outcome.inputs.items()
        if _SHA256.match(d)
    ]


def _write_sources_file(staging: Path, runs: list, sources_file: Path | None) -> None:
    """The sources file of the release: the build's own, as it is, unless it names folders by
    absolute paths of the build machine; those (and the sources of a build without a file) are
    written relative to the file's folder (else to the sources' common folder)."""
    if sources_file is not None:
        data = load_yaml(sources_file)
        if not any(os.path.isabs(p) for s in data["sources"] for p in _source_folders(s)):
            shutil.copyfile(sources_file, staging / SOURCES_FILE)
            return
        base = Path(sources_file).resolve().parent
    else:
        data = {"sources": [run.source.as_dict() for run in runs]}
        base = Path(os.path.commonpath([str(run.source.path) for run in runs])) if runs else None
    for source in data["sources"]:
        source["path"] = _relative_folder(source["path"], base)
        if source.get("package_roots"):
            source["package_roots"] = [_relative_folder(p, base) for p in source["package_roots"]]
    (staging / SOURCES_FILE).write_text(yaml.safe_dump(data, sort_keys=False))


def _source_folders(source: dict) -> list[str]:
    return [str(source["path"]), *map(str, source.get("package_roots") or ())]


def _relative_folder(folder, base: Path | None) -> str:
    folder = str(folder)
    if base is None or not os.path.isabs(folder):
        return folder
    return os.path.relpath(folder, base).replace(os.sep, "/")


def _snapshot(run, where: dict[str, int]) -> str:
    """sha256 over the source config (without its local path), its candidates, and the
    content of every file they read: the canonical JSON of {"config": ..., "objects": {source
    id: `_read_files`}}, hashed as it is written out, one outcome read back at a time (`where`:
    source id -> the position of its outcome)."""
    config = {k: v for k, v in run.source.as_dict().items() if k not in ("path", "package_roots")}
    listing = hashlib.sha256(b'{"config":' + canonical_json(config) + b',"objects":{')
    for number, source_id in enumerate(sorted(where)):
        read = _read_files(run, run.outcomes.at(where[source_id]))
        comma = b"," if number else b""
        listing.update(comma + canonical_json(source_id) + b":" + canonical_json(read))
    listing.update(b"}}")
    return listing.hexdigest()


def _read_files(run, outcome) -> list[tuple[str, str]]:
    return sorted((_relative_to_source(run, p), d) for p, d in outcome.inputs.items())


@dataclass
class _Decided:
    """What the assembly keeps of one candidate between its passes over the outcomes, which it
    reads back from the sources' outcome files when it needs more (`at`): where its outcome is,
    what the card reads of its preview (CARD_PREVIEW) and its rejects row."""

    object_id: str
    source_number: int
    position: int
    source: str
    source_id: str
    source_path: str | None
    accepted: bool
    preview: dict | None  # CARD_PREVIEW of the outcome's "preview" entry (accepted)
    reject: dict | None  # its rejects row (rejected)

    def moved_out(self, canonical: str) -> _Decided:
        """The object moved out as a duplicate: a rejection naming the canonical id."""
        reject = manifests.reject_row(
            object_id=self.object_id,
            source=self.source,
            source_id=self.source_id,
            source_path=self.source_path,
            stage="duplicates",
            code="duplicate.of",
            message=f"the same object as {canonical} (canonical member of its duplicate cluster)",
            element=canonical,
        )
        return replace(self, accepted=False, preview=None, reject=reject)


#: The objects table's columns that the assembly adds after the duplicate stage.
ADDED_COLUMNS = ("split", "eval200", "cluster_id", "is_canonical")
_ROW_SCHEMA = pa.schema([f for f in manifests.SCHEMAS["objects"] if f.name not in ADDED_COLUMNS])


def _card_preview(preview: dict | None) -> dict | None:
    return preview and {key: preview[key] for key in CARD_PREVIEW if key in preview}


def _decide(
    runs: list, staging: Path
) -> tuple[list[_Decided], RowBatches, list[ObjectRecord], list[str]]:
    """Every candidate's `_Decided`, in the order of the sources and their outcome files; the
    accepted objects' rows of the objects table, without ADDED_COLUMNS; the duplicate stage's
    record of each accepted object; each source's snapshot digest (`_snapshot`)."""
    decided, records, snapshots = [], [], []
    rows = RowBatches(_ROW_SCHEMA)
    for number, run in enumerate(runs):
        where = {}
        for position, o in run.outcomes.positions():
            where[o.source_id] = position
            decided.append(
                _Decided(
                    o.object_id,
                    number,
                    position,
                    o.source,
                    o.source_id,
                    o.source_path,
                    o.accepted,
                    _card_preview(o.preview) if o.accepted else None,
                    o.reject,
                )
            )
            if o.accepted:
                folder = staging / "objects" / o.object_id
                row, joints = o.rows["objects"][0], o.rows["joints"]
                rows.add(row)
                records.append(record_from_rows(row, joints, o.files, folder))
        snapshots.append(_snapshot(run, where))
    return decided, rows, records, snapshots


#: The objects table's columns that `assign_splits` reads.
_SELECTION_COLUMNS = ("object_id", "category", "supercategory", "status", "n_joints")


def _objects_table(rows: pa.Table, accepted: list[_Decided], found: DuplicateResult) -> pa.Table:
    """The objects table: the rows of the `accepted` objects (the duplicate stage moved the others
    out) sorted by object_id, with their cluster, split and eval200 (`assign_splits`)."""
    kept = pa.array(sorted(d.object_id for d in accepted), pa.string())
    rows = rows.filter(pc.is_in(rows["object_id"], value_set=kept)).sort_by("object_id")
    chosen = assign_splits(
        [
            {
                **r,
                "cluster_id": found.cluster_of[r["object_id"]],
                "is_canonical": found.is_canonical(r["object_id"]),
            }
            for r in rows.select(list(_SELECTION_COLUMNS)).to_pylist()
        ],
        last={UNASSIGNED_SUPERCATEGORY},
    )
    schema = manifests.SCHEMAS["objects"]
    columns = [
        rows[name] if name in rows.column_names else [r[name] for r in chosen]
        for name in schema.names
    ]
    return pa.Table.from_arrays(columns, schema=schema).combine_chunks()


def _rows(table: pa.Table, columns: tuple[str, ...] | None = None):
    """The rows of `table` (only `columns`, if given) as dicts, a batch at a time."""
    table = table if columns is None else table.select(list(columns))
    for batch in table.to_batches(max_chunksize=TableWriter.BATCH_ROWS):
        yield from batch.to_pylist()


class _ObjectFileDigests:
    """The digests the build computed of the files in the object folders: `get` of
    "objects/<id>/<file>" reads that object's outcome back, once for all the files of its
    folder when they are asked for one after another (as `release.sorted_files` lists them)."""

    def __init__(self, runs: list, decided: list[_Decided]):
        self.runs = runs
        self.where = {d.object_id: d for d in decided if d.accepted}
        self.object_id, self.files = None, {}

    def get(self, name: str) -> str | None:
        top, _, rest = name.partition("/")
        object_id, _, file = rest.partition("/")
        if top != "objects" or object_id not in self.where:
            return None
        if object_id != self.object_id:
            d = self.where[object_id]
            self.object_id = object_id
            self.files = self.runs[d.source_number].outcomes.at(d.position).files
        return self.files.get(file)


def assemble_release(
    staging: Path,
    runs: list,
    version: str,
    previous: Path | None,
    versions: dict[str, str],
    sources_file: Path | None = None,
    duplicates: DuplicateSettings | None = None,
    seconds: dict | None = None,
    cache=None,
    pair_runner=None,
) -> tuple[dict, str]:
    """Write manifests, plots, release.json, CHANGELOG.md, README.md, LICENSES.md, the
    sources file and checksums.sha256 into the staging folder (everything but the object
    folders, which the batches wrote); returns (release.json's content, the content hash).
    `runs`: the build's `pipeline.build.SourceRun`s, their outcomes in files
    (`export.outcome.OutcomeFile`), read back one object at a time: the build process keeps
    the objects table's rows as Arrow columns and writes the other manifests as it reads.
    `sources_file`: the sources file of the build, copied as it is (without one, the sources'
    settings are written as YAML). `duplicates`: the duplicate stage's settings (default: keep
    and flag, sources in the order of `runs`); `seconds` receives the stage's wall time under
    "duplicates"; `cache`: the build's result store (`pipeline.cache.ResultStore`), which keeps
    the duplicate stage's pair evidence and the plots (None: measure every pair and draw every
    plot); `pair_runner`: where the duplicate stage measures many pairs
    (`duplicates.stage.JobRunner`; None: the stage's own processes)."""
    if duplicates is None:
        duplicates = DuplicateSettings(priority=tuple(run.source.name for run in runs))
    decided, rows, records, snapshots = _decide(runs, staging)
    started = time.perf_counter()
    found = find_duplicates(records, duplicates, cache, pair_runner)
    if seconds is not None:
        seconds["duplicates"] = time.perf_counter() - started
    del records  # their joint rows are not needed any more
    decided = [
        d.moved_out(found.moved_out[d.object_id]) if d.object_id in found.moved_out else d
        for d in decided
    ]
    accepted = [d for d in decided if d.accepted]
    rejects = [
        _shippable_reject(d.reject, runs[d.source_number].source, staging)
        for d in decided
        if not d.accepted
    ]

    objects = _objects_table(rows.table(), accepted, found)
    del rows

    # Object folders that no accepted outcome claims (none expected) do not enter the release.
    claimed = {d.object_id for d in accepted}
    for folder in (staging / "objects").iterdir():
        if folder.name not in claimed:
            shutil.rmtree(folder)

    (staging / "manifest").mkdir()
    arrow = {
        "objects": objects,
        "rejects": manifests.to_table("rejects", rejects),
        "duplicates": manifests.to_table("duplicates", found.rows),
    }
    for name, table in arrow.items():
        manifests.write_table(table, staging / "manifest" / f"{name}.parquet")
    browser = BrowserWriter(staging)
    counts, joint_types = _write_object_rows(staging, runs, accepted, objects, browser)
    _write_splits(arrow["objects"], staging)
    release.pause_point("assemble")
    digests = _ObjectFileDigests(runs, accepted)
    content = release.content_hash(staging, digests)

    stats_md = _statistics(arrow, staging, cache) + duplicates_section(found.rows)
    previews_md = card_section(
        staging, list(_rows(objects, CARD_COLUMNS)), {d.object_id: d.preview for d in accepted}
    )
    previous_info = release.read_release(previous) if previous else None
    previous_objects = release.read_objects(previous) if previous else None
    gathered = _Gathered(snapshots, decided, objects, rejects, counts, joint_types, found)
    info = release.write_release_json(
        staging, _release_info(runs, gathered, version, versions, content, previous_info)
    )
    (staging / "CHANGELOG.md").write_text(
        release.changelog_markdown(
            version,
            list(_rows(objects, release.PREVIOUS_COLUMNS)),
            previous_objects,
            previous_info["version"] if previous_info else None,
        ),
        encoding="utf-8",
    )
    counts.update(objects=objects.num_rows, rejects=len(rejects), duplicates=len(found.rows))
    (staging / "README.md").write_text(
        card.card_markdown(
            info,
            list(_rows(objects, card.README_COLUMNS)),
            rejects,
            stats_md,
            {name: counts[name] for name in manifests.TABLES},
            previews_md,
        ),
        encoding="utf-8",
    )
    (staging / card.LICENSES_FILE).write_text(card.licenses_markdown(info), encoding="utf-8")
    _write_sources_file(staging, runs, sources_file)
    browser.finish(browser_head(info, rejects))
    release.write_checksums(staging, digests)
    return info, content


#: The manifests written one object at a time (`_write_object_rows`).
OBJECT_ROWS = ("joints", "links", "review", "source_files")


def _write_object_rows(
    staging: Path, runs: list, accepted: list, objects: pa.Table, browser: BrowserWriter
) -> tuple[dict[str, int], Counter]:
    """The joints, links, review and source_files manifests and the browser's objects, one
    accepted object at a time in object_id order, each read back from its outcome. Returns
    each manifest's row count and the joints counted by type."""
    writers = {
        name: TableWriter(name, staging / "manifest" / f"{name}.parquet") for name in OBJECT_ROWS
    }
    joint_types = Counter()
    ordered = sorted(accepted, key=lambda d: d.object_id)
    for d, row in zip(ordered, _rows(objects), strict=True):  # both in object_id order
        run = runs[d.source_number]
        o = run.outcomes.at(d.position)
        rows = {name: o.rows.get(name, []) for name in ("joints", "links", "review")}
        rows["source_files"] = _source_files(run, o)
        for name, writer in writers.items():
            writer.add(rows[name])
        joint_types.update(j["type"] for j in rows["joints"])
        review = rows["review"][-1] if rows["review"] else None
        browser.add(
            object_entry(
                row,
                o.preview,
                rows["joints"],
                rows["links"],
                rows["source_files"],
                review,
                list(o.files),
            )
        )
    for writer in writers.values():
        writer.close()
    return {name: writer.count for name, writer in writers.items()}, joint_types


#: Objects per row group of a split file: their thumbnails are read for one group at a time.
SPLIT_ROWS = 100


def _write_splits(objects, staging: Path) -> None:
    """The objects of each split as their own Parquet file (the card's default config), with
    their thumbnails, for every split that has objects, in row groups of SPLIT_ROWS objects."""
    for split in SPLITS:
        rows = objects.filter(pc.equal(objects["split"], split))
        if rows.num_rows:
            path = staging / card.split_path(split)
            path.parent.mkdir(parents=True, exist_ok=True)
            with pq.ParquetWriter(
                str(path), manifests.SPLIT_SCHEMA, **manifests.PARQUET_SETTINGS
            ) as writer:
                for start in range(0, rows.num_rows, SPLIT_ROWS):
                    group = manifests.with_thumbnails(rows.slice(start, SPLIT_ROWS), staging)
                    writer.write_table(group, row_group_size=SPLIT_ROWS)


def _statistics(arrow: dict, staging: Path, cache) -> str:
    """The taxonomy stage's statistics: plots/*.png (kept in `cache`, if any) and their
    markdown for the card."""
    from taxonomy import write_release_statistics

    objects = arrow["objects"].select(["object_id", "category", "supercategory", "source"])
    joints = pq.read_table(staging / "manifest" / "joints.parquet", columns=["object_id", "type"])
    return write_release_statistics(
        objects.to_pandas(), joints.to_pandas(), staging / "plots", cache
    )


@dataclass
class _Gathered:
    """What release.json counts, as the assembly gathered it: each source's snapshot, every
    candidate's `_Decided`, the objects table, the rejects rows, the row counts of the manifests
    written object by object and their joints by type, the duplicate stage's result."""

    snapshots: list[str]
    decided: list[_Decided]
    objects: pa.Table
    rejects: list[dict]
    counts: dict[str, int]
    joint_types: Counter
    found: DuplicateResult


def _release_info(runs, gathered: _Gathered, version, versions, content, previous_info) -> dict:
    rejects, counts = gathered.rejects, gathered.counts
    objects = list(_rows(gathered.objects, ("eval200", "supercategory", "status", "split")))
    accepted = Counter(d.source_number for d in gathered.decided if d.accepted)
    candidates = Counter(d.source_number for d in gathered.decided)
    sources = []
    for number, (run, snapshot) in enumerate(zip(runs, gathered.snapshots, strict=True)):
        sources.append(
            {
                "name": run.source.name,
                "format": run.source.format,
                "license": run.source.license,
                **{key: getattr(run.source, key) for key in PROVENANCE_KEYS},
                "snapshot_sha256": snapshot,
                "discovered": len(run.discovered),
                "accepted": accepted[number],
                "rejected": candidates[number] - accepted[number],
                "skipped": run.skipped,
            }
        )
    return {
        "format": release.RELEASE_FORMAT,
        "version": version,
        "pipeline_version": versions["pipeline"],
        "code_fingerprint": versions["code"],
        "convention_version": versions["convention"],
        "taxonomy_version": versions["taxonomy"],
        "collision_parts": parts_method(),
        "sources": sources,
        "counts": {
            "discovered": sum(s["discovered"] for s in sources),
            "accepted": len(objects),
            "rejected": len(rejects),
            "joints": counts["joints"],
            "moving_joints": counts["joints"] - gathered.joint_types["fixed"],
            "links": counts["links"],
            "eval200": sum(o["eval200"] for o in objects),
            "needs_review": counts["review"],
            "by_supercategory": dict(sorted(Counter(o["supercategory"] for o in objects).items())),
            "by_joint_type": dict(sorted(gathered.joint_types.items())),
            "by_status": dict(sorted(Counter(o["status"] for o in objects).items())),
            "by_split": dict(sorted(Counter(o["split"] for o in objects).items())),
            "rejects_by_stage": dict(sorted(Counter(r["stage"] for r in rejects).items())),
            "rejects_by_code": dict(Counter(r["code"] for r in rejects).most_common()),
            "duplicates": duplicate_counts(gathered.found.rows),
        },
        "previous": (
            {"version": previous_info["version"], "content_hash": previous_info["content_hash"]}
            if previous_info
            else None
        ),
        "content_hash": content,
    }
