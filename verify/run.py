"""`verify_object`: every check family on one normalized object, in order, each guarded."""

from __future__ import annotations

import re
import time
from pathlib import Path

from verify.allowances import apply_allowances, object_allowances
from verify.checks import (
    Context,
    attachment,
    collision,
    fidelity,
    geometry,
    inertia,
    kinematics,
    mechanism,
    structure,
)
from verify.checks import simulator as simulator_checks
from verify.checks import usd as usd_checks
from verify.report import CheckResult, VerificationReport, shown_path, source_path_of

#: Families that need the object read back, in order (geometry before attachment, collision
#: and simulator, which reuse its loaded meshes and extent).
FAMILIES = (
    ("structure", structure.run),
    ("metric", kinematics.run),
    ("geometry", geometry.run),
    ("inertia", inertia.run),
    ("attachment", attachment.run),
    ("fidelity", fidelity.run),
    ("collision", collision.run),
)


def verify_object(result, source, *, simulator: bool = True, assignment=None) -> VerificationReport:
    """Run every check on one normalized object (`normalize.run.NormalizeResult`) of `source`
    (`normalize.sources.SourceConfig`). simulator: also compile it in MuJoCo and compare its
    forward kinematics (skipped, with an info check, when False or when MuJoCo is missing).
    assignment: the object's category (`taxonomy.Assignment`, curators' overrides applied) when
    the caller has it; else fidelity.size categorizes the object itself.
    Never raises for a bad object: a check that crashes is reported as `verify.internal_error`.
    """
    started = time.perf_counter()
    candidate = result.candidate
    report = VerificationReport(
        object_id=result.object_id,
        source=source.name,
        source_id=candidate.source_id,
        source_path=source_path_of(candidate),
        format=source.format,
    )
    ctx = Context(result=result, source=source, assignment=assignment)
    checks = [structure.read_back(ctx)]
    if ctx.reread is not None:
        report.moving_joints = len(ctx.reread.moving_joints)
        families = list(FAMILIES)
        if simulator:
            families += [
                ("simulator", simulator_checks.run),
                ("usd", usd_checks.run),
                ("mechanism", mechanism.run),  # collides the model the simulator compiled
            ]
        for name, family in families:
            checks += _guarded(name, family, ctx)
        if not simulator:
            checks.append(
                CheckResult("simulator.skipped", "info", True, "simulator checks not requested")
            )
    else:  # every family reads the object back: none can run, and the report says so
        names = ", ".join(name for name, _ in FAMILIES)
        message = f"not run ({names}, simulator): the normalized URDF could not be read back"
        checks.append(CheckResult("verify.skipped", "info", False, message))
    extra, file_check = object_allowances(candidate)
    if file_check is not None:
        checks.append(file_check)
    apply_allowances(checks, candidate, source, extra)
    name_sources(checks, result.object)
    name_mesh_sources(checks, result)
    report.checks = checks
    report.seconds = time.perf_counter() - started
    return report


def name_sources(checks: list[CheckResult], obj) -> None:
    """Make every message about a canonical joint or link (`joint joint_1`, `link link_3`) name
    its source element too (`joint joint_1 (source joint ARRx)`), so that a user can find it in
    the file they wrote. Elements keep the canonical name (the release's)."""
    names = {f"joint {j.name}": f"joint {j.source_name}" for j in obj.joints}
    names.update({f"link {k.name}": "link " + ", ".join(k.source_names) for k in obj.links})
    pattern = re.compile(r"\b(joint|link) (joint_\d+|link_\d+|base)\b")

    def label(match: re.Match) -> str:
        text = match.group(0)
        source = names.get(text)
        return text if source is None or source == text else f"{text} (source {source})"

    for check in checks:
        if check.message and ("joint " in check.message or "link " in check.message):
            check.message = pattern.sub(label, check.message)


def name_mesh_sources(checks: list[CheckResult], result) -> None:
    """Give every check about a written mesh (`file meshes/original-12.obj`) the source mesh
    it was written from as its `file` (relative to the source root, e.g. PartNet-Mobility's
    `textured_objs/original-12.obj`), named in its message too."""
    root = result.candidate.source.path
    for check in checks:
        name = (check.element or "").removeprefix("file ")
        source = result.mesh_sources.get(name)
        if source is None or not check.element.startswith("file "):
            continue
        check.file = shown_path(Path(source), root)
        if check.file not in check.message:
            check.message += f" (source mesh {check.file})"


def _guarded(name: str, family, ctx: Context) -> list[CheckResult]:
    try:
        return family(ctx)
    except MemoryError:  # the object's memory limit (normalize.workers.memory_limit), not a bug
        raise
    except Exception as exc:  # a bug in a check must not lose the object's other checks
        return [
            CheckResult(
                "verify.internal_error",
                "error",
                False,
                f"the {name} checks crashed: {type(exc).__name__}: {exc}",
                element=name,
            )
        ]
