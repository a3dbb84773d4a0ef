"""Checks that decide whether a normalized object may enter the suite, and `arena validate`.

    report = verify_object(result, source)        # a NormalizeResult and its SourceConfig
    report.status                                  # "pass" | "warn" | "fail"
    report.checks                                  # [CheckResult(id, severity, passed, ...)]
    rejection_report(candidate, asset_error)       # a refused object as a failed report

Check families (docs/verification.md lists every id, severity and tolerance): structure of the
file read back (`verify.checks.structure`), the metric (`.kinematics`: self-distance, swap
invariance, motion), geometry, inertia, attachment of parts, fidelity to an independent reading
of the source and plausibility (`.fidelity`), parts passing through each other (`.collision`),
the shipped files in MuJoCo, PyBullet and yourdfpy (`.simulator`), and
allowances that waive named checks (`verify.allowances`).
"""

from __future__ import annotations

from verify.report import CheckResult, VerificationReport, rejection_report

__all__ = ["CheckResult", "VerificationReport", "rejection_report", "verify_object"]
_RUN = ("FAMILIES", "verify_object")


def __getattr__(name: str):
    # the checks import numpy, trimesh and the simulators: only when they are run
    if name in _RUN:
        from verify import run

        return getattr(run, name)
    raise AttributeError(f"module 'verify' has no attribute {name!r}")
