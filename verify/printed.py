"""What a block prints, C libraries included: the simulator checks quote what a loader prints
while loading a file (verify/checks/simulator.py, verify/sapien_process.py)."""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import sys
import tempfile
import threading
from collections.abc import Iterator


class _OtherThreadsThrough:
    """A text stream standing in for `stream` (sys.stdout, sys.stderr or a logging handler's)
    while a block's output is captured: what the capturing thread writes goes to `stream` (and
    so into the capture); what other threads write goes to `real`, the file descriptor the
    capture took over (a Dask worker's own logging, a heartbeat's warning: not the loader's)."""

    def __init__(self, stream, real: int):
        self.stream, self.real, self.owner = stream, real, threading.get_ident()
        self.ended = False  # the block has ended: `real` is closed
        self.lock = threading.Lock()

    def write(self, text: str) -> int:
        if threading.get_ident() != self.owner:
            with self.lock:
                if not self.ended:
                    os.write(self.real, text.encode("utf-8", "replace"))
                    return len(text)
        return self.stream.write(text)

    def end(self) -> None:
        """From now on, whoever still holds it writes where it wrote before."""
        with self.lock:
            self.ended = True

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name):
        return getattr(self.stream, name)


def _logging_handlers() -> list[logging.StreamHandler]:
    """Every stream handler of every logger, once (a handler may serve several loggers)."""
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    handlers = {
        id(handler): handler
        for logger in loggers
        if isinstance(logger, logging.Logger)
        for handler in logger.handlers
        if isinstance(handler, logging.StreamHandler)
    }
    return list(handlers.values())


@contextlib.contextmanager
def printed_output() -> Iterator[list[str]]:
    """Everything written to file descriptors 1 and 2 inside the block (C libraries included),
    appended to the yielded list as one string when the block ends. Process-wide for C code;
    Python text that other threads write (through sys.stdout, sys.stderr or a logging handler)
    goes where it went before. The build and `arena validate` verify one object at a time per
    process."""
    libc = ctypes.CDLL(None)
    out: list[str] = []
    with tempfile.TemporaryFile() as sink:
        sys.stdout.flush()
        sys.stderr.flush()
        libc.fflush(None)
        saved = [os.dup(1), os.dup(2)]
        real = {1: saved[0], 2: saved[1]}
        swapped = []  # (object, attribute, stream it held, its stand-in)
        for holder, attribute in [(sys, "stdout"), (sys, "stderr")] + [
            (handler, "stream") for handler in _logging_handlers()
        ]:
            stream = getattr(holder, attribute)
            try:
                descriptor = stream.fileno()
            except (AttributeError, OSError, ValueError):
                continue  # a file or buffer of its own: not captured anyway
            if descriptor in real:
                proxy = _OtherThreadsThrough(stream, real[descriptor])
                setattr(holder, attribute, proxy)
                swapped.append((holder, attribute, stream, proxy))
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
            for holder, attribute, stream, proxy in reversed(swapped):
                proxy.end()
                setattr(holder, attribute, stream)
            os.close(saved[0])
            os.close(saved[1])
            sink.seek(0)
            text = sink.read().decode("utf-8", "replace").strip()
            if text:
                out.append(text)
