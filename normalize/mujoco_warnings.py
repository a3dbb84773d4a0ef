"""MuJoCo's warnings go to the caller instead of a MUJOCO_LOG.TXT file in the working directory.

MuJoCo's default warning handler appends to MUJOCO_LOG.TXT in the current directory, which would
write outside a build's output folder, and its Python bindings raise some warnings (e.g. from
the OBJ decoder) as Python warnings. `captured()` collects both for the code that compiled.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from contextvars import ContextVar

_collected: ContextVar[list[str] | None] = ContextVar("arena_mujoco_warnings", default=None)


def _handler(message: str) -> None:
    collected = _collected.get()
    if collected is not None:
        collected.append(message.strip())


@contextlib.contextmanager
def captured(mujoco) -> Iterator[list[str]]:
    """Inside the block, MuJoCo warnings of this thread are appended to the yielded list."""
    if mujoco.get_mju_user_warning() is not _handler:
        mujoco.set_mju_user_warning(_handler)
    collected: list[str] = []
    token = _collected.set(collected)
    try:
        with warnings.catch_warnings(record=True) as raised:
            warnings.simplefilter("always")
            yield collected
        collected.extend(str(w.message).strip() for w in raised)
    finally:
        _collected.reset(token)
