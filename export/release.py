"""Assembling a release folder atomically: lock, staging folder, checksums, content hash,
release.json and CHANGELOG.md (the dataset card is `export.card`).

A build writes everything into a staging folder next to `--out` (`.<name>.build-<random>`) and
renames it into place only when complete, so an interrupted or failed build leaves an earlier
release at `--out` untouched. A lock file next to `--out` (`.<name>.lock`, held with `flock`,
released by the kernel even when the process is killed) refuses a second concurrent build into
the same folder.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import os
import shutil
import socket
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import schemas
from export.digests import sha256_file
from normalize.paths import is_inside
from previews import PREVIEW_FOLDER

RELEASE_FORMAT = "articulate-arena-release/1"
RELEASE_JSON = "release.json"
CHECKSUMS = "checksums.sha256"


class ReleaseError(RuntimeError):
    """The release cannot be written (bad --out, bad --previous, a held lock...)."""


class BuildLocked(ReleaseError):
    """Another build holds the lock of this output folder."""


class ReleaseExists(ReleaseError):
    """--out already holds a release and the build was not asked to replace it."""


# --------------------------------------------------------------------------- lock and staging
def _sibling(out: Path, suffix: str) -> Path:
    return out.parent / f".{out.name}.{suffix}"


def _acquire(lock_path: Path) -> int | None:
    """An open descriptor of `lock_path` holding its flock, or None when another process holds
    it. Retries when the file was removed by a finishing build between open and lock."""
    while True:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        try:
            if os.stat(lock_path).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)  # we locked a file that is no longer the lock file: try again


@contextlib.contextmanager
def build_lock(out: Path) -> Iterator[None]:
    """Hold the lock of output folder `out` for the duration of the block, or raise
    `BuildLocked` naming the build that holds it. The lock file is removed when the block ends
    (a killed build leaves it behind, unlocked, and the next build reuses it)."""
    out = Path(out).absolute()
    out.parent.mkdir(parents=True, exist_ok=True)
    lock_path = _sibling(out, "lock")
    fd = _acquire(lock_path)
    if fd is None:
        try:
            holder = lock_path.read_text(errors="replace").strip() or "unknown process"
        except OSError:
            holder = "unknown process"
        raise BuildLocked(
            f"another build is already writing {out} ({holder}); wait for it to finish or "
            "choose another --out"
        )
    try:
        os.ftruncate(fd, 0)
        started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}, since {started}\n".encode())
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock_path)  # while still holding it: see _acquire
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def check_out(out: Path) -> None:
    """Refuse an --out that exists and is not a release (never replace someone's folder)."""
    out = Path(out)
    if not out.exists():
        return
    if not out.is_dir():
        raise ReleaseError(f"--out {out} exists and is not a folder")
    if any(out.iterdir()) and not (out / RELEASE_JSON).is_file():
        raise ReleaseError(
            f"--out {out} is a non-empty folder without {RELEASE_JSON}; refusing to replace "
            "something that is not a release"
        )


def check_replace(out: Path, replace: bool) -> None:
    """Refuse to replace the release at `out` unless `replace` (`--replace`)."""
    out = Path(out)
    if replace or not (out / RELEASE_JSON).is_file():
        return
    try:
        version = json.loads((out / RELEASE_JSON).read_text(encoding="utf-8"))["version"]
    except (OSError, ValueError, KeyError, TypeError):
        version = "of unknown version"
    raise ReleaseExists(
        f"--out {out} already holds release {version}; nothing was built. Pass --replace to "
        "replace it, or choose another --out (e.g. releases/<version>)"
    )


def recover(out: Path) -> None:
    """Clean up after builds that were killed (call while holding the lock): remove their
    staging folders and finish or undo a replacement that was cut short."""
    out = Path(out).absolute()
    for stale in out.parent.glob(f".{out.name}.build-*"):
        shutil.rmtree(stale, ignore_errors=True)
    replaced = _sibling(out, "replaced")
    if replaced.exists():
        if out.exists():
            shutil.rmtree(replaced, ignore_errors=True)
        else:
            os.rename(replaced, out)


def new_staging(out: Path) -> Path:
    """An empty staging folder next to `out` (same file system, so the final rename is atomic)."""
    out = Path(out).absolute()
    staging = _sibling(out, f"build-{uuid.uuid4().hex[:12]}")
    staging.mkdir(parents=True)
    return staging


#: Test-only callback called with the name of each `pause_point` a build reaches; None in use.
pause_hook: Callable[[str], None] | None = None


def pause_point(name: str) -> None:
    """A named point of a build where a test can hold it (tests/pausing_build.py installs
    `pause_hook` in the build subprocesses of tests/test_faults_kill.py). Points: `discover` (a
    source's candidates found, none computed), `assemble` (manifests written in the staging
    folder, the rest of the release not), `publish` (an earlier release being replaced: swapped
    out but not yet deleted, or moved aside with the new one not yet in its place)."""
    if pause_hook is not None:
        pause_hook(name)


_RENAME_EXCHANGE = 2  # renameat2 flag (Linux 3.15+): swap two paths atomically
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders in one atomic step (Linux renameat2); False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    done = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return done == 0


def publish(staging: Path, out: Path) -> None:
    """Move the finished staging folder to `out`, replacing an earlier release there. On Linux
    the two are swapped in one atomic step, so `out` always holds a complete release; elsewhere
    the earlier release is moved aside first (`recover` puts it back if the build dies
    between the two renames)."""
    out = Path(out).absolute()
    if not out.exists():
        os.rename(staging, out)
    elif _exchange(staging, out):
        pause_point("publish")  # the new release in place, the earlier one not yet deleted
        shutil.rmtree(staging, ignore_errors=True)  # now holding the earlier release
    else:
        replaced = _sibling(out, "replaced")
        os.rename(out, replaced)
        pause_point("publish")
        os.rename(staging, out)
        shutil.rmtree(replaced, ignore_errors=True)


# --------------------------------------------------------------------------- checksums
def sorted_files(root: Path, under: str | None = None) -> Iterator[str]:
    """'/'-separated paths of the regular files under `root` (or under its folder `under`),
    relative to `root`, in the order of their sorted path strings, one folder at a time: a
    folder's entries sorted by name, with "/" after a folder's name (so "a.txt" before "a/b",
    as a sort of whole paths puts them)."""
    start = Path(root) / under if under else Path(root)
    yield from _sorted_files(start, f"{under}/" if under else "")


def _sorted_files(folder: Path, prefix: str) -> Iterator[str]:
    with os.scandir(folder) as entries:  # scandir: 20,000 object folders in seconds
        keyed = sorted(((e.name + "/" if e.is_dir() else e.name), e) for e in entries)
    for key, entry in keyed:
        if key.endswith("/"):
            yield from _sorted_files(Path(entry.path), prefix + key)
        else:
            yield prefix + key


def write_checksums(root: Path, known: Mapping[str, str] | None = None) -> None:
    """Write `checksums.sha256` (sha256sum format, sorted) for every file under `root` but
    itself, line by line. `known.get(path)` gives digests already computed (relative path ->
    sha256); the other files are hashed."""
    known = known or {}
    with open(Path(root) / CHECKSUMS, "w", encoding="utf-8", newline="\n") as out:
        for name in sorted_files(root):
            if name != CHECKSUMS:
                out.write(f"{known.get(name) or sha256_file(Path(root, name))}  {name}\n")


def _is_content(name: str) -> bool:
    """Whether a file counts in the content hash (`content_hash`)."""
    return (
        name.startswith("objects/") and name.split("/")[2:3] != [PREVIEW_FOLDER]
    ) or name.startswith("manifest/")


def content_hash(root: Path, known: Mapping[str, str] | None = None) -> str:
    """sha256 over the `<sha256>  <path>` lines (sorted) of the manifests and the object files
    of the release folder `root` (not release.json, the card, plots or the changelog, so it
    depends on content only, never on when the release was built). Previews are left out too:
    their pixels depend on the GL driver that rendered them, not only on the object
    (checksums.sha256 still lists them). `known.get(path)` gives digests already computed; the
    other files are hashed, one at a time."""
    known = known or {}
    listing = hashlib.sha256()
    for folder in ("manifest", "objects"):  # in sorted order
        if (Path(root) / folder).is_dir():
            for name in filter(_is_content, sorted_files(root, folder)):
                digest = known.get(name) or sha256_file(Path(root, name))
                listing.update(f"{digest}  {name}\n".encode())
    return listing.hexdigest()


def verify_checksums(root: Path) -> list[str]:
    """Files whose content does not match `checksums.sha256` (empty when the release is intact)."""
    return [name for name, _ in integrity_problems(root, checksum_listing(root))]


class IntegrityError(ReleaseError):
    """Files a command reads from a release no longer match its `checksums.sha256`."""


def checksum_listing(root: Path) -> dict[str, str]:
    """{relative path: sha256} of a release's `checksums.sha256`; ReleaseError when it cannot be
    read or a line is not `<sha256>  <path>`."""
    path = Path(root) / CHECKSUMS
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, ValueError) as exc:
        raise ReleaseError(f"{root} is not a release: cannot read {path}: {exc}") from exc
    listing = {}
    for number, line in enumerate(lines, 1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64 or not name:
            raise ReleaseError(f"{path}, line {number}: not '<sha256>  <path>'")
        listing[name] = digest
    return listing


def integrity_problems(root: Path, expected: Mapping[str, str]) -> list[tuple[str, str]]:
    """(path, "missing" or "modified") of every file of `expected` (path -> sha256, a part of
    `checksum_listing(root)`) that is not in the release as its checksum says."""
    problems = []
    for name, digest in sorted(expected.items()):
        path = Path(root) / name
        if not is_inside(path, root) or not path.is_file():
            problems.append((name, "missing"))
        elif sha256_file(path) != digest:
            problems.append((name, "modified"))
    return problems


def unlisted_files(root: Path, listing: Mapping[str, str]) -> list[str]:
    """Files in the release folder that `checksums.sha256` does not list (added since)."""
    found = []
    for folder, _, files in os.walk(root):
        relative = os.path.relpath(folder, root)
        prefix = "" if relative == "." else relative.replace(os.sep, "/") + "/"
        found += [
            prefix + f for f in files if prefix + f not in listing and prefix + f != CHECKSUMS
        ]
    return sorted(found)


def containing_object(path: Path) -> tuple[Path, str] | None:
    """(release root, object id) when `path` is an object of a release (its folder
    `objects/<id>` or a file in it) whose root holds a checksums.sha256; None otherwise."""
    path = Path(path).absolute()
    for folder in (path, *path.parents):
        if folder.parent.name == "objects" and (folder.parent.parent / CHECKSUMS).is_file():
            return folder.parent.parent, folder.name
    return None


def check_integrity(root: Path, selected, *, accept_modified: bool = False) -> list[str]:
    """Check the files `selected(name)` picks of a release against `checksums.sha256` before a
    command reads them: IntegrityError naming them when any is missing or modified, unless
    `accept_modified`, which returns them as warnings instead."""
    listing = checksum_listing(root)
    problems = integrity_problems(root, {n: d for n, d in listing.items() if selected(n)})
    said = [f"{name} is {what} (it does not match {CHECKSUMS})" for name, what in problems]
    if said and not accept_modified:
        shown = "; ".join(said[:5]) + (f"; and {len(said) - 5} more" if len(said) > 5 else "")
        raise IntegrityError(
            f"release {root} has been changed since it was built: {shown}. "
            "Pass --accept-modified to read it anyway"
        )
    return said


# --------------------------------------------------------------------------- release.json
def default_version(today: dt.date | None = None) -> str:
    """Date-based version, e.g. 2026.08.05."""
    return (today or dt.datetime.now(dt.timezone.utc).date()).strftime("%Y.%m.%d")


def _version_of(folder: Path) -> str | None:
    try:
        return json.loads((folder / RELEASE_JSON).read_text(encoding="utf-8"))["version"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def taken_versions(out: Path, previous: Path | None = None) -> set[str]:
    """Versions a new release at `out` must not reuse: the release at `out` (which it would
    replace), `previous`, and the releases beside `out` (e.g. the other folders of releases/)."""
    out = Path(out).absolute()
    folders = [out, *([Path(previous)] if previous else [])]
    if out.parent.is_dir():
        folders += [p for p in out.parent.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return {v for v in map(_version_of, folders) if v is not None}


def unique_version(taken: set[str], today: dt.date | None = None) -> str:
    """Today's date-based version, or `<date>-2`, `<date>-3`... when that one is taken."""
    base = default_version(today)
    version, n = base, 1
    while version in taken:
        n += 1
        version = f"{base}-{n}"
    return version


def read_release(folder: Path) -> dict:
    """release.json of an existing release, validated; `ReleaseError` if it is not a release."""
    path = Path(folder) / RELEASE_JSON
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReleaseError(f"{folder} is not a release: cannot read {path}: {exc}") from exc
    try:
        schemas.validate(data, "release", source=str(path))
    except schemas.SchemaValidationError as exc:
        raise ReleaseError(str(exc)) from exc
    return data


def write_release_json(root: Path, info: dict) -> dict:
    """Validate `info` against schemas/release.schema.json and write it (created_at set now)."""
    info = {**info, "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    schemas.validate(info, "release", source=RELEASE_JSON)
    (root / RELEASE_JSON).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return info


# --------------------------------------------------------------------------- changelog
@dataclass
class Changes:
    added: list[str]
    removed: list[str]
    modified: list[str]
    recategorized: list[tuple[str, str, str]]  # object_id, old category, new category


def _object_index(objects: list[dict]) -> dict[str, dict]:
    return {o["object_id"]: o for o in objects}


def _category(row: dict) -> str:
    return f"{row['supercategory']}/{row['category']}"


def compare(previous: list[dict], current: list[dict]) -> Changes:
    """Objects added, removed, modified by content (URDF or assets) and re-categorized."""
    old, new = _object_index(previous), _object_index(current)
    both = sorted(set(old) & set(new))
    return Changes(
        added=sorted(set(new) - set(old)),
        removed=sorted(set(old) - set(new)),
        modified=[
            i
            for i in both
            if (old[i]["urdf_sha256"], old[i]["assets_sha256"])
            != (new[i]["urdf_sha256"], new[i]["assets_sha256"])
        ],
        recategorized=[
            (i, _category(old[i]), _category(new[i]))
            for i in both
            if _category(old[i]) != _category(new[i])
        ],
    )


#: Columns of an earlier release's objects manifest that the changelog compares.
PREVIOUS_COLUMNS = ("object_id", "category", "supercategory", "urdf_sha256", "assets_sha256")


def read_objects(folder: Path) -> list[dict]:
    """The objects manifest of a release as a list of rows of the columns the changelog
    compares (PREVIOUS_COLUMNS); `ReleaseError` when it cannot be read or lacks one of them
    (checked before a build, for --previous)."""
    path = Path(folder) / "manifest" / "objects.parquet"
    try:
        table = pq.read_table(str(path))
    except (OSError, pa.ArrowException) as exc:
        raise ReleaseError(f"{folder} is not a release: cannot read {path}: {exc}") from exc
    missing = [c for c in PREVIOUS_COLUMNS if c not in table.column_names]
    if missing:
        raise ReleaseError(f"{folder} is not a complete release: {path} has no {missing}")
    rows = table.select(list(PREVIOUS_COLUMNS)).to_pylist()
    if any(not isinstance(r["object_id"], str) for r in rows):
        raise ReleaseError(f"{folder} is not a complete release: {path} has rows without id")
    return rows


def changelog_markdown(
    version: str, current: list[dict], previous: list[dict] | None, previous_version: str | None
) -> str:
    """CHANGELOG.md text: counts and the object ids in each group (no dates)."""
    lines = ["# Changelog", ""]
    if previous is None:
        lines += [
            f"## {version}",
            "",
            f"First release: {len(current)} objects. No earlier release was given (--previous), "
            "so nothing is compared.",
            "",
        ]
        return "\n".join(lines)
    ch = compare(previous, current)
    new_by_id = _object_index(current)
    lines += [
        f"## {version} (against {previous_version})",
        "",
        f"- added: {len(ch.added)}",
        f"- removed: {len(ch.removed)}",
        f"- modified (URDF or asset content changed): {len(ch.modified)}",
        f"- re-categorized: {len(ch.recategorized)}",
        "",
    ]
    groups = [
        ("Added", [f"`{i}` ({new_by_id[i]['category']})" for i in ch.added]),
        ("Removed", [f"`{i}`" for i in ch.removed]),
        ("Modified", [f"`{i}`" for i in ch.modified]),
        ("Re-categorized", [f"`{i}`: {a} -> {b}" for i, a, b in ch.recategorized]),
    ]
    for title, items in groups:
        if items:
            lines += [f"### {title} ({len(items)})", "", *[f"- {item}" for item in items], ""]
    return "\n".join(lines)
