"""Each object's stage seconds go to its own record (`normalize.timing`): nested stages are
not counted twice, and objects computed at once in threads of one process (as on a Dask
worker) do not mix their seconds."""

from __future__ import annotations

import threading
import time

from normalize.timing import stage_record, timed


def test_a_nested_stage_is_not_counted_in_the_stage_around_it():
    with stage_record() as record, timed("convention"):
        time.sleep(0.05)
        with timed("meshes"):
            time.sleep(0.2)
    assert 0.2 <= record["meshes"] < 0.35
    assert 0.05 <= record["convention"] < 0.15


def test_objects_computed_in_threads_at_once_keep_their_own_seconds():
    records: dict[str, dict] = {}
    both_started = threading.Barrier(2)

    def compute(name: str, seconds: float) -> None:
        with stage_record() as record:
            both_started.wait()
            with timed("verify"):
                time.sleep(seconds)
        records[name] = record

    threads = [
        threading.Thread(target=compute, args=("short", 0.1)),
        threading.Thread(target=compute, args=("long", 0.4)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert 0.1 <= records["short"]["verify"] < 0.3
    assert 0.4 <= records["long"]["verify"] < 0.6


def test_outside_a_record_a_stage_only_runs_its_block():
    ran = []
    with timed("export"):
        ran.append(True)
    assert ran == [True]
