"""Allowances: a named check waived for an object, with a reason.

Two places may hold them: the source's entry in the sources file (`allowances:` with `check`,
`reason` and optional `objects` globs over source ids; `SourceConfig.allowance`) and a
per-object file `arena-allowances.yaml` beside the object's entry file (for PartNet-Mobility, in
the object folder), validated by `schemas/allowances.schema.json`:

    allowances:
      - check: attachment.gap
        reason: the lid floats 2 cm above the box in the source on purpose
        objects: ["lid_*"]      # optional: only these source ids

A waived check stays in the report, marked `waived` with the reason and where it came from; it
no longer changes the verdict. Allowances apply to verification checks; a normalization
rejection cannot be waived here (the source's `limits.reversed` allowance is read by the
adapters during normalization; the build and `arena validate` pass per-object allowances to them
too, through `with_object_allowances`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import schemas
from normalize import inputs
from normalize.discovery import Candidate
from normalize.errors import AssetError
from normalize.paths import is_inside
from normalize.safe_xml import read_limited
from normalize.safe_yaml import YamlError, parse_yaml
from normalize.sources import Allowance
from verify.report import CheckResult

ALLOWANCES_FILE = "arena-allowances.yaml"
MAX_BYTES = 64 * 1024


def allowances_path(candidate: Candidate) -> Path:
    """Where the per-object allowances file of a candidate would be."""
    return Path(candidate.path).parent / ALLOWANCES_FILE


def object_allowances(candidate: Candidate) -> tuple[list[Allowance], CheckResult | None]:
    """(allowances of the per-object file that apply to the candidate, the `allowances.file`
    check result, None when there is no file)."""
    path = allowances_path(candidate)
    inputs.record(path)  # also when absent: adding the file later must recompute the object
    if not path.exists() and not path.is_symlink():
        return [], None

    def problem(message: str) -> tuple[list[Allowance], CheckResult]:
        return [], CheckResult(
            "allowances.file",
            "error",
            False,
            f"{ALLOWANCES_FILE} is unusable: {message}",
            element=f"file {path}",
        )

    if not is_inside(path, candidate.source.path):
        return problem("it resolves outside the source root")
    try:
        data = parse_yaml(read_limited(path, MAX_BYTES), str(path))
        schemas.validate(data, "allowances", source=str(path))
    except (AssetError, YamlError, schemas.SchemaValidationError) as exc:
        return problem(str(exc))
    found = [
        Allowance(a["check"], a["reason"], tuple(a.get("objects", ()))) for a in data["allowances"]
    ]
    applying = [a for a in found if a.applies_to(candidate.source_id)]
    return applying, CheckResult(
        "allowances.file",
        "info",
        True,
        f"{len(applying)} of {len(found)} allowance(s) in {ALLOWANCES_FILE} apply: "
        + (", ".join(a.check for a in applying) or "none"),
        value=len(applying),
        element=f"file {path}",
    )


def with_object_allowances(candidate: Candidate) -> Candidate:
    """The candidate with its per-object allowances added to its source's, so that
    normalization sees them too (an unusable file adds nothing; verification reports it)."""
    extra, _ = object_allowances(candidate)
    if not extra:
        return candidate
    source = replace(candidate.source, allowances=candidate.source.allowances + tuple(extra))
    return replace(candidate, source=source)


def apply_allowances(
    checks: list[CheckResult], candidate: Candidate, source, extra: list[Allowance]
) -> None:
    """Mark every failed check that an allowance names as waived, with its reason."""
    for check in checks:
        if check.passed:
            continue
        found = next((a for a in extra if a.check == check.id), None)
        where = ALLOWANCES_FILE
        if found is None:
            found = source.allowance(check.id, candidate.source_id)
            where = f"source {source.name}"
        if found is not None:
            check.waived = True
            check.waiver_reason = f"{found.reason} (allowance in {where})"
