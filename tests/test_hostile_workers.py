"""An object that kills its worker process (a crash in C code, an abort, the out-of-memory
killer's SIGKILL) and one needing more memory than its limit are refused with their own codes
(limits.crash, limits.memory); the worker process is replaced and every other object is still
processed, by a build with one worker and by `arena validate`. The worker process sends itself
SIGKILL the moment it opens the object's mesh (tests/worker_hooks/sitecustomize.py), so the
object that was running is known. An item stuck where SIGALRM cannot reach it (in C code; here
a stopped process) is killed from outside once past its clock (limits.time), shown on the
supervisor itself so that the test does not wait for a clock that busy cores could also reach."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hostile_library import bounded, build_config
from test_verify_hostile import robot
from verify_assets import CUBE_OBJ, door_urdf, mesh, write

from normalize import workers
from normalize.adapters import discover
from normalize.sources import load_sources
from pipeline import chain
from pipeline.build import BuildConfig
from verify.validate import validate_paths

pytestmark = pytest.mark.slow
MEMORY_MB = 250  # each object's address space: a door needs far less
#: under every file and triangle cap (1.9 million triangles on three vertices, 15 MB), above
#: MEMORY_MB once trimesh parses it
MEMORY_BOMB = "v 0 0 0\nv 1 0 0\nv 0 1 0\n" + "f 1 2 3\n" * 1_900_000
EXPECTED = {"b_crash": "limits.crash", "d_memory": "limits.memory"}


def _library(tmp_path: Path) -> Path:
    """Two control doors around the two hostile objects."""
    lib = tmp_path / "lib"
    write(lib / "control_a", {"door.urdf": door_urdf()})
    write(lib / "control_e", {"door.urdf": door_urdf()})
    for name, obj in (("b_crash", CUBE_OBJ), ("d_memory", MEMORY_BOMB)):
        write(lib / name, {"m.urdf": robot(f'<link name="a">{mesh("part.obj")}</link>')})
        (lib / name / "part.obj").write_text(obj, encoding="utf-8")
    (tmp_path / "sources.yaml").write_text(
        "sources:\n  - {name: lib, format: urdf, path: lib, license: test}\n", encoding="utf-8"
    )
    return lib


HOOKS = Path(__file__).parent / "worker_hooks"
REPO = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def kill_on_open(path: Path, monkeypatch, record: Path):
    """While the block runs, worker processes started for it (`normalize.workers.shared` keeps
    one per environment) send themselves SIGKILL when they open `path`, writing their pid to
    `record` first (outside the build's folder: the build may write nothing beside --out).
    Yields the pids killed, read once the block ends."""
    killed = []
    with monkeypatch.context() as patch:
        patch.setenv("PYTHONPATH", os.pathsep.join([str(HOOKS), os.environ.get("PYTHONPATH", "")]))
        patch.setenv("ARENA_TEST_KILL_ON_OPEN", str(path))
        patch.setenv("ARENA_TEST_KILLED", str(record))
        try:
            yield killed
        finally:
            if record.exists():
                killed.extend(int(pid) for pid in record.read_text(encoding="utf-8").split())
            kept = workers.shared(1).pids()
    assert killed and killed[0] not in kept, "the killed worker was replaced"


def test_a_build_with_one_worker_loses_only_the_object_that_killed_it(
    builds, tmp_path, tmp_path_factory, monkeypatch
):
    lib, kills = _library(tmp_path), tmp_path_factory.mktemp("kills")
    config = builds.config(
        tmp_path / "sources.yaml",
        tmp_path / "out",
        tmp_path / "cache",
        workers=1,
        object_memory=MEMORY_MB * 1024**2,
    )
    with kill_on_open(lib / "b_crash" / "part.obj", monkeypatch, kills / "killed.txt") as killed:
        result = build_config(config)
    assert len(killed) == 1
    rejects = pq.read_table(tmp_path / "out" / "manifest" / "rejects.parquet").to_pylist()
    assert {r["source_id"].split("/")[0]: r["code"] for r in rejects} == EXPECTED
    crash = next(r for r in rejects if r["code"] == "limits.crash")
    assert "signal 9 (SIGKILL)" in crash["message"]
    objects = pq.read_table(tmp_path / "out" / "manifest" / "objects.parquet").to_pylist()
    assert sorted(o["source_id"] for o in objects) == ["control_a/door", "control_e/door"]
    [source] = result.info["sources"]
    assert source["discovered"] == 4 == source["accepted"] + source["rejected"]
    # neither refusal is cached: the next build tries both again (no kill this time)
    again = build_config(BuildConfig(**{**config.__dict__, "out": tmp_path / "again"}))
    assert again.computed == ["lib__b_crash__m", "lib__d_memory__m"]


def test_validate_gives_each_object_its_limits_and_survives_a_crash(
    tmp_path, tmp_path_factory, monkeypatch
):
    lib, kills = _library(tmp_path), tmp_path_factory.mktemp("kills")
    monkeypatch.setenv(workers.OBJECT_MEMORY_ENV, str(MEMORY_MB))
    with (
        bounded("arena validate of the worker-killing library"),
        kill_on_open(lib / "b_crash" / "part.obj", monkeypatch, kills / "killed.txt") as killed,
    ):
        reports = validate_paths([lib], workers=1)
    assert len(killed) == 1
    failures = {
        r.source_id.split("/")[0]: [c.id for c in r.failures] for r in reports if r.status == "fail"
    }
    assert failures == {name: [code] for name, code in EXPECTED.items()}
    assert len(reports) == 4


def stop_or_die(items: list[str]):
    """Worker side of the supervisor test: "stop" stops its own process (as stuck in C code:
    no signal handler runs), "die" ends it abruptly, "segfault" crashes it, anything else is
    returned with the pid."""
    for item in items:
        if item == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)
        elif item == "die":
            os._exit(3)
        elif item == "segfault":
            read_address_zero()
        yield (item, os.getpid())


def read_address_zero():
    ctypes.string_at(0)  # SIGSEGV in C code, as a crashing native library does


def test_the_supervisor_kills_an_item_past_its_clock_and_replaces_the_process():
    supervisor = workers.Supervisor(1)
    lost = []
    try:
        started = time.perf_counter()
        results = supervisor.run(
            stop_or_die,
            ["a", "stop", "b", "die", "c"],
            (),
            2.0,
            lambda item, why: lost.append((item, why.kind, why.message)) or None,
        )
        elapsed = time.perf_counter() - started
    finally:
        supervisor.close()
    assert [r[0] for r in results if r] == ["a", "b", "c"]
    assert results[1] is None and results[3] is None
    assert [(item, kind) for item, kind, _ in lost] == [("stop", "time"), ("die", "crash")]
    assert "exited with code 3" in lost[1][2]
    pids = [r[1] for r in results if r]
    assert len(set(pids)) == 3, "a new process after each loss"
    assert elapsed < 30
    assert supervisor.lost == 2


def test_a_crash_is_reported_with_the_python_frames_where_the_process_died():
    supervisor = workers.Supervisor(1)
    lost = []
    try:
        results = supervisor.run(
            stop_or_die, ["a", "segfault", "b"], (), None, lambda item, why: lost.append(why)
        )
    finally:
        supervisor.close()
    assert [r[0] for r in results if r] == ["a", "b"]
    [why] = lost
    assert why.kind == "crash"
    assert why.message.startswith("the worker process was killed by signal 11 (SIGSEGV) in ")
    assert "tests/test_hostile_workers.py:" in why.message
    assert "(read_address_zero) < tests/test_hostile_workers.py:" in why.message
    assert "(stop_or_die)" in why.message and str(REPO) not in why.message


def test_a_lost_object_is_refused_with_its_limit_code(tmp_path):
    _library(tmp_path)
    [candidate, *_] = discover(load_sources(tmp_path / "sources.yaml")[0])
    settings = chain.BatchSettings(
        staging=tmp_path / "staging", cache_dir=None, overrides=(), versions=(), object_seconds=5
    )
    stuck = chain.lost_outcome(candidate, settings, workers.WorkerLost("time", "killed after 6 s"))
    died = chain.lost_outcome(candidate, settings, workers.WorkerLost("crash", "it died"))
    assert stuck.reject["code"] == "limits.time" and "inside C code" in stuck.reject["message"]
    assert died.reject["code"] == "limits.crash" and not died.accepted


def test_a_worker_process_that_cannot_start_leaves_the_pool_closable(monkeypatch):
    """Starting a process can fail (spawn refuses a script without a main guard, the system
    has no processes left): the caller sees that error, and closing the pool afterwards works
    instead of failing on joining a process that never ran."""
    supervisor = workers.Supervisor(1)

    def refuse(process):
        raise RuntimeError("no process for you")

    monkeypatch.setattr(supervisor._slots[0].context.Process, "start", refuse)
    with pytest.raises(RuntimeError, match="no process for you"):
        supervisor.run(stop_or_die, ["a"], (), None, lambda item, why: None)
    supervisor.close()
    assert supervisor.pids() == []


def mark_prepared():
    os.environ["ARENA_TEST_PREPARED"] = str(os.getpid())


def prepared_marks(items):
    for _ in items:
        yield os.environ.get("ARENA_TEST_PREPARED"), os.getpid()


def test_a_worker_calls_the_functions_its_preparation_names_before_any_batch():
    """`module:function` in `prepare` is called as the worker starts (validate starts SAPIEN's
    child that way, before the worker's own imports); plain entries are only imported."""
    supervisor = workers.Supervisor(1)
    try:
        supervisor.start(1, (f"{__name__}:mark_prepared", "json"))
        [(mark, pid)] = supervisor.run(prepared_marks, ["a"], (), None, lambda item, why: None)
    finally:
        supervisor.close()
    assert mark == str(pid)
