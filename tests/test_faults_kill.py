"""Kill and resume: `arena build` subprocesses over an 80-object generated library are killed
with SIGKILL during discovery, mid-batches and during assembly and publishing, then rerun. The
final release equals an uninterrupted build (same content hash), nothing half-written is ever
visible at --out (an earlier release stays whole), staging folders of killed builds are removed
by the next build, and the killed build's worker processes do not linger.

The phase is found from the cache filling up (mid-batches) or, for discover, assemble and
publish, by running the build through tests/pausing_build.py, which holds it at that
`export.release.pause_point` until it is killed."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from export import release
from pipeline.cache import ObjectCache
from samples.generate import generate_library

pytestmark = pytest.mark.slow

ARENA = Path(sys.executable).parent / "arena"
PAUSING_BUILD = Path(__file__).with_name("pausing_build.py")
N_OBJECTS = 80


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("kill") / "library"
    generate_library(root, n=N_OBJECTS, seed=7)
    return root


@pytest.fixture(scope="module")
def reference_release(builds, library, tmp_path_factory) -> Path:
    """An uninterrupted build (no cache). Read-only: a test that needs it at its --out copies it."""
    out = tmp_path_factory.mktemp("kill_reference") / "release"
    builds.release(library, out, version="kill", workers=2)
    return out


@pytest.fixture(scope="module")
def reference(reference_release) -> str:
    """The content hash of an uninterrupted build."""
    return json.loads((reference_release / "release.json").read_text())["content_hash"]


def _with_ctrl_c_as_a_terminal_gives_it() -> None:
    """A shell starts background jobs with SIGINT ignored, and Python keeps it ignored; when the
    suite itself runs in the background, its builds must still get Ctrl-C as a terminal sends it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Build:
    """One `arena build` subprocess, its combined output in a log file."""

    def __init__(self, library, out, cache, *, pause=None, runner="local", api=None):
        self.log = out.parent / f"build-{time.monotonic_ns()}.log"
        launcher = [sys.executable, str(PAUSING_BUILD), pause] if pause else [str(ARENA)]
        command = [
            *launcher,
            "build",
            "--sources",
            str(library / "sources.yaml"),
            "--out",
            str(out),
            "--cache-dir",
            str(cache),
            "--runner",
            runner,
            "--workers",
            "2",
            "--version",
            "kill",
            "--replace",  # the rebuilds below replace the release at --out
        ]
        env = {**os.environ, "PREFECT_API_URL": api} if api else None
        with open(self.log, "wb") as log:  # a session of its own, as a terminal gives it
            self.process = subprocess.Popen(
                command,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_with_ctrl_c_as_a_terminal_gives_it,
            )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, condition, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if self.process.poll() is not None:
                pytest.fail(f"the build ended ({self.process.returncode}) first:\n{self.output()}")
            if time.monotonic() > deadline:
                self.process.kill()
                pytest.fail(f"timed out waiting:\n{self.output()}")
            time.sleep(0.02)

    def paused(self, point: str) -> None:
        self.wait_for(lambda: f"paused at {point}" in self.output())

    def kill(self) -> None:
        """SIGKILL the build process only (as the OOM killer or a crash would), then check that
        its descendants (worker processes) end on their own."""
        descendants = psutil.Process(self.process.pid).children(recursive=True)
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()
        _, alive = psutil.wait_procs(descendants, timeout=20)
        assert alive == [], f"processes left behind by the killed build: {alive}"

    def interrupt(self, sig: int) -> None:
        """Ctrl-C as a terminal sends it (SIGINT to every process of the group), or SIGTERM to
        the build alone (as a service manager or `kill` does)."""
        if sig == signal.SIGINT:
            os.killpg(self.process.pid, sig)
        else:
            os.kill(self.process.pid, sig)

    def finish(self, timeout: float = 300.0) -> str:
        assert self.process.wait(timeout) == 0, self.output()
        return self.output()


def entries(cache: Path) -> int:
    """Objects the cache can hand back: their index files (`ObjectCache.store` writes one once
    the entry is renamed into place whole; a kill between the two leaves an entry no lookup
    reaches)."""
    return len(list((ObjectCache(cache).root / "index").glob("*/*.json")))


def siblings(out: Path) -> list[str]:
    """The build's own files beside --out: lock, staging folders, a release moved aside."""
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


def reused(output: str) -> int:
    return int(re.search(r"(\d+) objects reused from the cache", output).group(1))


