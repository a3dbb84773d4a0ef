"""Reading an untrusted file without hanging: regular files only, never past a size limit.

A FIFO, a device node or a socket inside a source root would block a plain `open` or `read`
forever (or stream without end, like /dev/zero), and a sparse file can claim 100 GB while
taking no disk space. Every file the pipeline reads from a source goes through `read_regular`:
the path is checked to be a regular file (stat, following symlinks; the caller confines the
path to its root), opened with O_NONBLOCK (an open never waits for a FIFO writer), checked again
on the open descriptor (fstat: the file cannot be swapped in between), and read up to its limit.
"""

from __future__ import annotations

import difflib
import errno
import hashlib
import os
import re
import stat
from pathlib import Path

from normalize import inputs
from normalize.errors import AssetError

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def regular_status(path: str | os.PathLike) -> os.stat_result | None:
    """`os.stat(path)` if it is a regular file, None when it does not exist; AssetError
    `file.not_regular` (or `file.is_directory`) for anything else."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _unreadable(path, exc, "parse") from exc
    _check_mode(path, st.st_mode, "parse")
    return st


def _check_mode(path, mode: int, stage: str, element: str | None = None) -> None:
    if stat.S_ISREG(mode):
        return
    name = Path(path).name
    raise AssetError(
        f"{name} is {kind_of(mode)}, not a regular file",
        code="file.is_directory" if stat.S_ISDIR(mode) else "file.not_regular",
        stage=stage,
        path=str(path),
        element=element,
    )


def _unreadable(path, exc: OSError, stage: str, element: str | None = None) -> AssetError:
    return AssetError(
        f"cannot read file: {exc.strerror or exc}",
        code="file.unreadable",
        stage=stage,
        path=str(path),
        element=element,
    )


def read_regular(
    path: str | os.PathLike,
    max_bytes: int,
    *,
    too_large: str = "file.too_large",
    stage: str = "parse",
    element: str | None = None,
    what: str = "file",
) -> bytes:
    """The bytes of the regular file `path`, at most `max_bytes` of them.

    AssetError: `file.is_directory` / `file.not_regular` for anything but a regular file,
    `too_large` when it is (or grows while read) above `max_bytes`, `file.unreadable` when it
    cannot be read. FileNotFoundError is raised as it is (callers have their own code)."""
    name = Path(path).name
    try:
        _check_mode(path, os.stat(path).st_mode, stage, element)  # before any open
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (AssetError, FileNotFoundError):
        raise
    except OSError as exc:
        raise _unreadable(path, exc, stage, element) from exc
    try:
        st = os.fstat(fd)
        _check_mode(path, st.st_mode, stage, element)  # the file actually opened
        if st.st_size > max_bytes:
            raise AssetError(
                f"{what} {name} is {st.st_size} bytes, above the limit of {max_bytes}",
                code=too_large,
                stage=stage,
                path=str(path),
                element=element,
            )
        chunks, total = [], 0
        while total <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except AssetError:
        raise
    except OSError as exc:
        raise _unreadable(path, exc, stage, element) from exc
    finally:
        os.close(fd)
    if total > max_bytes:
        raise AssetError(
            f"{what} {name} is above the limit of {max_bytes} bytes",
            code=too_large,
            stage=stage,
            path=str(path),
            element=element,
        )
    data = b"".join(chunks)
    if inputs.active():  # the cache key holds what was read (see normalize.inputs)
        inputs.record_read(path, hashlib.sha256(data).hexdigest())
    return data


def read_head(path: str | os.PathLike, n: int) -> bytes | None:
    """The first `n` bytes of a regular file (to sniff its format), None for anything else or
    a file that cannot be read."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        return os.read(fd, n) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except OSError:
        return None
    finally:
        os.close(fd)


def empty_folder(path: str | os.PathLike) -> bool:
    """Whether `path` is a folder with nothing in it (False when it cannot be listed: whoever
    lists it next says why)."""
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except OSError:
        return False


def broken_link(path: str | os.PathLike) -> str | None:
    """Why `path` cannot be followed when a symbolic link on its way leads nowhere: "is a
    symbolic link loop", or "is a symbolic link to X, which does not exist"; None when it
    resolves or plainly does not exist. (pathlib's `exists()` says False for both, and its
    `resolve()` raises RuntimeError for a loop.)"""
    try:
        os.stat(path)
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symbolic link loop"
        if os.path.islink(path):
            return f"is a symbolic link to {os.readlink(path)!r}, which does not exist"
        return None


SNIFF_BYTES = 4096
_COMMENT = re.compile(rb"<!--.*?(-->|$)", re.S)
_TAG = re.compile(rb"<([?!]?)([A-Za-z_][\w.:-]*)")


def xml_root(path: str | os.PathLike) -> str | None:
    """The name of the first element of an XML file (read from its first few KiB, never by a
    blocking open), without a namespace prefix; None when there is none."""
    head = read_head(path, SNIFF_BYTES)
    if head is None:
        return None
    for match in _TAG.finditer(_COMMENT.sub(b"", head)):
        if not match.group(1):
            return match.group(2).decode("ascii", "replace").split(":")[-1]
    return None


def nearest_file_hint(missing: Path, base: Path) -> str | None:
    """The hint "did you mean X?", X the existing file of `missing`'s folder whose name (without
    its suffix; one with the same suffix preferred) is closest to its name, written relative
    to `base` (the folder the reference is relative to); None when no name is close."""
    try:
        names = sorted(entry.name for entry in os.scandir(missing.parent) if entry.is_file())
    except OSError:
        return None
    stems: dict[str, list[str]] = {}
    for name in names:
        stems.setdefault(Path(name).stem, []).append(name)
    close = difflib.get_close_matches(missing.stem, stems, n=1, cutoff=0.6)
    if not close:
        return None
    options = stems[close[0]]
    suffix = missing.suffix.lower()
    found = next((n for n in options if Path(n).suffix.lower() == suffix), options[0])
    return f"did you mean {Path(os.path.relpath(missing.parent / found, base)).as_posix()}?"
