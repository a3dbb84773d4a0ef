"""What a block prints, C libraries included: the simulator checks quote what a loader prints
while loading a file (verify/checks/simulator.py, verify/sapien_process.py)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import tempfile
from collections.abc import Iterator


@contextlib.contextmanager
def printed_output() -> Iterator[list[str]]:
    """Everything written to file descriptors 1 and 2 inside the block (C libraries included),
    appended to the yielded list as one string when the block ends. Process-wide: the build
    and `arena validate` verify in worker processes, one object at a time."""
    libc = ctypes.CDLL(None)
    out: list[str] = []
    with tempfile.TemporaryFile() as sink:
        sys.stdout.flush()
        sys.stderr.flush()
        libc.fflush(None)
        saved = [os.dup(1), os.dup(2)]
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield out
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            libc.fflush(None)
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            sink.seek(0)
            text = sink.read().decode("utf-8", "replace").strip()
            if text:
                out.append(text)
