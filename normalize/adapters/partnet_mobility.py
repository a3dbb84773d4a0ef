"""Adapter for PartNet-Mobility style libraries (format `partnet_mobility`).

Discovery: every folder below the source root that holds a URDF file is one object folder (a
folder nested inside another object folder, like `bucket/100454`, is its own object). Its entry
is `mobility.urdf` (or the file named by the source's `entry`) when present, else the first
`*.urdf` in sorted order; the other URDF files of the folder (variants such as
`mobility_vhacd.urdf` or GAPartNet's annotation copies) are not separate objects and are listed
in `labels["variants"]`. source_id is the folder path relative to the root; include/exclude
globs apply to it.

Labels (`SourceInfo.labels`): `model_cat` and `anno_id` from meta.json (None when the file is
missing), `semantics` from semantics.txt as a list of {link, joint_type, label}, `folder` (the
object folder name), `robot_name` (the URDF <robot> name), `urdf` (the entry file name) and
`variants`. An unreadable meta.json or semantics.txt leaves its labels empty and is recorded.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from normalize import inputs
from normalize.adapters.registry import register
from normalize.adapters.urdf import load_urdf_candidate, urdf_problems
from normalize.changes import Change
from normalize.discovery import Candidate, list_source
from normalize.errors import AssetError
from normalize.paths import is_inside
from normalize.safe_xml import read_limited
from normalize.sources import SourceConfig

if TYPE_CHECKING:
    from normalize.model import ArticulatedObject

DEFAULT_ENTRY = "mobility.urdf"
MAX_LABEL_BYTES = 4 * 1024 * 1024


def _read_text(path: Path, root: Path, notes: list[Change]) -> str | None:
    inputs.record(path)  # also when missing: adding the file later must refresh the labels
    if not path.exists() or path.is_dir():
        return None  # a FIFO or device is refused by read_limited (never opened blocking)
    if not is_inside(path, root):
        notes.append(
            Change(
                "labels.unreadable",
                f"{path.name} ignored: it leads outside the source root",
                element=f"file {path.name}",
            )
        )
        return None
    try:
        return read_limited(path, MAX_LABEL_BYTES).decode("utf-8")
    except (AssetError, UnicodeDecodeError) as exc:
        notes.append(
            Change("labels.unreadable", f"{path.name} ignored: {exc}", element=f"file {path.name}")
        )
        return None


def read_labels(folder: Path, root: Path, notes: list[Change]) -> dict:
    """model_cat, anno_id and semantics of one object folder."""
    labels: dict = {"model_cat": None, "anno_id": None, "semantics": []}
    text = _read_text(folder / "meta.json", root, notes)
    if text is not None:
        try:
            meta = json.loads(text)
            if not isinstance(meta, dict):
                raise ValueError("not a JSON object")
            labels["model_cat"] = meta.get("model_cat")
            labels["anno_id"] = meta.get("anno_id")
        except ValueError as exc:
            notes.append(
                Change("labels.unreadable", f"meta.json ignored: {exc}", element="file meta.json")
            )
        except RecursionError:
            notes.append(
                Change(
                    "labels.too_deep",
                    "meta.json ignored: its JSON is nested too deeply to read",
                    element="file meta.json",
                )
            )
    text = _read_text(folder / "semantics.txt", root, notes)
    for line in (text or "").splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) == 3:
            labels["semantics"].append(
                {"link": parts[0], "joint_type": parts[1], "label": parts[2].strip()}
            )
    return labels


@register
class PartNetMobilityAdapter:
    format = "partnet_mobility"

    def discover(self, source: SourceConfig) -> list[Candidate]:
        preferred = source.entry or DEFAULT_ENTRY
        listing = list_source(source)  # unreadable folders, escaping links: refused, counted
        candidates = list(listing.refused)
        for folder, _, files in listing.folders:
            urdfs = sorted(f for f in files if f.endswith(".urdf"))
            if not urdfs:
                continue
            entry = preferred if preferred in urdfs else urdfs[0]
            source_id = folder.relative_to(source.path).as_posix()
            if source_id == ".":
                source_id = source.path.name
            if source.selects(source_id):
                candidates.append(Candidate(source, source_id, folder / entry))
        return candidates

    def load(self, candidate: Candidate) -> ArticulatedObject:
        folder = candidate.path.parent
        notes: list[Change] = []
        labels = read_labels(folder, candidate.source.path, notes)
        variants = sorted(p.name for p in folder.glob("*.urdf") if p.name != candidate.path.name)
        labels.update(folder=folder.name, urdf=candidate.path.name, variants=variants)
        obj = load_urdf_candidate(candidate, candidate.path, labels)
        changes = (*notes, *obj.source.changes)
        return obj.replace(source=replace(obj.source, changes=changes))

    def problems(self, candidate: Candidate) -> list[AssetError]:
        return urdf_problems(candidate, candidate.path)
