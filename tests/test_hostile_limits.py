"""Bounds per object: an object that runs past its wall clock (on the main thread of a process,
as in the build's worker processes) is stopped and refused with `limits.time`, never cached (a
faster machine may finish it), and the next object is computed as usual. The slow stage is
simulated, so the test does not depend on the machine's speed."""

from __future__ import annotations

import faulthandler
import time

from hostile_library import collada_instance_bomb
from verify_assets import door_urdf, write

from normalize import meshes, workers
from normalize.adapters import discover
from normalize.errors import AssetError
from normalize.sources import load_sources
from pipeline import chain
from pipeline.cache import ObjectCache


def _door(tmp_path, **limits):
    """The one candidate of a library holding a door, and batch settings with `limits`."""
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
        **limits,
    )
    return candidate, settings


def test_an_object_past_its_wall_clock_is_refused_and_not_cached(tmp_path, monkeypatch):
    candidate, settings = _door(tmp_path, object_seconds=0.5)
    cache = ObjectCache(tmp_path / "cache")
    real_compute = chain._compute

    def endless(candidate, settings):  # a stage that never returns
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
    assert outcome.reject["code"] == "limits.time" and not outcome.accepted
    assert not list((tmp_path / "cache").rglob("entry.json")), "a time-out is never cached"

    monkeypatch.setattr(chain, "_compute", real_compute)
    settings = chain.BatchSettings(**{**settings.__dict__, "object_seconds": 600.0})
    outcome = chain.computed_outcome(candidate, settings, cache)
    assert outcome.accepted, outcome.reject
    assert list((tmp_path / "cache").rglob("entry.json"))


def test_an_object_past_its_memory_limit_is_refused_and_the_next_one_computed(
    tmp_path, monkeypatch
):
    """An object allocating beyond its share of address space (RLIMIT_AS, as in a worker
    process) fails with MemoryError, even where a stage turns exceptions into its own code,
    and is refused with `limits.memory`, never cached; the next object runs as usual and the
    limit is lifted afterwards."""
    import numpy as np

    candidate, settings = _door(tmp_path, object_memory=256 * 1024**2)
    cache = ObjectCache(tmp_path / "cache")
    real_compute = chain._compute

    def balloon(candidate, settings):  # 8 GB, filled so that it is really taken
        return np.ones(1024**3, dtype=np.float64)

    def balloon_in_a_stage(candidate, settings):  # e.g. a mesh loader's mesh.corrupt
        try:
            balloon(candidate, settings)
        except Exception as exc:
            raise AssetError("mesh is corrupt", code="mesh.corrupt", stage="mesh") from exc

    for stage in (balloon, balloon_in_a_stage):
        monkeypatch.setattr(chain, "_compute", stage)
        outcome = chain.computed_outcome(candidate, settings, cache)
        assert outcome.reject["code"] == "limits.memory" and not outcome.accepted
        assert "256 MiB" in outcome.reject["message"]
    assert not list((tmp_path / "cache").rglob("entry.json")), "out of memory is never cached"

    monkeypatch.setattr(chain, "_compute", real_compute)
    outcome = chain.computed_outcome(candidate, settings, cache)
    assert outcome.accepted, outcome.reject
    import resource

    assert resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY
    np.ones(512 * 1024**2 // 8)  # above the object's limit, outside it: allowed


def test_the_memory_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(workers.OBJECT_MEMORY_ENV, "512")
    assert workers.default_object_memory() == 512 * 1024**2
    monkeypatch.setenv(workers.OBJECT_MEMORY_ENV, "0")
    assert workers.default_object_memory() is None
    monkeypatch.delenv(workers.OBJECT_MEMORY_ENV)
    assert workers.default_object_memory() == workers.OBJECT_MEMORY


def test_collada_instances_are_multiplied_out_before_anything_expands(tmp_path):
    """Nodes instancing nodes: 20,000 triangles placed 10^4 times count 2e8 (refused), 10
    placed 2^3 times count 80, and an instance cycle counts once instead of for ever."""
    bomb = collada_instance_bomb().encode()
    assert len(bomb) < 1024**2
    assert meshes.counted_triangles(bomb, ".dae") == meshes.MAX_MESH_TRIANGLES + 1
    try:
        meshes.check_triangles(bomb, tmp_path / "part.dae")
        raise AssertionError("accepted")
    except AssetError as exc:
        assert exc.code == "mesh.too_many_triangles"
    small = collada_instance_bomb(triangles=10, fan=2, depth=3).encode()
    assert meshes.counted_triangles(small, ".dae") == 80
    cycle = small.replace(b'<instance_geometry url="#g"/>', b'<instance_node url="#n3"/>', 1)
    cycle = cycle.replace(b'<node id="n0">', b'<node id="n0"><instance_geometry url="#g"/>')
    assert meshes.counted_triangles(cycle, ".dae") == 80
