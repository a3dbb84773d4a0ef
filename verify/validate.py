"""`arena validate PATH... [--format F] [--json] [--strict] [--html FILE]`: may these assets
enter the suite?

PATH is a URDF, MJCF or SDF file, an object folder or a whole library folder. Without --format,
a folder is searched for PartNet-Mobility object folders (holding `mobility.urdf`), `*.urdf`
files elsewhere, `*.sdf` files and `*.xml` files whose root element is `<mujoco>` (MJCF),
`<sdf>` or `<robot>` (other XML, such as ROS `package.xml`, is ignored); MJCF and SDF files
included by another file are parts of it, not objects. File references are confined to the
nearest package or model folder enclosing PATH (holding `package.xml` or `model.config`; else
PATH itself, the file's folder for a file) unless --root DIR is given; --package-root DIR adds a
folder where package:// references are looked up.

Every object is normalized into a temporary folder (nothing is written next to the source),
verified with `verify.verify_object`, and reported: a readable table (each object's problems
grouped per source file, `file:line  element  code  message  (hint)`), or with --json a document
matching `schemas/validation_report.schema.json` (`objects`: one report per object, `summary`).
An object normalization refuses lists every independent problem of its files
(`verify.problems.refused_checks`), the one that refused it first.
Exit code: 0 when every object passes (warnings allowed unless --strict), 1 when any object
fails, 2 for a usage error (missing path, unknown format, nothing to validate). An unreadable or
hostile asset is a failed object whose check id is the rejection code, never a traceback.
Objects are validated in worker processes (both cores by default), each within the build's
per-object limits (docs/limits.md). Prefect is never
imported on this path. With --html FILE the command line also writes a self-contained HTML
report with each object's previews (`previews.report`, above this package: it is handed the
normalized folders through `validate_command(report_writer=...)`).
"""

from __future__ import annotations

import contextlib
import glob
import importlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from normalize.adapters import discover
from normalize.discovery import Candidate
from normalize.errors import AssetError
from normalize.files import broken_link, xml_root
from normalize.paths import is_inside
from normalize.sources import SourceConfig
from normalize.workers import (
    OBJECT_MEMORY_ENV,
    OBJECT_SECONDS_ENV,
    ObjectTimeout,
    WorkerLost,
    default_object_memory,
    default_object_seconds,
    hard_seconds,
    object_limits,
    out_of_memory,
    shared,
)
from verify.allowances import with_object_allowances
from verify.problems import refused_checks
from verify.report import CheckResult, VerificationReport, failed_report, rejection_report

FORMATS = ("partnet_mobility", "urdf", "mjcf", "sdf")
PACKAGE_MARKERS = ("package.xml", "model.config")
PARTNET_ENTRY = "mobility.urdf"
ENTRY_SUFFIXES = (".urdf", ".sdf", ".world", ".xml")
LICENSE = "unknown (validated with arena validate)"
MAX_LISTED = 20  # checks listed per object in the table
#: The stages a worker process imports before any object's limits (`validated`); the first
#: worker imports them as it starts, while the objects are still being found
WORKER_MODULES = ("normalize.run", "verify.run")
#: What a validate worker does on starting, before any object reaches it: SAPIEN's child first
#: (its import, about 1 s, then overlaps the worker's own imports), then the stages' imports
WORKER_PREPARE = ("verify.sapien_process:start_early", *WORKER_MODULES)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class UsageError(ValueError):
    """The command line cannot be acted on (exit code 2)."""


# --------------------------------------------------------------------------- finding objects
def file_format(path: Path) -> str | None:
    """The format of an entry file by suffix (and root element for .xml), or None."""
    suffix = path.suffix.lower()
    if suffix == ".urdf":
        return "urdf"
    if suffix in (".sdf", ".world"):
        return "sdf"
    if suffix == ".xml":
        return {"mujoco": "mjcf", "sdf": "sdf", "robot": "urdf"}.get(xml_root(path) or "")
    return None


def _name(text: str) -> str:
    return _UNSAFE.sub("-", text).strip("-.") or "objects"


