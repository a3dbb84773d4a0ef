"""Which files an object depends on.

Every read of a source file (`safe_xml.read_limited`, mesh and texture loading) and every resolved
reference (`paths.resolve_reference`, whether or not the file exists) is recorded while a
`recording()` block is active. The build keys its cache on the content of exactly these files, so
editing one mesh recomputes exactly the objects that use it, and adding a missing mesh recomputes
the object that was rejected for lacking it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextvars import ContextVar

_active: ContextVar[set[str] | None] = ContextVar("arena_recorded_inputs", default=None)


def record(path: str | os.PathLike) -> None:
    """Note that the current object depends on `path` (absolute)."""
    inputs = _active.get()
    if inputs is not None:
        inputs.add(os.path.abspath(path))


@contextlib.contextmanager
def recording() -> Iterator[set[str]]:
    """Collect the absolute paths recorded inside the block into the yielded set."""
    inputs: set[str] = set()
    token = _active.set(inputs)
    try:
        yield inputs
    finally:
        _active.reset(token)
