"""The on-disk mesh store (`normalize.meshes.disk_cache`): parsed meshes, mass properties and
converted OBJ text are reused by content across objects and builds, and a damaged entry is
detected by its digest and recomputed, never trusted."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import trimesh
from verify_assets import CUBE_OBJ

from normalize import meshes
from normalize.errors import AssetError
from normalize.model import Geometry
from pipeline.cache import ObjectCache
from pipeline.chain import MESH_CACHE


@pytest.fixture()
def files(tmp_path):
    """A cube OBJ and a box STL (a format the writer converts to OBJ)."""
    obj = tmp_path / "src" / "cube.obj"
    obj.parent.mkdir()
    obj.write_text(CUBE_OBJ, encoding="utf-8")
    stl = tmp_path / "src" / "box.stl"
    trimesh.creation.box(extents=(0.2, 0.3, 0.4)).export(stl)
    meshes.clear_cache()
    yield obj, stl
    meshes.clear_cache()


def _refuse(*args, **kwargs):
    raise AssertionError("recomputed although the store holds it")


def _mass(path, scale=(1.0, 2.0, 1.0)):
    return meshes.mass_properties(Geometry("mesh", filename=str(path), scale=np.array(scale)))


def test_store_gives_back_exactly_what_was_computed(files, tmp_path, monkeypatch):
    obj, stl = files
    store = tmp_path / "store"
    with meshes.disk_cache(store):
        first = meshes.load_mesh(obj)
        mass = _mass(obj)
        names = meshes.OutputNames()
        (tmp_path / "out1").mkdir()
        meshes.write_obj_converted(stl, tmp_path / "out1", names, tmp_path / "src")
    stored = sorted(p.name.split(".", 1)[1] for p in store.rglob("*") if p.is_file())
    mass_entry = next(name for name in stored if ".mass-" in name)
    assert stored == sorted([mass_entry, "obj.arrays", "stl.arrays", "stl.converted.obj"])

    meshes.clear_cache()  # a new process, a later build
    monkeypatch.setattr(meshes.loading, "_parse", _refuse)
    monkeypatch.setattr(meshes.mass, "_computed_mass", _refuse)
    monkeypatch.setattr(meshes.writing, "_obj_text", _refuse)
    with meshes.disk_cache(store):
        again = meshes.load_mesh(obj)
        mass_again = _mass(obj)
        (tmp_path / "out2").mkdir()
        meshes.write_obj_converted(stl, tmp_path / "out2", meshes.OutputNames(), tmp_path / "src")
    assert np.array_equal(again.vertices, first.vertices)
    assert np.array_equal(again.faces, first.faces)
    assert mass[0] == mass_again[0] and mass[3] == mass_again[3]
    assert np.array_equal(mass[1], mass_again[1]) and np.array_equal(mass[2], mass_again[2])
    assert (tmp_path / "out2" / "box.obj").read_bytes() == (
        tmp_path / "out1" / "box.obj"
    ).read_bytes()


@pytest.mark.parametrize("suffix", [".obj.arrays", ".json", ".converted.obj"])
@pytest.mark.parametrize("damage", ["truncated", "flipped_byte", "empty"])
def test_damaged_entries_are_recomputed(files, tmp_path, suffix, damage):
    obj, stl = files
    store = tmp_path / "store"
    out = tmp_path / "out"
    out.mkdir()

    def run():
        with meshes.disk_cache(store):
            mesh = meshes.load_mesh(obj)
            mass = _mass(obj)
            meshes.write_obj_converted(stl, out, meshes.OutputNames(), tmp_path / "src")
        return mesh, mass, (out / "box.obj").read_bytes()

    expected = run()
    [entry] = [p for p in store.rglob("*") if p.is_file() and p.name.endswith(suffix)]
    data = entry.read_bytes()
    if damage == "truncated":
        entry.write_bytes(data[: len(data) // 2])
    elif damage == "flipped_byte":
        entry.write_bytes(data[:10] + bytes([data[10] ^ 0xFF]) + data[11:])
    else:
        entry.write_bytes(b"")
    meshes.clear_cache()
    mesh, mass, converted = run()
    assert np.array_equal(mesh.vertices, expected[0].vertices)
    assert mass[0] == expected[1][0] and np.array_equal(mass[2], expected[1][2])
    assert converted == expected[2]
    assert entry.read_bytes() == data, "the damaged entry was replaced by a good one"


def test_outside_a_block_the_shared_store_is_used(files, tmp_path, monkeypatch):
    """$ARENA_MESH_STORE is the store of whatever normalizes outside a `disk_cache` block
    (`arena validate`, `arena normalize`); a block naming no folder keeps meshes in memory."""
    obj, _ = files
    shared = tmp_path / "shared"
    monkeypatch.setenv(meshes.SHARED_STORE_VARIABLE, str(shared))
    with meshes.disk_cache(None):
        meshes.load_mesh(obj)
    assert not shared.exists()
    meshes.clear_cache()
    meshes.load_mesh(obj)
    assert [p.name.split(".", 1)[1] for p in shared.rglob("*") if p.is_file()] == ["obj.arrays"]
    monkeypatch.delenv(meshes.SHARED_STORE_VARIABLE)
    meshes.clear_cache()
    monkeypatch.setattr(meshes.loading, "_parse", _refuse)
    with pytest.raises(AssetError, match="recomputed"):
        meshes.load_mesh(obj)  # no store at all now: parsed again


def test_gltf_is_not_stored(tmp_path):
    """A GLTF's geometry lives in buffer files beside it: its own bytes do not identify it."""
    path = tmp_path / "box.gltf"
    trimesh.creation.box().export(path)
    meshes.clear_cache()
    with meshes.disk_cache(tmp_path / "store"):
        meshes.load_mesh(path, root=tmp_path)
    assert not (tmp_path / "store").exists()