def _source(name: str, fmt: str, root: Path, **settings) -> SourceConfig:
    return SourceConfig(name=_name(name), format=fmt, path=root, license=LICENSE, **settings)


def confinement_root(folder: Path, root: Path | None = None) -> Path:
    """The folder file references below `folder` are confined to: `root` when given, else the
    nearest folder at or above `folder` that is a package or model folder (holds `package.xml`
    or `model.config`), else `folder` itself."""
    if root is not None:
        return root
    for candidate in (folder, *folder.parents):
        if any((candidate / marker).is_file() for marker in PACKAGE_MARKERS):
            return candidate
    return folder


def _relative_glob(path: Path, root: Path) -> str:
    return glob.escape(path.relative_to(root).as_posix())


def _file_sources(path: Path, fmt: str | None, root: Path, **settings) -> list[SourceConfig]:
    fmt = fmt or file_format(path)
    if fmt is None:
        raise UsageError(
            f"cannot tell the format of {path} (not .urdf, .sdf, or an .xml MJCF/SDF/URDF "
            "file); pass --format"
        )
    folder = path.parent
    if fmt == "partnet_mobility":
        return [_source(folder.parent.name, fmt, folder, entry=path.name, **settings)]
    return [_source(root.name, fmt, root, entry=_relative_glob(path, root), **settings)]


def _scan(folder: Path) -> tuple[dict[str, list[str]], list[Path]]:
    """(relative paths of the entries of each format found below `folder`, entry files that are
    symlinks leaving it: never opened, each reported as a failed object)."""
    found: dict[str, list[str]] = {fmt: [] for fmt in FORMATS}
    escaping: list[Path] = []
    for directory, dirs, files in os.walk(folder):
        dirs.sort()
        here = Path(directory)
        relative = here.relative_to(folder).as_posix()
        outside = {n for n in files if n.lower().endswith(ENTRY_SUFFIXES)}
        outside = {n for n in outside if not is_inside(here / n, folder)}
        escaping += [here / n for n in sorted(outside)]
        if PARTNET_ENTRY in files and PARTNET_ENTRY not in outside:
            found["partnet_mobility"].append(folder.name if relative == "." else relative)
            continue  # the folder's other URDF files are variants of the same object
        for name in sorted(set(files) - outside):
            fmt = file_format(here / name)
            if fmt is not None:
                found[fmt].append((here / name).relative_to(folder).as_posix())
    return found, escaping


def _folder_sources(
    folder: Path, fmt: str | None, root: Path, **settings
) -> tuple[list[SourceConfig], list[Path]]:
    """(sources covering the objects below `folder`, confined to `root`, and the escaping
    entry symlinks)."""
    holds_entry = any(
        entry.is_file() and entry.name.lower().endswith(ENTRY_SUFFIXES)
        for entry in folder.iterdir()
    )
    base = folder.parent.name if holds_entry else folder.name
    prefix = "" if folder == root else _relative_glob(folder, root) + "/"
    if fmt is not None:
        include = (prefix + "*",) if prefix else ()
        return [_source(base, fmt, root, include=include, **settings)], []
    scanned, escaping = _scan(folder)
    found = {f: entries for f, entries in scanned.items() if entries}
    sources = []
    for f, entries in found.items():
        name = base if len(found) == 1 else f"{base}_{f}"
        if f == "partnet_mobility":  # object folders: their own roots, as in a library
            include = tuple(glob.escape(e) for e in entries)
            sources.append(_source(name, f, folder, include=include, **settings))
            continue
        include = tuple(prefix + glob.escape(e) for e in entries)
        sources.append(_source(name, f, root, include=include, entry="**/*", **settings))
    return sources, escaping


