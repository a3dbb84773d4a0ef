"""Every problem of an object that normalization refused, for `arena validate`.

Normalization stops at the first problem (`normalize.errors.AssetError`), which stays the
object's primary problem (the build's reject code). `refused_checks` asks the format's adapter
for every independent problem of the source (`Adapter.problems`: a URDF read on past a missing
mesh, a zero axis or reversed limits; an MJCF scan on past each missing or out-of-root file)
and turns each into a failed check naming the source file and line of its element, and a hint
on how to fix it where one is known: the nearest existing file name for a missing file (set
where the file is looked up), `--root DIR` for a file outside the folder, `--package-root DIR`
for an unresolved package:// reference.
"""

from __future__ import annotations

import os
from pathlib import Path

from normalize.adapters import get_adapter
from normalize.errors import AssetError
from normalize.paths import realpath
from verify.report import CheckResult, shown_path

#: Codes of a file outside the folder references are confined to (`normalize.paths.confine`)
OUTSIDE_CODES = ("path.outside_root", "path.symlink_escape")


def refused_checks(candidate, error: AssetError) -> list[CheckResult]:
    """Failed checks for `error` (first) and every other independent problem the adapter of
    `candidate` finds in its source files."""
    problems = {_key(error): error}
    collect = getattr(get_adapter(candidate.source.format), "problems", None)
    crashed = []
    try:
        found = [] if collect is None else collect(candidate)
    except MemoryError:  # the object's memory limit, not a bug
        raise
    except Exception as exc:  # a bug: the first problem is still reported, and the crash
        found = []
        message = f"collecting the other problems crashed: {type(exc).__name__}: {exc}"
        crashed.append(CheckResult("verify.internal_error", "error", False, message))
    for problem in found:
        key = _key(problem)
        if key == _key(error):
            problems[key] = problem  # the same problem, found with its line
        else:
            problems.setdefault(key, problem)
    return [problem_check(candidate, p) for p in problems.values()] + crashed


def _key(error: AssetError) -> tuple:
    return (error.code, error.path, error.element)


def problem_check(candidate, error: AssetError) -> CheckResult:
    """The failed check of one problem: its source file relative to the source root."""
    root = Path(candidate.source.path)
    path = Path(error.path) if error.path else Path(candidate.path)
    return CheckResult(
        error.code,
        "error",
        False,
        error.message,
        element=error.element or f"file {shown_path(path, root)}",
        file=shown_path(path, root),
        line=error.line,
        hint=error.hint or _root_hint(error, root),
    )


def _root_hint(error: AssetError, root: Path) -> str | None:
    """For a file outside the folder references are confined to: the --root that allows it."""
    if error.code not in OUTSIDE_CODES or error.target is None:
        return None
    common = os.path.commonpath([realpath(error.target), realpath(root)])
    return f"pass --root DIR to allow files under DIR, e.g. --root {common}"
