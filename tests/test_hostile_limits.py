"""Bounds per object: an object that runs past its wall clock (on the main thread of a process,
as in the build's worker processes) is stopped and refused with `limits.time`, never cached (a
faster machine may finish it), and the next object is computed as usual. The slow stage is
simulated, so the test does not depend on the machine's speed."""

from __future__ import annotations

import faulthandler
import time

from verify_assets import door_urdf, write

from normalize.sources import discover, load_sources
from pipeline import chain
from pipeline.cache import ObjectCache


def test_an_object_past_its_wall_clock_is_refused_and_not_cached(tmp_path, monkeypatch):
    write(tmp_path / "lib", {"door/door.urdf": door_urdf()})
    (tmp_path / "sources.yaml").write_text(
        "sources:\n  - {name: lib, format: urdf, path: lib, license: t}\n", encoding="utf-8"
    )
    [candidate] = discover(load_sources(tmp_path / "sources.yaml")[0])
    (tmp_path / "staging" / "objects").mkdir(parents=True)
    settings = chain.BatchSettings(
        staging=tmp_path / "staging",
        cache_dir=tmp_path / "cache",
        overrides=(),
        versions=chain.current_versions(),
        object_seconds=0.5,
    )
    cache = ObjectCache(tmp_path / "cache")
    real_compute = chain._compute

    def endless(candidate, settings, seconds):  # a stage that never returns
        while True:
            time.sleep(0.05)

    monkeypatch.setattr(chain, "_compute", endless)
    started = time.perf_counter()
    faulthandler.dump_traceback_later(60, exit=True)  # without the clock: fail, not hang
    try:
        outcome = chain.computed_outcome(candidate, settings, cache)
    finally:
        faulthandler.cancel_dump_traceback_later()
    assert time.perf_counter() - started < 5
    assert outcome["reject"]["code"] == "limits.time" and not outcome["accepted"]
    assert not list((tmp_path / "cache").rglob("entry.json")), "a time-out is never cached"

    monkeypatch.setattr(chain, "_compute", real_compute)
    settings = chain.BatchSettings(**{**settings.__dict__, "object_seconds": 600.0})
    outcome = chain.computed_outcome(candidate, settings, cache)
    assert outcome["accepted"], outcome["reject"]
    assert list((tmp_path / "cache").rglob("entry.json"))