def candidates_for(
    paths, format: str | None = None, *, root: Path | None = None, package_roots=()
) -> list[Candidate | VerificationReport]:
    """Every object under `paths`, in order: a Candidate, or a failed report when a source
    cannot even be listed. File references are confined to `root` when given, else to the
    nearest package or model folder enclosing each path (`confinement_root`); `package_roots`
    are folders holding ROS packages for package:// references (trusted, like a sources
    file's). Raises UsageError for a missing path, a path outside `root` or an unknown format."""
    if format is not None and format not in FORMATS:
        raise UsageError(f"unknown format {format!r} (choose from {', '.join(FORMATS)})")
    if root is not None:
        root = Path(root).absolute()
        if not root.is_dir():
            raise UsageError(f"--root {root}: no such folder")
    settings = {"package_roots": tuple(Path(p).absolute() for p in package_roots)}
    for folder in settings["package_roots"]:
        if not folder.is_dir():
            raise UsageError(f"--package-root {folder}: no such folder")
    out: list[Candidate | VerificationReport] = []
    for raw in paths:
        path = Path(raw).absolute()
        if not path.exists():
            raise UsageError(f"{raw}: {broken_link(path) or 'no such file or folder'}")
        folder = path if path.is_dir() else path.parent
        if root is not None and not is_inside(folder, root):
            raise UsageError(f"{raw} is not inside --root {root}")
        confined = confinement_root(folder, root)
        try:
            if path.is_dir():
                sources, escaping = _folder_sources(path, format, confined, **settings)
            elif not is_inside(path, path.parent):
                sources, escaping = [], [path]
            else:
                sources, escaping = _file_sources(path, format, confined, **settings), []
        except OSError as exc:
            raise UsageError(f"{raw}: cannot be read ({exc.strerror or exc})") from exc
        if not sources and not escaping:
            raise UsageError(f"{raw}: no URDF, MJCF, SDF or PartNet-Mobility object found")
        out.extend(_escaping_entry(entry, folder) for entry in escaping)
        for source in sources:
            try:
                out.extend(discover(source))
            except AssetError as exc:
                out.append(_unlisted(source, exc))
    if not out:
        raise UsageError("no object to validate under " + ", ".join(str(p) for p in paths))
    return out


def _escaping_entry(entry: Path, root: Path) -> VerificationReport:
    relative = entry.relative_to(root).as_posix()
    message = f"entry file {relative} is a symlink leaving {root}; it was not read"
    check = CheckResult("path.symlink_escape", "error", False, message, element=f"file {relative}")
    return VerificationReport(
        object_id=_name(f"{root.name}__{relative}"),
        checks=[check],
        source=_name(root.name),
        source_id=relative,
        source_path=relative,
        stage="resolve",
    )


def _unlisted(source: SourceConfig, exc: AssetError) -> VerificationReport:
    check = CheckResult(exc.code, "error", False, str(exc), element=exc.path)
    return VerificationReport(
        object_id=source.name,
        checks=[check],
        source=source.name,
        format=source.format,
        stage=exc.stage,
    )


# --------------------------------------------------------------------------- one object
def validate_candidate(
    candidate: Candidate,
    out: Path,
    keep: Path | None = None,
    seconds: float | None = None,
    memory: int | None = None,
) -> VerificationReport:
    """Normalize one candidate into `out` (removed afterwards) and verify it; never raises.
    With `keep`, the normalized object folder (what would ship, passing or not) is moved there
    first, for a report that shows it (`arena validate --html`). On the main thread of a
    process (a worker process of `validate_candidates`) the object has `seconds` of wall clock
    and `memory` bytes of address space (`limits.time`, `limits.memory`; None: unlimited)."""
    started = time.perf_counter()
    candidate = with_object_allowances(candidate)
    try:
        try:
            with object_limits(seconds, memory):
                report = _checked(candidate, out, keep)
        except MemoryError:
            report = _limited(candidate, "limits.memory", "the object needed more memory")
        except ObjectTimeout:
            report = _limited(candidate, "limits.time", "the object took longer")
    except Exception as exc:  # a bug must not stop the other objects; the report says so
        report = _internal(candidate, exc)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    report.seconds = time.perf_counter() - started
    return report


def _checked(candidate: Candidate, out: Path, keep: Path | None) -> VerificationReport:
    from normalize.run import normalize_candidate
    from verify.run import verify_object

    try:
        result = normalize_candidate(candidate, out)
    except AssetError as exc:
        if out_of_memory(exc):
            raise
        report = rejection_report(candidate, exc)
        report.checks = refused_checks(candidate, exc)
        return report
    report = verify_object(result, candidate.source)
    if keep is not None:
        shutil.move(str(Path(result.urdf_path).parent), keep)
    return report


