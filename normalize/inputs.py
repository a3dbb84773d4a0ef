"""Which files an object depends on.

Every read of a source file (`safe_xml.read_limited`, mesh and texture loading) and every resolved
reference (`paths.resolve_reference`, whether or not the file exists) is recorded while a
`recording()` block is active. The build keys its cache on the content of exactly these files, so
editing one mesh recomputes exactly the objects that use it, and adding a missing mesh recomputes
the object that was rejected for lacking it.

A file read through `normalize.files.read_regular` is recorded with the sha256 of the bytes
read (`record_read`): the cache key then holds what was processed, not what the file holds when
the object is done, so a file edited during a build cannot make the cache keep a stale result.
A file read twice with different content is recorded as changed (digest None).

A cache that serves a result without doing the reads behind it (the mesh store) collects them
on a miss (`noting()`, whether or not a `recording()` block is active), keeps them with the
result and records them again on every hit: an object's inputs never depend on what a
long-lived process happened to compute before.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextvars import ContextVar


class Recorded(set):
    """The absolute paths an object depends on, and `digests`: path -> sha256 of the bytes
    read from it (None when two reads differed)."""

    def __init__(self):
        super().__init__()
        self.digests: dict[str, str | None] = {}


_active: ContextVar[Recorded | None] = ContextVar("arena_recorded_inputs", default=None)
_noting: ContextVar[tuple[Recorded, ...]] = ContextVar("arena_noted_inputs", default=())


def record(path: str | os.PathLike) -> None:
    """Note that the current object depends on `path` (absolute)."""
    path = os.path.abspath(path)
    for inputs in (*_noting.get(), _active.get()):
        if inputs is not None:
            inputs.add(path)


def record_read(path: str | os.PathLike, digest: str) -> None:
    """Note that the current object read `path` and what the bytes it read hash to."""
    path = os.path.abspath(path)
    for inputs in (*_noting.get(), _active.get()):
        if inputs is not None:
            inputs.add(path)
            known = inputs.digests.get(path, digest)
            inputs.digests[path] = digest if known == digest else None


def active() -> bool:
    """Whether a `recording()` or `noting()` block is collecting (reads then hash what they
    read)."""
    return _active.get() is not None or bool(_noting.get())


@contextlib.contextmanager
def recording() -> Iterator[Recorded]:
    """Collect the absolute paths recorded inside the block into the yielded set."""
    inputs = Recorded()
    token = _active.set(inputs)
    try:
        yield inputs
    finally:
        _active.reset(token)


@contextlib.contextmanager
def noting() -> Iterator[Recorded]:
    """Also collect what is recorded inside the block into the yielded set (it goes on to the
    active `recording()` block, if any)."""
    noted = Recorded()
    token = _noting.set((*_noting.get(), noted))
    try:
        yield noted
    finally:
        _noting.reset(token)


@contextlib.contextmanager
def unrecorded() -> Iterator[None]:
    """Record nothing inside the block: for the pipeline's own files (its packaged data, a
    temporary file a check writes and reads back), which are not inputs of the object and
    would otherwise make its inputs depend on where the code is and on which object a process
    computed first."""
    active_token, noting_token = _active.set(None), _noting.set(())
    try:
        yield
    finally:
        _noting.reset(noting_token)
        _active.reset(active_token)
