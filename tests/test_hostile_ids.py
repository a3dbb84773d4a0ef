"""Object ids cannot collide: a source name that could make two sources' ids meet is refused
with the sources file (exit 2), a crafted file name cannot take another object's hashed id,
and candidates that still share an id are each refused with `id.collision` (the PartNet root
case is in the hostile build of tests/test_hostile_build.py)."""

from __future__ import annotations

import hashlib
import itertools

import pyarrow.parquet as pq
import pytest
from hostile_library import build
from verify_assets import door_urdf, write

from normalize.discovery import make_object_id
from normalize.sources import SourcesFileError, load_sources


def _sources_file(tmp_path, entries: list[tuple[str, str]]):
    lines = ["sources:"]
    for name, folder in entries:
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        lines.append(f"  - {{name: '{name}', format: urdf, path: {folder}, license: test}}")
    path = tmp_path / "sources.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["a__b", "lib_", "x__"])
def test_a_source_name_that_makes_ids_ambiguous_is_refused_with_exit_2(
    builds, tmp_path, name, capsys
):
    """Source `a` with b/c.urdf and source `a__b` with c.urdf would both be a__b__c."""
    sources = _sources_file(tmp_path, [("a", "one"), (name, "two")])
    with pytest.raises(SourcesFileError, match="object ids"):
        load_sources(sources)
    code = build(builds, sources, tmp_path / "out", tmp_path / "cache")
    assert code == 2
    assert f"{name!r} must not" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_distinct_source_ids_give_distinct_object_ids():
    """Every source_id over an alphabet of the awkward characters, in one and two parts."""
    alphabet = ["a", "_", "__", "-", ".", "!", "a_", "_a", "a-1234abcd"]
    parts = ["".join(p) for n in (1, 2) for p in itertools.product(alphabet, repeat=n)]
    ids = [p for p in parts] + [f"{p}/{q}" for p in parts[:40] for q in parts[:40]]
    ids = sorted(set(ids))
    made = {}
    for name in ("s", "s_t"):
        for source_id in ids:
            made.setdefault(make_object_id(name, source_id), []).append((name, source_id))
    collisions = {k: v for k, v in made.items() if len(v) > 1}
    assert collisions == {}
    assert make_object_id("a", "b/c") == "a__b__c"  # readable ids stay as they were


def test_a_crafted_file_name_cannot_take_a_hashed_id(builds, tmp_path):
    """`x!.urdf` is x-<hash of 'x!'>; a file named `x-<that hash>.urdf` gets its own hash."""
    suffix = hashlib.sha256(b"x!").hexdigest()[:8]
    write(tmp_path / "lib", {"x!.urdf": door_urdf(), f"x-{suffix}.urdf": door_urdf()})
    write(tmp_path / "lib" / "control", {"door.urdf": door_urdf()})
    sources = tmp_path / "sources.yaml"
    sources.write_text(
        "sources:\n  - {name: lib, format: urdf, path: lib, license: test}\n", encoding="utf-8"
    )
    code = build(builds, sources, tmp_path / "out", tmp_path / "cache")
    assert code == 0
    objects = pq.read_table(tmp_path / "out" / "manifest" / "objects.parquet").to_pylist()
    ids = sorted(o["object_id"] for o in objects if not o["source_id"].startswith("control"))
    assert len(ids) == 2 and len(set(ids)) == 2
    assert f"lib__x-{suffix}" in ids
    for o in objects:  # each folder holds its own object's files
        assert (tmp_path / "out" / o["urdf_path"]).is_file()
