"""The content-keyed object cache: hits, misses on content change, corruption, atomicity."""

from __future__ import annotations

import json
import os

import pytest

from export.manifests import folder_digests
from pipeline.cache import MISSING, ObjectCache, default_cache_dir, entry_key, hash_inputs


@pytest.fixture()
def setup(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.urdf").write_text("<robot/>")
    (src / "mesh.obj").write_text("v 0 0 0\n")
    obj = tmp_path / "objdir"
    (obj / "meshes").mkdir(parents=True)
    (obj / "object.urdf").write_text("<robot name='a'/>")
    (obj / "meshes" / "m.obj").write_bytes(b"v 1 2 3\n" * 100)
    cache = ObjectCache(tmp_path / "cache")
    inputs = hash_inputs([src / "a.urdf", src / "mesh.obj", src / "gone.obj"])
    return cache, src, obj, inputs


OUTCOME = {"status": "accepted", "rows": {"objects": [{"object_id": "x", "v": float("inf")}]}}


def test_hit_returns_outcome_and_files(setup, tmp_path):
    cache, src, obj, inputs = setup
    assert inputs[str(src / "gone.obj")] == MISSING
    assert cache.lookup("id1") is None
    cache.store("id1", inputs, OUTCOME, obj, folder_digests(obj))
    hit = cache.lookup("id1")
    assert hit is not None and hit.outcome == OUTCOME
    assert hit.files["meshes/m.obj"].read_bytes() == (obj / "meshes" / "m.obj").read_bytes()
    hit.write_files(tmp_path / "restored")
    assert (tmp_path / "restored" / "object.urdf").read_text() == "<robot name='a'/>"
    assert cache.lookup("id2") is None, "another identity does not hit"


def test_changed_missing_or_appearing_input_misses(setup):
    cache, src, obj, inputs = setup
    cache.store("id1", inputs, OUTCOME, obj, folder_digests(obj))
    (src / "mesh.obj").write_text("v 0 0 1\n")
    assert cache.lookup("id1") is None
    (src / "mesh.obj").write_text("v 0 0 0\n")
    restored = cache.lookup("id1")
    assert restored.outcome == OUTCOME, "restoring the content hits the old entry again"
    (src / "gone.obj").write_text("now here")
    assert cache.lookup("id1") is None
    (src / "gone.obj").unlink()
    (src / "a.urdf").unlink()
    assert cache.lookup("id1") is None


def test_rejection_without_files(setup):
    cache, _, _, inputs = setup
    outcome = {"status": "rejected", "reject": {"code": "xml.malformed"}}
    cache.store("id1", inputs, outcome, None, {})
    hit = cache.lookup("id1")
    assert hit.outcome == outcome and hit.files == {}


def entry_dir(cache, identity, inputs):
    key = entry_key(identity, inputs)
    return cache.root / "entries" / key[:2] / key


@pytest.mark.parametrize(
    "damage",
    ["truncate_file", "flip_byte", "delete_file", "truncate_entry", "edit_outcome", "garbage"],
)
def test_corrupted_entry_is_detected_and_discarded(setup, damage):
    cache, _, obj, inputs = setup
    cache.store("id1", inputs, OUTCOME, obj, folder_digests(obj))
    folder = entry_dir(cache, "id1", inputs)
    mesh = folder / "files" / "meshes" / "m.obj"
    entry = folder / "entry.json"
    assert mesh.stat().st_mode & 0o777 == 0o444, "stored files are read-only"
    mesh.chmod(0o644)  # tampering starts by making it writable
    if damage == "truncate_file":
        mesh.write_bytes(mesh.read_bytes()[:10])
    elif damage == "flip_byte":
        data = bytearray(mesh.read_bytes())
        data[5] ^= 0x01
        mesh.write_bytes(bytes(data))
    elif damage == "delete_file":
        mesh.unlink()
    elif damage == "truncate_entry":
        entry.write_bytes(entry.read_bytes()[:-20])
    elif damage == "edit_outcome":
        data = json.loads(entry.read_bytes())
        data["outcome"]["status"] = "rejected"
        entry.write_text(json.dumps(data))
    else:
        entry.write_bytes(os.urandom(64))
    assert cache.lookup("id1") is None
    assert cache.discarded == 1
    assert not folder.exists(), "the corrupted entry is removed"
    cache.store("id1", inputs, OUTCOME, obj, folder_digests(obj))
    assert cache.lookup("id1").outcome == OUTCOME, "and recomputed results are stored again"


def test_no_temporary_leftovers_and_concurrent_store(setup):
    cache, _, obj, inputs = setup
    cache.store("id1", inputs, OUTCOME, obj, folder_digests(obj))
    cache.store(
        "id1", inputs, OUTCOME, obj, folder_digests(obj)
    )  # a second writer of the same entry
    leftovers = [p for p in cache.root.rglob(".tmp-*")]
    assert leftovers == []
    assert cache.lookup("id1").outcome == OUTCOME


def test_default_cache_dir_honours_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path / "c"))
    assert default_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("ARENA_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "articulate-arena"
