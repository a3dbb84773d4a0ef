"""Release assembly: from the outcomes of every object to the release files.

`assemble_release` writes, into the staging folder (whose `objects/` the batches filled): the
Parquet manifests with split and eval200, the objects of each split under `data/objects/`, the
statistics plots and the previews gallery, release.json, CHANGELOG.md, the dataset card
README.md, LICENSES.md, the release browser (index.html and browser/) and
checksums.sha256. `runs` are the build's per-source results (source, discovered ids, outcomes:
see `pipeline.chain` for an outcome's fields).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow.compute as pc
import yaml

from duplicates import DuplicateSettings, find_duplicates, record_from_rows
from duplicates.report import card_section as duplicates_section
from duplicates.report import counts as duplicate_counts
from export import card, manifests, release
from export.digests import canonical_json, sha256_file, sha256_hex
from export.outcome import ObjectOutcome
from export.selection import SPLITS, assign_splits
from normalize.collision_parts import parts_method
from normalize.safe_yaml import load_yaml
from normalize.sources import PROVENANCE_KEYS
from previews.browser import browser_data, write_browser
from previews.card import card_section
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


def _snapshot(run, per_object: dict) -> str:
    """sha256 over the source config (without its local path), its candidates, and the
    content of every file they read (`per_object`: source id -> `_read_files`)."""
    config = {k: v for k, v in run.source.as_dict().items() if k not in ("path", "package_roots")}
    return sha256_hex(canonical_json({"config": config, "objects": per_object}))


def _read_files(run, outcome) -> list[tuple[str, str]]:
    return sorted((_relative_to_source(run, p), d) for p, d in outcome.inputs.items())


@dataclass
class _ReadBack:
    """What the assembly keeps of the outcomes, read back one source at a time: the outcomes
    without their inputs and stage seconds; per accepted object its source_files rows; per
    source its snapshot digest and its objects (id, accepted)."""

    outcomes: list[ObjectOutcome]
    source_files: list[tuple[str, list[dict]]]
    snapshots: list[str]
    objects: list[list[tuple[str, bool]]]


def _read_back(runs: list) -> _ReadBack:
    read = _ReadBack([], [], [], [])
    for run in runs:
        per_object, objects = {}, []
        for o in run.outcomes:
            per_object[o.source_id] = _read_files(run, o)
            objects.append((o.object_id, o.accepted))
            if o.accepted:
                read.source_files.append((o.object_id, _source_files(run, o)))
            read.outcomes.append(replace(o, inputs={}, seconds={}))
        read.snapshots.append(_snapshot(run, per_object))
        read.objects.append(objects)
    return read


def find_release_duplicates(
    staging: Path, accepted: list[dict], settings: DuplicateSettings, cache=None, runner=None
):
    """The duplicate stage on the accepted outcomes, reading their written objects in staging;
    `cache`: the build's pair-evidence cache (`duplicates.EvidenceCache`) or None; `runner`:
    where many pairs are measured (`duplicates.stage.JobRunner`; None: the stage's own
    processes)."""
    records = [
        record_from_rows(
            o.rows["objects"][0],
            o.rows["joints"],
            o.files,
            staging / "objects" / o.object_id,
        )
        for o in accepted
    ]
    return find_duplicates(records, settings, cache, runner)


def _moved_out(o: ObjectOutcome, canonical: str) -> ObjectOutcome:
    """The outcome of an object moved out as a duplicate: a rejection naming the canonical id."""
    reject = manifests.reject_row(
        object_id=o.object_id,
        source=o.source,
        source_id=o.source_id,
        source_path=o.source_path,
        stage="duplicates",
        code="duplicate.of",
        message=f"the same object as {canonical} (canonical member of its duplicate cluster)",
        element=canonical,
    )
    return o.rejected_as(reject)


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
    `sources_file`: the sources file of the build, copied as it is (without one, the sources'
    settings are written as YAML). `duplicates`: the duplicate stage's settings (default: keep
    and flag, sources in the order of `runs`); `seconds` receives the stage's wall time under
    "duplicates"; `cache`: the build's result store (`pipeline.cache.ResultStore`), which keeps
    the duplicate stage's pair evidence and the plots (None: measure every pair and draw every
    plot); `pair_runner`: where the duplicate stage measures many pairs (see
    `find_release_duplicates`)."""
    if duplicates is None:
        duplicates = DuplicateSettings(priority=tuple(run.source.name for run in runs))
    read = _read_back(runs)
    outcomes = read.outcomes
    started = time.perf_counter()
    accepted = [o for o in outcomes if o.accepted]
    found = find_release_duplicates(staging, accepted, duplicates, cache, pair_runner)
    if seconds is not None:
        seconds["duplicates"] = time.perf_counter() - started
    outcomes = [
        _moved_out(o, found.moved_out[o.object_id])
        if o.accepted and o.object_id in found.moved_out
        else o
        for o in outcomes
    ]
    accepted = [o for o in outcomes if o.accepted]
    tables: dict[str, list[dict]] = {name: [] for name in manifests.TABLES}
    for o in accepted:
        for name in ("objects", "joints", "links", "review"):
            tables[name].extend(o.rows.get(name, []))
    source_of = {
        object_id: run.source
        for run, objects in zip(runs, read.objects, strict=True)
        for object_id, _ in objects
    }
    tables["rejects"] = [
        _shippable_reject(o.reject, source_of[o.object_id], staging)
        for o in outcomes
        if not o.accepted
    ]
    tables["source_files"] = [
        row
        for object_id, rows in read.source_files
        if object_id not in found.moved_out
        for row in rows
    ]
    tables["duplicates"] = found.rows

    # Splits by cluster, eval200 among canonical members (export.selection.assign_splits).
    objects = [
        {
            **r,
            "cluster_id": found.cluster_of[r["object_id"]],
            "is_canonical": found.is_canonical(r["object_id"]),
        }
        for r in tables["objects"]
    ]
    tables["objects"] = assign_splits(objects, last={UNASSIGNED_SUPERCATEGORY})

    # Object folders that no accepted outcome claims (none expected) do not enter the release.
    claimed = {o.object_id for o in accepted}
    for folder in (staging / "objects").iterdir():
        if folder.name not in claimed:
            shutil.rmtree(folder)

    (staging / "manifest").mkdir()
    arrow = {name: manifests.to_table(name, rows) for name, rows in tables.items()}
    for name, table in arrow.items():
        manifests.write_table(table, staging / "manifest" / f"{name}.parquet")
    _write_splits(arrow["objects"], staging)
    release.pause_point("assemble")
    known = {
        f"objects/{o.object_id}/{name}": digest
        for o in accepted
        for name, digest in o.files.items()
    }
    for name in manifests.TABLES:
        path = staging / "manifest" / f"{name}.parquet"
        known[f"manifest/{name}.parquet"] = sha256_file(path)
    content = release.content_hash(known)

    stats_md = _statistics(arrow, staging, cache) + duplicates_section(found.rows)
    previews_md = card_section(
        staging, tables["objects"], {o.object_id: o.preview for o in accepted}
    )
    previous_info = release.read_release(previous) if previous else None
    previous_objects = release.read_objects(previous) if previous else None
    info = release.write_release_json(
        staging,
        _release_info(runs, read, tables, version, versions, content, previous_info, found),
    )
    (staging / "CHANGELOG.md").write_text(
        release.changelog_markdown(
            version,
            tables["objects"],
            previous_objects,
            previous_info["version"] if previous_info else None,
        ),
        encoding="utf-8",
    )
    (staging / "README.md").write_text(
        card.card_markdown(
            info,
            tables["objects"],
            tables["rejects"],
            stats_md,
            {name: len(rows) for name, rows in tables.items()},
            previews_md,
        ),
        encoding="utf-8",
    )
    (staging / card.LICENSES_FILE).write_text(card.licenses_markdown(info), encoding="utf-8")
    _write_sources_file(staging, runs, sources_file)
    write_browser(
        staging,
        browser_data(
            info,
            tables,
            {o.object_id: o.preview for o in accepted},
            {o.object_id: list(o.files) for o in accepted},
        ),
    )
    release.write_checksums(staging, known)
    return info, content


