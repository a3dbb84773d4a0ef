"""An object that kills its worker process (a crash in C code, an abort, the out-of-memory
killer's SIGKILL), one stuck where SIGALRM cannot reach it (in C code: here a stopped process)
and one needing more memory than its limit are each refused with their own code (limits.crash,
limits.time, limits.memory); the worker process is replaced and every other object is still
processed, by a build with one worker and by `arena validate`. The signals are sent by the
test to the worker processes at the moment one of them opens the object's mesh (inotify), so
the object that was running is known."""

from __future__ import annotations

import contextlib
import signal
import threading
from pathlib import Path

import psutil
import pyarrow.parquet as pq
import pytest
from hostile_library import OpenWatch, bounded, build_config
from test_verify_hostile import robot
from verify_assets import CUBE_OBJ, door_urdf, mesh, write

from normalize import workers
from normalize.sources import load_sources
from pipeline.build import BuildConfig
from verify.validate import validate_paths

pytestmark = pytest.mark.slow
SECONDS = 8.0  # each object's wall clock
MEMORY_MB = 250  # each object's address space: a door needs far less
#: under every file and triangle cap (1.9 million triangles on three vertices, 15 MB), above
#: MEMORY_MB once trimesh parses it
MEMORY_BOMB = "v 0 0 0\nv 1 0 0\nv 0 1 0\n" + "f 1 2 3\n" * 1_900_000
EXPECTED = {"b_crash": "limits.crash", "c_stuck": "limits.time", "d_memory": "limits.memory"}


def _library(tmp_path: Path) -> tuple[Path, dict[Path, signal.Signals]]:
    """Two doors around three hostile objects; the signal each hostile mesh's opening sends."""
    lib = tmp_path / "lib"
    write(lib / "control_a", {"door.urdf": door_urdf()})
    write(lib / "control_e", {"door.urdf": door_urdf()})
    for name, obj in (("b_crash", CUBE_OBJ), ("c_stuck", CUBE_OBJ), ("d_memory", MEMORY_BOMB)):
        write(lib / name, {"m.urdf": robot(f'<link name="a">{mesh("part.obj")}</link>')})
        (lib / name / "part.obj").write_text(obj, encoding="utf-8")
    (tmp_path / "sources.yaml").write_text(
        "sources:\n  - {name: lib, format: urdf, path: lib, license: test}\n", encoding="utf-8"
    )
    return lib, {
        lib / "b_crash" / "part.obj": signal.SIGKILL,
        lib / "c_stuck" / "part.obj": signal.SIGSTOP,
    }


def _worker_processes() -> list[psutil.Process]:
    found = []
    for p in psutil.Process().children():
        with contextlib.suppress(psutil.Error):
            if "spawn_main" in " ".join(p.cmdline()):
                found.append(p)
    return found


@contextlib.contextmanager
def signal_on_open(actions: dict[Path, signal.Signals]):
    """While the block runs, when a process opens one of the files, send its signal to every
    worker process of this process (one worker: the one opening it). Yields the files seen."""
    watch, done, seen = OpenWatch(list(actions)), threading.Event(), []

    def react() -> None:
        while not done.is_set():
            for path, _ in watch.events():
                if path not in seen:
                    seen.append(path)
                    for process in _worker_processes():
                        with contextlib.suppress(psutil.Error):
                            process.send_signal(actions[path])
            done.wait(0.005)

    thread = threading.Thread(target=react, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        done.set()
        thread.join()
        watch.close()


@pytest.fixture
def short_grace(monkeypatch):
    """The stopped worker is killed 1 s after its object's wall clock."""
    monkeypatch.setattr(workers, "GRACE_SECONDS", 1.0)


def test_a_build_with_one_worker_loses_only_the_object_that_killed_it(tmp_path, short_grace):
    lib, actions = _library(tmp_path)
    config = BuildConfig(
        sources=load_sources(tmp_path / "sources.yaml"),
        out=tmp_path / "out",
        version="t",
        runner="local",
        workers=1,
        cache_dir=tmp_path / "cache",
        live=False,
        object_seconds=SECONDS,
        object_memory=MEMORY_MB * 1024**2,
    )
    with signal_on_open(actions) as seen:
        result = build_config(config)
    assert sorted(seen) == sorted(actions)
    rejects = pq.read_table(tmp_path / "out" / "manifest" / "rejects.parquet").to_pylist()
    assert {r["source_id"].split("/")[0]: r["code"] for r in rejects} == EXPECTED
    crash = next(r for r in rejects if r["code"] == "limits.crash")
    assert "signal 9 (SIGKILL)" in crash["message"]
    objects = pq.read_table(tmp_path / "out" / "manifest" / "objects.parquet").to_pylist()
    assert sorted(o["source_id"] for o in objects) == ["control_a/door", "control_e/door"]
    [source] = result.info["sources"]
    assert source["discovered"] == 5 == source["accepted"] + source["rejected"]
    # none of the three is cached: the next build tries them again (no signals this time)
    again = build_config(BuildConfig(**{**config.__dict__, "out": tmp_path / "again"}))
    assert again.computed == ["lib__b_crash__m", "lib__c_stuck__m", "lib__d_memory__m"]


def test_validate_gives_each_object_its_limits_and_survives_a_crash(
    tmp_path, short_grace, monkeypatch
):
    lib, actions = _library(tmp_path)
    monkeypatch.setenv(workers.OBJECT_SECONDS_ENV, str(SECONDS))
    monkeypatch.setenv(workers.OBJECT_MEMORY_ENV, str(MEMORY_MB))
    with bounded("arena validate of the worker-killing library"), signal_on_open(actions) as seen:
        reports = validate_paths([lib], workers=1)
    assert sorted(seen) == sorted(actions)
    failures = {
        r.source_id.split("/")[0]: [c.id for c in r.failures] for r in reports if r.status == "fail"
    }
    assert failures == {name: [code] for name, code in EXPECTED.items()}
    assert len(reports) == 5
