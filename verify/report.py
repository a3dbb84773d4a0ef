"""What verification says about one object: a list of check results and a verdict.

A `CheckResult` has a stable dotted `id` (docs/verification.md lists every one), a severity
("error", "warning" or "info"), whether it passed, the measured `value`, the `threshold` it was
held to, the `element` (link, joint or file) it concerns and a message for people. A problem of
the source files also names the source `file` and the `line` of its element, and a `hint` on
how to fix it when one is known. An allowance may waive a failed check; the report still lists
it, marked `waived` with the reason.

Verdict (`VerificationReport.status`): "fail" when a non-waived error check failed, "warn" when
a non-waived warning check failed, else "pass". Info checks never change the verdict.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

SEVERITIES = ("error", "warning", "info")
#: Warnings that send an accepted object to the review queue: heuristics that can flag a valid
#: asset (`attachment.axis`, `collision.range`), disagreements with an independent reading
#: (`fidelity.*`) and collision geometry that jams a mechanism (`mechanism.penetration`).
REVIEW_CHECKS = (
    "attachment.axis",
    "collision.range",
    "fidelity.",
    "geometry.shape_dropped_share",
    "mechanism.penetration",
    "structure.mimic_frozen",
)

#: Where an object loads (the objects manifest's `loads_in`): name -> the checks that must all
#: have run and passed. A loader that is not installed runs none of them, so it is absent.
LOADS_IN = {
    "mujoco": ("simulator.compile",),  # the URDF
    "mujoco_mjcf": ("simulator.load.mujoco_mjcf",),  # object.xml
    "pybullet": ("simulator.load.pybullet",),
    "sapien": ("simulator.load.sapien",),
    "yourdfpy": ("simulator.load.yourdfpy",),
    "usd": (  # read back: its links, joints and rest poses those of the URDF
        "simulator.load.usd",
        "simulator.usd.links",
        "simulator.usd.joints",
        "simulator.usd.rest_pose",
    ),
}


def sends_to_review(check_id: str) -> bool:
    """Whether a failed, non-waived warning with this id puts the object in the review queue."""
    return any(check_id == c or (c.endswith(".") and check_id.startswith(c)) for c in REVIEW_CHECKS)


def json_number(value):
    """`value` as JSON can hold it: non-finite floats become the strings 'inf', '-inf', 'nan';
    numpy scalars become Python numbers."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if hasattr(value, "dtype") and getattr(value.dtype, "kind", "f") in "iu":
        return int(value)
    if math.isnan(number):
        return "nan"
    if math.isinf(number):
        return "inf" if number > 0 else "-inf"
    return number


@dataclass
class CheckResult:
    """One check of one object (or of one element of it, for a failure)."""

    id: str
    severity: str
    passed: bool
    message: str = ""
    value: float | int | str | None = None
    threshold: float | int | str | None = None
    element: str | None = None
    waived: bool = False
    waiver_reason: str | None = None
    file: str | None = None
    line: int | None = None
    hint: str | None = None

    def __post_init__(self):
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {self.severity!r}")

    @property
    def counts(self) -> bool:
        """True when this result takes part in the verdict: failed and not waived."""
        return not self.passed and not self.waived and self.severity != "info"

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "severity": self.severity,
            "passed": bool(self.passed),
            "waived": bool(self.waived),
            "waiver_reason": self.waiver_reason,
            "value": json_number(self.value),
            "threshold": json_number(self.threshold),
            "element": self.element,
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "hint": self.hint,
        }


@dataclass
class VerificationReport:
    """Every check of one object and the verdict they give.

    stage: "verify" for a normalized object, else the stage that rejected it (parse, resolve,
    model, mesh, ...; see `rejection_report`). moving_joints: the number of moving joints of
    the normalized object (None when it was rejected before normalization).
    """

    object_id: str
    checks: list[CheckResult] = field(default_factory=list)
    source: str | None = None
    source_id: str | None = None
    source_path: str | None = None
    format: str | None = None
    stage: str = "verify"
    moving_joints: int | None = None
    seconds: float = 0.0

    @property
    def status(self) -> str:
        if any(c.counts and c.severity == "error" for c in self.checks):
            return "fail"
        if any(c.counts and c.severity == "warning" for c in self.checks):
            return "warn"
        return "pass"

    @property
    def failures(self) -> list[CheckResult]:
        """Failed, non-waived error checks (why the object fails)."""
        return [c for c in self.checks if c.counts and c.severity == "error"]

    @property
    def warnings(self) -> list[str]:
        """Ids of failed, non-waived warning checks, each once, in check order."""
        return list(
            dict.fromkeys(c.id for c in self.checks if c.counts and c.severity == "warning")
        )

    @property
    def review(self) -> list[str]:
        """Ids of the warnings that send this object to review (`REVIEW_CHECKS`)."""
        return [w for w in self.warnings if sends_to_review(w)]

    @property
    def loads_in(self) -> list[str]:
        """The `LOADS_IN` names whose checks all ran and passed, in that order."""
        ran, failed = set(), set()
        for c in self.checks:
            (ran if c.passed else failed).add(c.id)
        return [
            name for name, ids in LOADS_IN.items() if all(i in ran and i not in failed for i in ids)
        ]

    def check(self, check_id: str) -> list[CheckResult]:
        """Every result with this id."""
        return [c for c in self.checks if c.id == check_id]

    def as_dict(self) -> dict:
        """One entry of `objects` in schemas/validation_report.schema.json."""
        return {
            "object_id": self.object_id,
            "source": self.source,
            "source_id": self.source_id,
            "source_path": self.source_path,
            "format": self.format,
            "stage": self.stage,
            "status": self.status,
            "moving_joints": self.moving_joints,
            "seconds": round(float(self.seconds), 4),
            "warnings": self.warnings,
            "review": self.review,
            "failures": list(dict.fromkeys(c.id for c in self.failures)),
            "checks": [c.as_dict() for c in self.checks],
        }


def rejection_report(candidate, error) -> VerificationReport:
    """The report of an object that normalization refused: failed, with one error check whose
    id is the rejection code (e.g. `xml.malformed`, `mesh.missing`, `model.cycle`).

    `candidate` is a `normalize.discovery.Candidate`, `error` a `normalize.errors.AssetError`.
    """
    element = error.element or (f"file {error.path}" if error.path else None)
    check = CheckResult(error.code, "error", False, str(error), element=element)
    return failed_report(candidate, check, error.stage)


def failed_report(candidate, check: CheckResult, stage: str) -> VerificationReport:
    """The report of a candidate that `stage` stopped, with the one failed check saying why."""
    return VerificationReport(
        object_id=candidate.object_id,
        checks=[check],
        source=candidate.source.name,
        source_id=candidate.source_id,
        source_path=source_path_of(candidate),
        format=candidate.source.format,
        stage=stage,
    )


def shown_path(path, root) -> str:
    """`path` relative to `root` ('/'-separated) when inside it, else as it is."""
    path = Path(os.path.normpath(Path(path).absolute()))
    try:
        return path.relative_to(Path(root).absolute()).as_posix()
    except ValueError:
        return str(path)


def source_path_of(candidate) -> str:
    """The candidate's entry relative to its source root (absolute when it is outside)."""
    try:
        return candidate.source_path
    except ValueError:  # the entry is not below the source root (a file given directly)
        return str(candidate.path)