def _limited(candidate: Candidate, code: str, what: str) -> VerificationReport:
    message = f"{what} than its limit (docs/limits.md: ${OBJECT_MEMORY_ENV}, ${OBJECT_SECONDS_ENV})"
    return failed_report(candidate, CheckResult(code, "error", False, message), "limits")


def _lost(job, lost: WorkerLost) -> VerificationReport:
    """The report of an object whose worker process died or was killed (`Supervisor`)."""
    candidate, out = job[:2]
    shutil.rmtree(out, ignore_errors=True)
    code = "limits.time" if lost.kind == "time" else "limits.crash"
    message = f"{lost.message} while validating the object (docs/limits.md)"
    return failed_report(candidate, CheckResult(code, "error", False, message), "limits")


def _internal(candidate: Candidate, exc: Exception) -> VerificationReport:
    message = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}"
    return failed_report(
        candidate, CheckResult("internal.error", "error", False, message), "internal"
    )


def validated(jobs: list) -> Iterator[VerificationReport]:
    """`validate_candidate` of each (candidate, out, keep, seconds, memory) job in turn: what
    the worker processes run."""
    from verify.sapien_process import start_early

    start_early()  # first (unless WORKER_PREPARE did): SAPIEN's import overlaps the ones below
    from verify.checks.usd import load_usd

    for module in WORKER_MODULES:  # off the objects' limits; a failure recurs in each object
        with contextlib.suppress(Exception):
            importlib.import_module(module)
    load_usd()  # before the objects' memory limits apply
    for job in jobs:
        yield validate_candidate(*job)


def _pool_size(workers: int | None) -> int:
    return workers or os.cpu_count() or 1


def validate_candidates(
    candidates, workers: int | None = None, keep: Path | None = None
) -> list[VerificationReport]:
    """Reports for candidates (already-failed reports pass through), in order, computed in
    `workers` worker processes (default: every core; kept for the next call) that survive an
    object killing them: a crash is `limits.crash`, an object stuck in C code past its wall
    clock `limits.time`. With `keep`, the normalized folder of the i-th candidate is kept as
    `keep/<i>` (`validate_candidate`)."""
    seconds, memory = default_object_seconds(), default_object_memory()
    with tempfile.TemporaryDirectory(prefix="arena-validate-") as tmp:
        jobs = [
            (c, Path(tmp) / str(i), None if keep is None else Path(keep) / str(i), seconds, memory)
            for i, c in enumerate(candidates)
            if isinstance(c, Candidate)
        ]
        supervisor = shared(_pool_size(workers))
        with ThreadPoolExecutor(max(1, min(supervisor.size, len(jobs)))) as threads:
            # one job at a time to a free worker
            runs = [
                threads.submit(supervisor.run, validated, [job], (), hard_seconds(seconds), _lost)
                for job in jobs
            ]
            done = [report for run in runs for report in run.result()]
    reports = iter(done)
    return [next(reports) if isinstance(c, Candidate) else c for c in candidates]


def validate_paths(
    paths,
    format: str | None = None,
    workers: int | None = None,
    *,
    root: Path | None = None,
    package_roots=(),
    keep: Path | None = None,
) -> list[VerificationReport]:
    """Validate every object under `paths` (files or folders); raises UsageError. root,
    package_roots: as in `candidates_for`; `keep`: see `validate_candidates`."""
    shared(_pool_size(workers)).start(1, WORKER_PREPARE)  # importing while objects are found
    candidates = candidates_for(paths, format, root=root, package_roots=package_roots)
    return validate_candidates(candidates, workers, keep)