def content_hash(out: Path) -> str:
    return json.loads((out / "release.json").read_text())["content_hash"]


def test_killed_builds_resume_to_the_uninterrupted_release(library, reference, tmp_path):
    out, cache = tmp_path / "release", tmp_path / "cache"

    # During discovery: nothing is at --out; the staging folder is left for the next build.
    build = Build(library, out, cache, pause="discover")
    build.paused("discover")
    build.kill()
    assert not out.exists()
    assert any(name.startswith(".release.build-") for name in siblings(out))

    # Mid-batches: the objects finished so far are in the cache, whole.
    build = Build(library, out, cache)
    build.wait_for(lambda: entries(cache) >= 30)
    build.kill()
    stored = entries(cache)
    assert 30 <= stored < N_OBJECTS
    assert not out.exists()

    # The rerun reuses every stored object, computes the rest, cleans up after the killed ones.
    output = Build(library, out, cache).finish()
    assert reused(output) == stored
    assert content_hash(out) == reference
    assert siblings(out) == [], "staging folders and the lock of killed builds are gone"
    assert release.verify_checksums(out) == []
    first = (out / "release.json").read_bytes()

    # During assembly of a rebuild: the release at --out stays whole and unchanged.
    build = Build(library, out, cache, pause="assemble")
    build.paused("assemble")
    [staging] = [
        tmp_path / n
        for n in siblings(out)
        if n.startswith(".release.build-") and not n.endswith("-outcomes")  # the sources' rows
    ]
    assert (staging / "manifest" / "objects.parquet").is_file()
    assert not (staging / "release.json").exists()
    build.kill()
    assert (out / "release.json").read_bytes() == first
    assert release.verify_checksums(out) == []

    # While publishing: --out holds a whole release at every moment (the new one, swapped in).
    earlier = out.stat().st_ino
    build = Build(library, out, cache, pause="publish")
    build.paused("publish")
    build.kill()
    assert content_hash(out) == reference
    assert release.verify_checksums(out) == []
    assert out.stat().st_ino != earlier, "the new release was swapped in"

    output = Build(library, out, cache).finish()
    assert reused(output) == N_OBJECTS
    assert content_hash(out) == reference
    assert release.verify_checksums(out) == []
    assert siblings(out) == []


def test_killed_prefect_build_resumes(library, reference, tmp_path):
    """The same with the Prefect runner (its temporary server included in what must end)."""
    out, cache = tmp_path / "release", tmp_path / "cache"
    build = Build(library, out, cache, runner="process")
    build.wait_for(lambda: entries(cache) >= 20)
    build.kill()
    stored = entries(cache)
    assert not out.exists()
    output = Build(library, out, cache, runner="process").finish()
    assert reused(output) == stored
    assert content_hash(out) == reference
    assert siblings(out) == []


@pytest.mark.parametrize(
    ("sig", "code", "runner", "server"),
    [
        (signal.SIGINT, 130, "process", "temporary"),
        (signal.SIGTERM, 143, "process", "session"),  # PREFECT_API_URL: the session's API
        (signal.SIGINT, 130, "local", None),
    ],
)
def test_an_interrupted_build_says_so_in_one_line_and_leaves_nothing_beside_out(
    library, reference_release, reference, tmp_path, sig, code, runner, server, request
):
    out, cache = tmp_path / "release", tmp_path / "cache"
    shutil.copytree(reference_release, out)  # an earlier release at --out
    earlier = (out / "release.json").read_bytes()

    api = request.getfixturevalue("prefect_api_url") if server == "session" else None
    build = Build(library, out, cache, runner=runner, api=api)  # --replace: the earlier stays
    build.wait_for(lambda: entries(cache) >= 20)
    build.interrupt(sig)
    assert build.process.wait(60) == code
    output = build.output()
    last = output.splitlines()[-1]
    said = re.fullmatch(
        r"arena build: interrupted: nothing published, (\d+) objects cached; "
        r"run the same command again to resume",
        last,
    )
    assert said and int(said.group(1)) >= 20, output
    assert "Traceback" not in output and "ERROR" not in output, output
    assert siblings(out) == [], "no staging folder and no lock left beside --out"
    assert (out / "release.json").read_bytes() == earlier

    resumed = Build(library, out, cache, runner=runner, api=api).finish()
    assert reused(resumed) >= 20
    assert content_hash(out) == reference