def _write_splits(objects, staging: Path) -> None:
    """The objects of each split as their own Parquet file (the card's default config), with
    their thumbnails, for every split that has objects."""
    objects = manifests.with_thumbnails(objects, staging)
    for split in SPLITS:
        rows = objects.filter(pc.equal(objects["split"], split))
        if rows.num_rows:
            path = staging / card.split_path(split)
            path.parent.mkdir(parents=True, exist_ok=True)
            manifests.write_table(rows, path)


def _statistics(arrow: dict, staging: Path, cache) -> str:
    """The taxonomy stage's statistics: plots/*.png (kept in `cache`, if any) and their
    markdown for the card."""
    from taxonomy import write_release_statistics

    objects = arrow["objects"].select(["object_id", "category", "supercategory", "source"])
    joints = arrow["joints"].select(["object_id", "type"])
    return write_release_statistics(
        objects.to_pandas(), joints.to_pandas(), staging / "plots", cache
    )


def _release_info(runs, read, tables, version, versions, content, previous_info, found) -> dict:
    objects = tables["objects"]
    joints = tables["joints"]
    sources = []
    for run, snapshot, of_run in zip(runs, read.snapshots, read.objects, strict=True):
        accepted = sum(ok and object_id not in found.moved_out for object_id, ok in of_run)
        sources.append(
            {
                "name": run.source.name,
                "format": run.source.format,
                "license": run.source.license,
                **{key: getattr(run.source, key) for key in PROVENANCE_KEYS},
                "snapshot_sha256": snapshot,
                "discovered": len(run.discovered),
                "accepted": accepted,
                "rejected": len(of_run) - accepted,
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
            "rejected": len(tables["rejects"]),
            "joints": len(joints),
            "moving_joints": sum(j["type"] != "fixed" for j in joints),
            "links": len(tables["links"]),
            "eval200": sum(o["eval200"] for o in objects),
            "needs_review": len(tables["review"]),
            "by_supercategory": dict(sorted(Counter(o["supercategory"] for o in objects).items())),
            "by_joint_type": dict(sorted(Counter(j["type"] for j in joints).items())),
            "by_status": dict(sorted(Counter(o["status"] for o in objects).items())),
            "by_split": dict(sorted(Counter(o["split"] for o in objects).items())),
            "rejects_by_stage": dict(
                sorted(Counter(r["stage"] for r in tables["rejects"]).items())
            ),
            "rejects_by_code": dict(Counter(r["code"] for r in tables["rejects"]).most_common()),
            "duplicates": duplicate_counts(tables["duplicates"]),
        },
        "previous": (
            {"version": previous_info["version"], "content_hash": previous_info["content_hash"]}
            if previous_info
            else None
        ),
        "content_hash": content,
    }
