"""Check families, one module each. Every family is a function `run(ctx) -> list[CheckResult]`
over a shared `Context` (the normalization result, the source, the object re-read from disk).

Checks that pass are reported once per id with the worst value over all elements (`aggregate`;
yes/no checks, `flagged`, with value 0); checks that fail are reported once per failing element,
so a report stays short on a 100-joint object and still names every offender.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from normalize.model import ArticulatedObject
from verify.report import CheckResult


@dataclass
class Context:
    """What every check reads.

    result: the `NormalizeResult`; source: its `SourceConfig`; folder: the object folder.
    reread: the normalized URDF read back from disk (None when it cannot be read; the
    `structure.read_back` check then says why and the checks needing it are skipped).
    notes: what one family leaves for later ones (geometry: loaded meshes, the
    largest extent). assignment: the object's category when the caller knows it.
    """

    result: object
    source: object
    reread: ArticulatedObject | None = None
    notes: dict = field(default_factory=dict)
    assignment: object | None = None

    @property
    def folder(self) -> Path:
        return Path(self.result.urdf_path).parent

    @cached_property
    def placed(self) -> ArticulatedObject:
        """The source object in the canonical frame: reference moved by the recorded placement."""
        return self.result.reference.transformed(self.result.placement, self.result.scale)

    @cached_property
    def rest_poses(self) -> dict[str, np.ndarray]:
        return self.reread.link_poses()


def aggregate(
    check_id: str,
    severity: str,
    items: Iterable[tuple[str | None, float]],
    threshold: float,
    *,
    ok: Callable[[float, float], bool],
    describe: Callable[[str | None, float], str],
    passed_message: str,
    worst: Callable = max,
) -> list[CheckResult]:
    """Results of one check over many elements: one failed result per element whose value is
    not `ok(value, threshold)`, or one passed result carrying the worst value (by `worst`)."""
    items = list(items)
    failed = [
        CheckResult(
            check_id,
            severity,
            False,
            describe(element, value),
            value=value,
            threshold=threshold,
            element=element,
        )
        for element, value in items
        if not ok(value, threshold)
    ]
    if failed:
        return failed
    if not items:
        return [CheckResult(check_id, severity, True, passed_message, threshold=threshold)]
    element, value = worst(items, key=lambda item: item[1])
    return [
        CheckResult(
            check_id,
            severity,
            True,
            passed_message,
            value=value,
            threshold=threshold,
            element=element,
        )
    ]


def flagged(
    check_id: str,
    severity: str,
    offenders: Iterable[str],
    *,
    problem: str,
    passed_message: str,
) -> list[CheckResult]:
    """Results of a yes/no check over many elements: one failed result per offending element
    (message "<element>: <problem>", value 1, threshold 0), or one passed result (value 0)."""
    failed = [
        CheckResult(
            check_id,
            severity,
            False,
            f"{element}: {problem}",
            value=1.0,
            threshold=0.0,
            element=element,
        )
        for element in offenders
    ]
    return failed or [
        CheckResult(check_id, severity, True, passed_message, value=0.0, threshold=0.0)
    ]


def single(
    check_id: str,
    severity: str,
    passed: bool,
    message: str,
    *,
    value=None,
    threshold=None,
    element: str | None = None,
) -> CheckResult:
    return CheckResult(
        check_id, severity, bool(passed), message, value=value, threshold=threshold, element=element
    )
