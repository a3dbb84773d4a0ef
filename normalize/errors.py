"""Typed errors. Every way an asset can be refused is an `AssetError` with a stable code.

A build turns each `AssetError` into one row of `rejects.parquet` (stage, code, message), so codes
are part of the public interface: add new ones, never rename old ones.
"""

from __future__ import annotations

import errno
import os


class AssetError(Exception):
    """An asset cannot enter the suite.

    stage: the stage that refused it (discover, parse, resolve, model, normalize, mesh, ...)
    code: stable dotted identifier, e.g. ``xml.malformed`` or ``model.cycle``
    path: the file concerned, when there is one
    element: the link, joint or XML element concerned, when there is one
    line: the line of that element in `path` (lxml's `sourceline`), when known
    hint: how to fix it, when one is known (e.g. "did you mean meshes/base.obj?")
    target: the file a reference names when it is not `path` (a missing mesh, a file outside
    the root), for hints
    """

    stage = "normalize"
    code = "asset.invalid"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        stage: str | None = None,
        path: str | None = None,
        element: str | None = None,
        line: int | None = None,
        hint: str | None = None,
        target: str | None = None,
    ):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if stage is not None:
            self.stage = stage
        self.path = path
        self.element = element
        self.line = line
        self.hint = hint
        self.target = target

    def __str__(self) -> str:
        line = self.line and f"line {self.line}"
        where = ", ".join(
            part for part in (self.path and f"file {self.path}", line, self.element) if part
        )
        return f"[{self.code}] {self.message}" + (f" ({where})" if where else "")


class ModelError(AssetError):
    """The object violates an invariant of the canonical model."""

    stage = "model"
    code = "model.invalid"


class CycleError(ModelError):
    code = "model.cycle"


class ClosedLoopError(ModelError):
    """A link has two parent joints: the joints close a kinematic loop."""

    code = "model.closed_loop"


class RootError(ModelError):
    """No root link, or more than one."""

    code = "model.root"


class DuplicateNameError(ModelError):
    code = "model.duplicate_name"


class UnknownLinkError(ModelError):
    code = "model.unknown_link"


class NonFiniteError(ModelError):
    code = "model.non_finite"


class ZeroAxisError(ModelError):
    code = "model.zero_axis"


class AxisNotUnitError(ModelError):
    code = "model.axis_not_unit"


class JointTypeError(ModelError):
    code = "model.joint_type"


class LimitError(ModelError):
    code = "model.limits"


class MimicError(ModelError):
    code = "model.mimic"


class MimicTargetError(MimicError):
    """A joint mimics a joint that does not exist."""

    code = "model.mimic_target"


class MimicLoopError(MimicError):
    """Mimic couplings that lead back to where they started."""

    code = "model.mimic_loop"


class InertialError(ModelError):
    code = "model.inertial"


#: The errors of the disk being written to, and how a message names them. Only writes raise the
#: first three; an I/O error counts as a write failure when the file is one being written.
WRITE_ERRNOS = {
    errno.ENOSPC: "disk full",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EIO: "I/O error",
}


#: The errors only a write raises: a failure of the disk wherever it comes from.
DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)


class WriteFailed(Exception):
    """Writing the release, its staging folder or the cache failed because of the disk (full,
    over quota, read-only, an I/O error). No object is at fault: the build stops and publishes
    nothing, and no object is recorded as rejected."""

    def __init__(self, reason: str, path: str | None):
        super().__init__(reason, path)
        self.reason = reason
        self.path = path

    def __str__(self) -> str:
        return f"{self.reason} writing {self.path or 'the release'}"


def write_failure(exc: OSError, written: tuple = (), where=None) -> WriteFailed | None:
    """The WriteFailed an OSError stands for, None when it is not the disk's: ENOSPC, EDQUOT or
    EROFS, or EIO on a path inside one of the folders being `written`. It names the file of the
    error, else `where` (what was being written: a write on an open file names none)."""
    reason = WRITE_ERRNOS.get(exc.errno)
    if reason is None:
        return None
    path = exc.filename if exc.filename is not None else where
    if exc.errno == errno.EIO:
        inside = path is not None and any(
            os.path.abspath(path).startswith(os.path.abspath(root) + os.sep)
            for root in written
            if root is not None
        )
        if not inside:
            return None
    return WriteFailed(reason, None if path is None else os.fsdecode(path))