@pytest.mark.slow
def test_rebuild_after_a_code_change_reuses_the_store_and_gives_the_same_release(
    builds, sample_library, tmp_path, monkeypatch
):
    """The object cache is keyed by the code, so a code change recomputes every object; the
    mesh store is not, and the recomputed release is the same."""
    monkeypatch.delenv(meshes.SHARED_STORE_VARIABLE)  # the store under the cache, by default
    cache = tmp_path / "cache"

    meshes.clear_cache()
    # workers=0: the objects are computed in this process, where the stages are patched
    first = builds.release(sample_library, tmp_path / "first", cache, workers=0)
    assert any((cache / MESH_CACHE).rglob("*.arrays"))
    shutil.rmtree(ObjectCache(cache).root)  # what a code change does to the object cache
    meshes.clear_cache()
    monkeypatch.setattr(meshes.loading, "_parse", _refuse)
    monkeypatch.setattr(meshes.mass, "_computed_mass", _refuse)
    second = builds.release(sample_library, tmp_path / "second", cache, workers=0)
    assert len(second.computed) == first.info["counts"]["discovered"]
    assert second.internal_errors == []
    assert second.content_hash == first.content_hash
    meshes.clear_cache()


@pytest.mark.slow
def test_one_mesh_store_serves_builds_with_different_caches(
    builds, sample_library, tmp_path, monkeypatch
):
    """$ARENA_MESH_STORE names one store for every build: a second build with a cache of its
    own parses no mesh and computes no mass (nothing new is stored), and neither cache holds a
    store of its own."""
    store = tmp_path / "store"
    monkeypatch.setenv(meshes.SHARED_STORE_VARIABLE, str(store))

    def entries():
        return {p.relative_to(store): p.stat().st_ino for p in store.rglob("*") if p.is_file()}

    meshes.clear_cache()
    first = builds.release(sample_library, tmp_path / "first", tmp_path / "cache_a", workers=0)
    stored = entries()
    assert any(p.suffix == ".arrays" for p in stored)
    meshes.clear_cache()
    monkeypatch.setattr(meshes.loading, "_parse", _refuse)
    monkeypatch.setattr(meshes.mass, "_computed_mass", _refuse)
    second = builds.release(sample_library, tmp_path / "second", tmp_path / "cache_b", workers=0)
    assert len(second.computed) == first.info["counts"]["discovered"]
    assert second.internal_errors == []
    assert second.content_hash == first.content_hash
    assert entries() == stored, "the second build stored nothing new"
    assert not (tmp_path / "cache_a" / MESH_CACHE).exists()
    assert not (tmp_path / "cache_b" / MESH_CACHE).exists()
    meshes.clear_cache()


def test_a_mesh_written_here_loads_without_parsing_and_as_its_file_reads(tmp_path, monkeypatch):
    """A hull or part the writer makes is kept as it is written: loading the file again (the USD
    writer, the checks) parses nothing, and gives exactly what parsing the file gives."""
    from scipy.spatial import ConvexHull

    points = np.random.default_rng(3).normal(size=(40, 3)) * np.array([1e-3, 0.2, 30.0])
    hull = ConvexHull(points)
    used = np.unique(hull.simplices)
    index = np.full(len(points), -1)
    index[used] = np.arange(len(used))
    vertices, faces = points[used], index[hull.simplices]
    hull_path, loose_path = tmp_path / "hull.obj", tmp_path / "loose.obj"
    meshes.clear_cache()
    meshes.writing.write_generated_obj(hull_path, vertices, faces)
    # a vertex no face uses: trimesh drops it on reading, so this one is parsed again
    meshes.writing.write_generated_obj(loose_path, points, hull.simplices)
    with monkeypatch.context() as patch:
        patch.setattr(meshes.loading, "_parse", _refuse)
        kept = meshes.load_mesh(hull_path)
        with pytest.raises(AssetError, match="recomputed"):  # the parse refused above
            meshes.load_mesh(loose_path)
    meshes.clear_cache()
    parsed = meshes.load_mesh(hull_path)
    assert kept.sha256 == parsed.sha256
    assert np.array_equal(kept.vertices, parsed.vertices) and kept.vertices.dtype == float
    assert np.array_equal(kept.faces, parsed.faces) and kept.faces.dtype == parsed.faces.dtype
    meshes.clear_cache()