# --------------------------------------------------------------------------- output
def summary(reports: list[VerificationReport], strict: bool, seconds: float) -> dict:
    counts = Counter(r.status for r in reports)
    failing = Counter(c.id for r in reports for c in r.failures)
    warned = Counter(w for r in reports for w in r.warnings)
    return {
        "objects": len(reports),
        "pass": counts.get("pass", 0),
        "warn": counts.get("warn", 0),
        "fail": counts.get("fail", 0),
        "strict": strict,
        "exit_code": exit_code(reports, strict),
        "seconds": round(seconds, 3),
        "failing_checks": dict(sorted(failing.items())),
        "warning_checks": dict(sorted(warned.items())),
    }


def exit_code(reports: list[VerificationReport], strict: bool) -> int:
    bad = {"fail", "warn"} if strict else {"fail"}
    return 1 if any(r.status in bad for r in reports) else 0


def report_document(reports: list[VerificationReport], strict: bool, seconds: float) -> dict:
    """The JSON document of a run (schemas/validation_report.schema.json)."""
    return {
        "summary": summary(reports, strict, seconds),
        "objects": [r.as_dict() for r in reports],
    }


def problem_lines(checks: list[CheckResult]) -> list[str]:
    """One line per check, grouped per source file (in order of first appearance):
    `file:line  element  code  message  (hint)`; a check of no file leads with its element."""
    by_file: dict[str | None, list[CheckResult]] = {}
    for check in checks:
        by_file.setdefault(check.file, []).append(check)
    lines = []
    for file, group in by_file.items():
        for check in group:
            where = [f"{file}:{check.line}" if check.line else file] if file else []
            parts = [*where, check.element or "", check.id, check.message]
            line = "  ".join(p for p in parts if p)
            lines.append(line + (f"  ({check.hint})" if check.hint else ""))
    return lines


def print_table(reports: list[VerificationReport], strict: bool, seconds: float) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    colours = {"pass": "green", "warn": "yellow", "fail": "red"}
    table = Table(show_lines=False)
    table.add_column("object", overflow="fold")
    table.add_column("verdict")
    table.add_column("checks (failing first, then warnings; per file)", overflow="fold")
    for report in reports:
        listed = report.failures + [
            c for c in report.checks if c.counts and c.severity == "warning"
        ]
        lines = problem_lines(listed[:MAX_LISTED])
        if len(listed) > MAX_LISTED:
            lines.append(f"... and {len(listed) - MAX_LISTED} more (--json lists every one)")
        waived = sum(1 for c in report.checks if c.waived)
        if waived:
            lines.append(f"({waived} check(s) waived by allowances)")
        verdict = Text(report.status, style=colours[report.status])
        # names come from the files: plain text, never read as rich markup
        table.add_row(Text(report.object_id), verdict, Text("\n".join(lines)))
    console = Console(highlight=False)
    console.print(table)
    s = summary(reports, strict, seconds)
    console.print(
        f"{s['objects']} object(s): {s['pass']} pass, {s['warn']} warn, {s['fail']} fail "
        f"in {seconds:.1f} s" + (" (--strict: warnings fail)" if strict else "")
    )


def validate_command(
    paths,
    *,
    format=None,
    json_output: bool = False,
    strict: bool = False,
    root: Path | None = None,
    package_roots=(),
    report_writer=None,
) -> int:
    """`arena validate`: validate, print, return the exit code (0, 1 or 2). `report_writer`
    (`arena validate --html`): called as report_writer(reports, folders, strict, seconds) with
    each report's normalized object folder (None when it was not normalized) before those
    folders are removed."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="arena-validate-keep-") as keep:
        try:
            reports = validate_paths(
                paths,
                format=format,
                root=root,
                package_roots=package_roots,
                keep=Path(keep) if report_writer else None,
            )
        except UsageError as exc:
            print(f"arena validate: error: {exc}", file=sys.stderr)
            return 2
        seconds = time.perf_counter() - started
        if report_writer is not None:
            folders = [Path(keep) / str(i) for i in range(len(reports))]
            report_writer(reports, [f if f.is_dir() else None for f in folders], strict, seconds)
    if json_output:
        import schemas

        document = report_document(reports, strict, seconds)
        schemas.validate(document, "validation_report")
        print(json.dumps(document, indent=1))
    else:
        print_table(reports, strict, seconds)
    return exit_code(reports, strict)
