"""Imported at the start of every Python process whose PYTHONPATH holds this folder (the
worker processes `test_hostile_workers` starts). With $ARENA_TEST_KILL_ON_OPEN naming a file,
the process sends itself SIGKILL the moment it opens that file (an audit hook on `open`), after
writing its pid to $ARENA_TEST_KILLED: the object being processed then is the one that opens
the file, whatever the load of the machine."""

import os
import signal
import sys

_TARGET = os.environ.get("ARENA_TEST_KILL_ON_OPEN")


def _kill_on_open(event: str, args: tuple) -> None:
    if event != "open" or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    try:
        same = os.path.samefile(args[0], _TARGET)
    except OSError:
        return
    if same:
        with open(os.environ["ARENA_TEST_KILLED"], "a", encoding="utf-8") as killed:
            killed.write(f"{os.getpid()}\n")
        os.kill(os.getpid(), signal.SIGKILL)


if _TARGET:
    sys.addaudithook(_kill_on_open)
