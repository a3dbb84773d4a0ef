"""A cache that cannot be forged: an entry edited and re-checksummed without the key (a forged
license, a file list naming `../../x`) is discarded and recomputed; the key lives outside the
cache folder; a file name leaving the entry is refused even with a valid checksum."""

from __future__ import annotations

import hashlib
import json

import pyarrow.parquet as pq
import pytest
from hostile_library import build_config
from verify_assets import door_urdf, write

from export.digests import canonical_json
from pipeline.cache import ObjectCache, ResultStore, key_path, safe_name


@pytest.fixture()
def built(builds, tmp_path):
    write(tmp_path / "lib" / "control_a", {"door.urdf": door_urdf()})
    (tmp_path / "sources.yaml").write_text(
        "sources:\n  - {name: lib, format: urdf, path: lib, license: CC0}\n", encoding="utf-8"
    )
    build_config(builds.config(tmp_path, tmp_path / "first", tmp_path / "cache"))
    [entry] = (ObjectCache(tmp_path / "cache").root / "entries").glob("*/*/entry.json")
    return tmp_path, entry


def _rewrite(entry_file, change, checksum=lambda body: hashlib.sha256(body).hexdigest()):
    """Edit an entry and recompute its checksum as an attacker without the key would."""
    entry = json.loads(entry_file.read_bytes())
    entry.pop("checksum")
    change(entry)
    entry["checksum"] = checksum(canonical_json(entry))
    entry_file.chmod(0o644)
    entry_file.write_bytes(canonical_json(entry))


def _forge_license(entry):
    entry["outcome"]["rows"]["objects"][0]["license"] = "proprietary"


def _forge_path(entry):
    entry["files"] = {**entry["files"], "../../../escaped.txt": hashlib.sha256(b"").hexdigest()}


@pytest.mark.parametrize("forge", [_forge_license, _forge_path])
def test_a_forged_entry_is_discarded_and_recomputed(builds, built, forge):
    tmp_path, entry = built
    assert key_path(tmp_path / "cache").parent == tmp_path  # beside the cache, not in it
    _rewrite(entry, forge)
    second = build_config(builds.config(tmp_path, tmp_path / "second", tmp_path / "cache"))
    assert second.cached == 0 and second.computed == ["lib__control_a__door"]
    [row] = pq.read_table(tmp_path / "second" / "manifest" / "objects.parquet").to_pylist()
    assert row["license"] == "CC0"
    assert not list(tmp_path.rglob("escaped.txt"))


def test_file_names_must_stay_inside_the_entry(builds, built):
    """Even with the key (a bug, not an attacker), a name leaving the entry is refused."""
    tmp_path, entry = built
    cache = ObjectCache(tmp_path / "cache")
    _rewrite(entry, _forge_path, cache._checksum)
    second = build_config(builds.config(tmp_path, tmp_path / "second", tmp_path / "cache"))
    assert second.cached == 0
    assert not list(tmp_path.rglob("escaped.txt"))
    for name in ("../x", "/etc/passwd", "a/../../x", "a//b", "", "a\\b"):
        assert not safe_name(name)
    assert safe_name("meshes/part.obj")


def test_a_file_edited_during_the_build_cannot_make_the_cache_lie(builds, tmp_path, monkeypatch):
    """The entry is edited right after the build read it: the cache key holds the bytes that
    were processed, so the next warm build recomputes and equals a cold build of the new file."""
    from normalize import files

    urdf = write(tmp_path / "lib" / "control_a", {"door.urdf": door_urdf(upper=1.0)}) / "door.urdf"
    (tmp_path / "sources.yaml").write_text(
        "sources:\n  - {name: lib, format: urdf, path: lib, license: CC0}\n", encoding="utf-8"
    )
    real_read = files.read_regular

    def read_then_edit(path, *args, **kwargs):
        data = real_read(path, *args, **kwargs)
        if str(path) == str(urdf) and b'upper="1.0"' in data:
            urdf.write_text(door_urdf(upper=0.5), encoding="utf-8")  # an editor saving
        return data

    monkeypatch.setattr(files, "read_regular", read_then_edit)
    first_config = builds.config(tmp_path, tmp_path / "first", tmp_path / "cache", workers=0)
    first = build_config(first_config, confine=False)  # it writes into the library itself
    monkeypatch.undo()
    assert first.computed == ["lib__control_a__door"]
    warm = build_config(builds.config(tmp_path, tmp_path / "warm", tmp_path / "cache"))
    assert warm.cached == 0, "the stale result was reused"
    cold = build_config(builds.config(tmp_path, tmp_path / "cold"))
    assert warm.content_hash == cold.content_hash != first.content_hash

    def upper(out):
        joints = pq.read_table(tmp_path / out / "manifest" / "joints.parquet").to_pylist()
        return sorted(j["upper"] for j in joints if j["upper"] is not None)

    assert upper("warm") == upper("cold") != upper("first")


def test_a_damaged_or_forged_result_reads_as_missing(tmp_path):
    """A pair-evidence result edited, re-scoped or truncated is not trusted."""
    store = ResultStore(tmp_path / "cache", "code-a")
    store.put("ab" * 32, {"duplicate": True})
    assert store.get("ab" * 32) == {"duplicate": True}
    assert ResultStore(tmp_path / "cache", "code-b").get("ab" * 32) is None, "other code"
    path = store._path("ab" * 32)
    path.write_bytes(path.read_bytes().replace(b"true", b"false"))
    assert store.get("ab" * 32) is None
    path.write_bytes(path.read_bytes()[:10])
    assert store.get("ab" * 32) is None
