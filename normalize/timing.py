"""Stage seconds of the object being computed, in that object's own record.

`stage_record()` opens an object's record; inside it, every `timed(stage)` block adds its
seconds to `stage`, less the seconds of the blocks nested in it (mesh work inside the
convention counts to `meshes` or `inertia`, not twice). The record and the nesting live in
context variables, so objects computed at once in threads of one process (a Dask worker) each
keep their own. Outside a record, `timed` only runs its block.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_record: ContextVar[dict[str, float] | None] = ContextVar("stage_record", default=None)
_nested: ContextVar[list[float] | None] = ContextVar("nested_seconds", default=None)


@contextmanager
def stage_record() -> Iterator[dict[str, float]]:
    """A new record of stage seconds, the one `timed` adds to inside the block."""
    record: dict[str, float] = {}
    token = _record.set(record)
    try:
        yield record
    finally:
        _record.reset(token)


@contextmanager
def timed(stage: str) -> Iterator[None]:
    """Add the block's own seconds (nested `timed` blocks excluded) to `stage`."""
    record = _record.get()
    if record is None:
        yield
        return
    inner = [0.0]
    token = _nested.set(inner)
    started = time.perf_counter()
    try:
        yield
    finally:
        spent = time.perf_counter() - started
        _nested.reset(token)
        record[stage] = record.get(stage, 0.0) + spent - inner[0]
        outer = _nested.get()
        if outer is not None:
            outer[0] += spent
