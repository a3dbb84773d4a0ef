"""`python tests/pausing_build.py POINT ARG...` runs `arena ARG...` with a build that holds at its
`export.release.pause_point` named POINT: it says `arena build: paused at POINT` on stderr and
waits there until the process is killed (the kill-and-resume tests, tests/test_faults_kill.py)."""

from __future__ import annotations

import sys
import time

from export import release
from flows.cli import app


def hold_at(point: str):
    def hook(name: str) -> None:
        if name == point:
            print(f"arena build: paused at {name}", file=sys.stderr, flush=True)
            while True:
                time.sleep(60)

    return hook


if __name__ == "__main__":
    release.pause_hook = hold_at(sys.argv[1])
    sys.argv = ["arena", *sys.argv[2:]]
    app()
