"""Normalize candidates to the common URDF convention: one object, or every object of a sources
file (`arena normalize`).

One object::

    result = normalize_candidate(candidate, out_root)   # raises AssetError when rejected

writes `out_root/objects/<object_id>/object.urdf` (+ `meshes/`) and returns a `NormalizeResult`:

- `raw`: the adapter's object, source frame and names. Adapters put the fixes they made while
  reading (axis normalized, limits swapped by an allowance, multi-DOF decomposition, ...) in
  `raw.source.changes`.
- `reference`: `raw` with the semantic changes (helical pairs composed, rest pose re-anchored),
  still in the source frame with source names.
- `placement` (4x4 rigid) and `scale` (float): `reference.transformed(placement, scale)` is the
  object in the canonical frame (up-axis fix, scale, centring).
- `object`: the canonical object as written (names base / link_i / joint_i, fixed joints
  contracted, canonical axis signs, inertials on moving links, mesh filenames relative to the
  object folder); it equals `normalize.urdf.read_object(urdf_path)` number for number, and has
  the same motion as `reference.transformed(placement, scale)`. `link.source_names` and
  `joint.source_name` keep the source names.
- `urdf_path`, `changes` (every Change, reading first), `object_id`, `candidate`.
- `mesh_sources`: each written mesh file (`meshes/...`) -> the source mesh file it came from.

On rejection (an `AssetError` with stage, code, message, path, element) nothing is left in the
object folder. Other exceptions are bugs and propagate.

Every object of a sources file::

    report = normalize_sources(sources_file, out)   # never raises for a bad asset

writes the objects and `out/normalize_report.json` (schema `schemas/normalize_report.schema.json`)
with one entry per discovered candidate, normalized or rejected with a code.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import schemas
from normalize import adapters

# the readers the stage runs (mjcf, partnet_mobility, sdf, urdf) are imported with it
from normalize.adapters import discover, mjcf, partnet_mobility, sdf, urdf  # noqa: F401
from normalize.changes import Change
from normalize.convention import CONVENTION_VERSION, canonicalize, reference_object
from normalize.discovery import Candidate
from normalize.errors import AssetError
from normalize.limits import check_count, check_depth, check_names, check_values
from normalize.mjcf_writer import write_mjcf
from normalize.model import ArticulatedObject
from normalize.sources import load_sources
from normalize.timing import timed
from normalize.urdf_writer import export_object
from normalize.usd_writer import write_usd

REPORT_NAME = "normalize_report.json"


@dataclass(frozen=True, eq=False)
class NormalizeResult:
    """One normalized object (see the module docstring)."""

    candidate: Candidate
    object_id: str
    raw: ArticulatedObject
    reference: ArticulatedObject
    placement: np.ndarray
    scale: float
    object: ArticulatedObject
    urdf_path: Path
    changes: list[Change]
    mesh_sources: dict[str, str] = field(default_factory=dict)


def object_folder(out_root: Path, object_id: str) -> Path:
    return Path(out_root) / "objects" / object_id


def normalize_candidate(candidate: Candidate, out_root: Path) -> NormalizeResult:
    """Read, normalize and write one candidate; raises AssetError when it is rejected."""
    source = candidate.source
    final = object_folder(out_root, candidate.object_id)
    partial = final.parent / f".{candidate.object_id}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    try:
        with timed("parse"):
            raw = adapters.get_adapter(source.format).load(candidate)
            check_count("links", len(raw.links), source.max_links, candidate.path)
            check_count("joints", len(raw.joints), source.max_links, candidate.path)
            check_names(raw, candidate.path)
            check_values(raw, candidate.path, source.scale)
            check_depth(raw, candidate.path)
        changes = list(raw.source.changes)
        with timed("convention"):
            reference, semantic = reference_object(raw)
            canonical = canonicalize(
                reference, up_axis=source.up_axis, scale=source.scale, root=source.path
            )
        named = canonical.object.replace(name=candidate.object_id)
        with timed("export"):
            written = export_object(named, partial, root=source.path, mjcf=False)
        shutil.rmtree(final, ignore_errors=True)
        os.replace(partial, final)
        # The MJCF is written in the object's final folder: MuJoCo keeps the meshes it
        # processes for it by path, and the verification's loads of the same files reuse them.
        with timed("export"):
            write_mjcf(written.object, final)
            write_usd(written.object, final)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(final, ignore_errors=True)
        raise
    return NormalizeResult(
        candidate=candidate,
        object_id=candidate.object_id,
        raw=raw,
        reference=reference,
        placement=canonical.placement,
        scale=canonical.scale,
        object=written.object,
        urdf_path=final / written.urdf_path.name,
        changes=changes + semantic + canonical.changes + written.changes,
        mesh_sources=written.mesh_sources,
    )


# --------------------------------------------------------------------------- many objects
@dataclass
class NormalizeReport:
    """What `normalize_sources` did: one entry per discovered candidate."""

    out: Path
    sources_file: Path
    objects: list[dict] = field(default_factory=list)
    sources: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return {
            "convention_version": CONVENTION_VERSION,
            "sources_file": str(self.sources_file),
            "seconds": round(self.seconds, 3),
            "sources": self.sources,
            "objects": self.objects,
        }

    def summary(self) -> str:
        normalized = sum(1 for o in self.objects if o["status"] == "normalized")
        rejected = [o for o in self.objects if o["status"] == "rejected"]
        lines = [
            f"normalized {normalized} of {len(self.objects)} objects from "
            f"{len(self.sources)} sources in {self.seconds:.1f} s ({len(rejected)} rejected)",
        ]
        for code, count in Counter(o["code"] for o in rejected).most_common():
            lines.append(f"  rejected {count:4d}  {code}")
        for s in self.sources:
            if s["error"]:
                lines.append(f"  source {s['name']} unusable: {s['error']}")
        lines.append(f"report: {self.out / REPORT_NAME}")
        return "\n".join(lines)


def _entry(candidate: Candidate) -> dict:
    return {
        "source": candidate.source.name,
        "source_id": candidate.source_id,
        "source_path": candidate.source_path,
        "object_id": candidate.object_id,
    }


def report_entry(candidate: Candidate, out: Path) -> dict:
    """Normalize one candidate and describe the outcome as a report entry."""
    entry = _entry(candidate)
    try:
        result = normalize_candidate(candidate, out)
    except AssetError as exc:
        return {
            **entry,
            "status": "rejected",
            "stage": exc.stage,
            "code": exc.code,
            "message": str(exc),
            "urdf_path": None,
            "changes": [],
        }
    except Exception as exc:  # a bug must not lose the other objects; the report says so
        return {
            **entry,
            "status": "rejected",
            "stage": "internal",
            "code": "internal.error",
            "message": f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}",
            "urdf_path": None,
            "changes": [],
        }
    return {
        **entry,
        "status": "normalized",
        "stage": None,
        "code": None,
        "message": None,
        "urdf_path": result.urdf_path.relative_to(out).as_posix(),
        "changes": [c.as_dict() for c in result.changes],
    }


def normalize_sources(sources_file: Path, out: Path) -> NormalizeReport:
    """Normalize every candidate of every source in `sources_file` into `out` and write
    `out/normalize_report.json`, keeping parsed meshes in $ARENA_MESH_STORE when set. Raises
    `SourcesFileError` for a bad sources file only."""
    started = time.perf_counter()
    out = Path(out).resolve()
    configs = load_sources(Path(sources_file))
    report = NormalizeReport(out=out, sources_file=Path(sources_file).resolve())
    (out / "objects").mkdir(parents=True, exist_ok=True)
    for source in configs:
        error = None
        try:
            candidates = discover(source)
        except (AssetError, ValueError) as exc:
            candidates, error = [], str(exc)
        report.sources.append(
            {
                "name": source.name,
                "format": source.format,
                "path": str(source.path),
                "candidates": len(candidates),
                "error": error,
            }
        )
        for candidate in candidates:
            report.objects.append(report_entry(candidate, out))
    report.seconds = time.perf_counter() - started
    data = report.as_dict()
    schemas.validate(data, "normalize_report")
    tmp = out / f".{REPORT_NAME}.tmp"
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, out / REPORT_NAME)
    return report
