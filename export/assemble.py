"""Release assembly: from the outcomes of every object to the release files.

`assemble_release` writes, into the staging folder (whose `objects/` the batches filled): the
Parquet manifests with split and eval200, the statistics plots, release.json, CHANGELOG.md, the
dataset card README.md and checksums.sha256. `runs` are the build's per-source results (source,
discovered ids, outcomes: see `pipeline.chain` for an outcome's fields).
"""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter
from pathlib import Path

from duplicates import DuplicateSettings, find_duplicates, record_from_rows
from duplicates.report import card_section, counts
from export import manifests, release
from export.digests import canonical_json, sha256_file, sha256_hex
from export.selection import assign_splits
from taxonomy import UNASSIGNED_SUPERCATEGORY


def _snapshot(run) -> str:
    """sha256 over the source config (without its local path), its candidates, and the
    content of every file they read (paths relative to the source root)."""
    config = {k: v for k, v in run.source.as_dict().items() if k not in ("path", "package_roots")}
    root = str(run.source.path) + os.sep

    def relative(path: str) -> str:
        return path[len(root) :] if path.startswith(root) else os.path.relpath(path, root)

    per_object = {}
    for o in run.outcomes:
        per_object[o["source_id"]] = sorted(
            (relative(path), digest) for path, digest in o["inputs"].items()
        )
    return sha256_hex(canonical_json({"config": config, "objects": per_object}))


def find_release_duplicates(staging: Path, accepted: list[dict], settings: DuplicateSettings):
    """The duplicate stage on the accepted outcomes, reading their written objects in staging."""
    records = [
        record_from_rows(
            o["rows"]["objects"][0],
            o["rows"]["joints"],
            o["files"],
            staging / "objects" / o["object_id"],
        )
        for o in accepted
    ]
    return find_duplicates(records, settings)


def _moved_out(o: dict, canonical: str) -> dict:
    """The outcome of an object moved out as a duplicate: a rejection naming the canonical id."""
    reject = manifests.reject_row(
        object_id=o["object_id"],
        source=o["source"],
        source_id=o["source_id"],
        source_path=o["source_path"],
        stage="duplicates",
        code="duplicate.of",
        message=f"the same object as {canonical} (canonical member of its duplicate cluster)",
        element=canonical,
    )
    return {**o, "accepted": False, "rows": {}, "reject": reject, "files": {}}


def assemble_release(
    staging: Path,
    runs: list,
    version: str,
    previous: Path | None,
    versions: dict[str, str],
    duplicates: DuplicateSettings | None = None,
    seconds: dict | None = None,
) -> tuple[dict, str]:
    """Write manifests, plots, release.json, CHANGELOG.md, README.md and checksums.sha256 into
    the staging folder (everything but the object folders, which the batches wrote); returns
    (release.json's content, the content hash). `duplicates`: the duplicate stage's settings
    (default: keep and flag, sources in the order of `runs`); `seconds` receives the stage's
    wall time under "duplicates"."""
    if duplicates is None:
        duplicates = DuplicateSettings(priority=tuple(run.source.name for run in runs))
    outcomes = [o for run in runs for o in run.outcomes]
    started = time.perf_counter()
    found = find_release_duplicates(staging, [o for o in outcomes if o["accepted"]], duplicates)
    if seconds is not None:
        seconds["duplicates"] = time.perf_counter() - started
    outcomes = [
        _moved_out(o, found.moved_out[o["object_id"]])
        if o["accepted"] and o["object_id"] in found.moved_out
        else o
        for o in outcomes
    ]
    accepted = [o for o in outcomes if o["accepted"]]
    tables: dict[str, list[dict]] = {name: [] for name in manifests.TABLES}
    for o in accepted:
        for name in ("objects", "joints", "links", "review"):
            tables[name].extend(o["rows"].get(name, []))
    tables["rejects"] = [o["reject"] for o in outcomes if not o["accepted"]]
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
    claimed = {o["object_id"] for o in accepted}
    for folder in (staging / "objects").iterdir():
        if folder.name not in claimed:
            shutil.rmtree(folder)

    (staging / "manifest").mkdir()
    arrow = {name: manifests.to_table(name, rows) for name, rows in tables.items()}
    for name, table in arrow.items():
        manifests.write_table(table, staging / "manifest" / f"{name}.parquet")
    release.pause_point("assemble")
    known = {
        f"objects/{o['object_id']}/{name}": digest
        for o in accepted
        for name, digest in o["files"].items()
    }
    for name in manifests.TABLES:
        path = staging / "manifest" / f"{name}.parquet"
        known[f"manifest/{name}.parquet"] = sha256_file(path)
    content = release.content_hash(known)

    stats_md = _statistics(arrow, staging) + card_section(found.rows)
    previous_info = release.read_release(previous) if previous else None
    previous_objects = release.read_objects(previous) if previous else None
    info = release.write_release_json(
        staging,
        _release_info(runs, tables, version, versions, content, previous_info, found.moved_out),
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
        release.card_markdown(info, tables["objects"], tables["rejects"], stats_md),
        encoding="utf-8",
    )
    release.write_checksums(staging, known)
    return info, content


def _statistics(arrow: dict, staging: Path) -> str:
    """The taxonomy stage's statistics: plots/*.png and their markdown for the card."""
    from taxonomy import write_release_statistics

    objects = arrow["objects"].select(["object_id", "category", "supercategory", "source"])
    joints = arrow["joints"].select(["object_id", "type"])
    return write_release_statistics(objects.to_pandas(), joints.to_pandas(), staging / "plots")


def _release_info(runs, tables, version, versions, content, previous_info, moved_out) -> dict:
    objects = tables["objects"]
    joints = tables["joints"]
    sources = []
    for run in runs:
        accepted = sum(o["accepted"] and o["object_id"] not in moved_out for o in run.outcomes)
        sources.append(
            {
                "name": run.source.name,
                "format": run.source.format,
                "license": run.source.license,
                "snapshot_sha256": _snapshot(run),
                "discovered": len(run.discovered),
                "accepted": accepted,
                "rejected": len(run.outcomes) - accepted,
            }
        )
    return {
        "format": release.RELEASE_FORMAT,
        "version": version,
        "pipeline_version": versions["pipeline"],
        "code_fingerprint": versions["code"],
        "convention_version": versions["convention"],
        "taxonomy_version": versions["taxonomy"],
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
            "duplicates": counts(tables["duplicates"]),
        },
        "previous": (
            {"version": previous_info["version"], "content_hash": previous_info["content_hash"]}
            if previous_info
            else None
        ),
        "content_hash": content,
    }
