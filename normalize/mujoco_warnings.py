"""MuJoCo's warnings go to the caller instead of a MUJOCO_LOG.TXT file in the working directory.

MuJoCo's default warning handler appends to MUJOCO_LOG.TXT in the current directory, which would
write outside a build's output folder. `captured()` collects them for the code that compiled.
"""

from __future__ import annotations

import contextlib
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
        yield collected
    finally:
        _collected.reset(token)
