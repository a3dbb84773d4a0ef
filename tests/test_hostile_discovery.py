"""Discovery loses nothing: a sub-folder that cannot be listed is a rejected candidate
(`file.unreadable`, never cached: the next build reads it again), a symlinked folder leading out
of the root is one too (`path.symlink_escape`, nothing behind it opened), and a symlinked folder
inside the root, even a loop, is walked once under its real path. Tests run as root, where
chmod 000 does not stop reads, so unreadability is simulated on os.scandir."""

from __future__ import annotations

import os

import pyarrow.parquet as pq
import pytest
from hostile_library import build_config
from verify_assets import door_urdf, write

from normalize import discovery


def _rows(out, table):
    return pq.read_table(out / "manifest" / f"{table}.parquet").to_pylist()


@pytest.mark.parametrize("fmt", ["urdf", "partnet_mobility"])
def test_four_objects_are_all_accounted_for(builds, tmp_path, monkeypatch, fmt):
    entry = "mobility.urdf" if fmt == "partnet_mobility" else "door.urdf"
    lib = tmp_path / "lib"
    for name in ("control_a", "control_b", "unreadable"):
        write(lib / name, {entry: door_urdf()})
    outside = write(tmp_path / "elsewhere" / "d", {entry: door_urdf()})
    os.symlink(outside, lib / "linked_out")
    os.symlink(lib / "control_a", lib / "linked_in")  # the same object: found once
    os.symlink("..", lib / "control_b" / "loop")  # a cycle: walked once
    sources = tmp_path / "sources.yaml"
    sources.write_text(
        f"sources:\n  - {{name: lib, format: {fmt}, path: lib, license: test}}\n",
        encoding="utf-8",
    )
    real_scandir = os.scandir

    def scandir(path="."):  # shutil.rmtree scans open folders by descriptor
        if not isinstance(path, int) and os.fspath(path) == str(lib / "unreadable"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    def build(out):
        return build_config(builds.config(sources, tmp_path / out, tmp_path / "cache"))

    monkeypatch.setattr(discovery.os, "scandir", scandir)
    first = build("first")
    monkeypatch.undo()
    [counts] = first.info["sources"]
    assert counts["discovered"] == 4 == counts["accepted"] + counts["rejected"]
    accepted = sorted(o["source_id"].split("/")[0] for o in _rows(tmp_path / "first", "objects"))
    assert accepted == ["control_a", "control_b"]
    rejected = {r["source_id"]: r["code"] for r in _rows(tmp_path / "first", "rejects")}
    assert rejected == {"unreadable": "file.unreadable", "linked_out": "path.symlink_escape"}
    # the in-root links are named, not silently passed over
    aliases = counts["skipped"]["symlinked_folder"]
    assert aliases == {"count": 2, "examples": ["linked_in", "control_b/loop"]}  # walk order
    second = build("second")  # readable now: the rejection was not cached
    assert second.info["sources"][0]["accepted"] == 3


def test_an_object_id_too_long_for_a_folder_name_is_shortened_with_a_hash(builds, tmp_path):
    """Nested folders whose names together exceed the file system's 255 bytes a name: the id
    (which names the object's folder) is cut and ends with the hash of the source id, and the
    object is built, instead of failing twice to write (`io.error`)."""
    deep = "/".join(f"part_{i:02d}_" + "x" * 40 for i in range(8))
    lib = tmp_path / "lib"
    write(lib / deep, {"door.urdf": door_urdf()})
    write(lib / "control", {"door.urdf": door_urdf()})
    sources = tmp_path / "sources.yaml"
    sources.write_text("sources:\n  - {name: lib, format: urdf, path: lib, license: t}\n")
    config = builds.config(sources, tmp_path / "out", tmp_path / "cache")
    build_config(config)
    [row] = [r for r in _rows(tmp_path / "out", "objects") if r["source_id"] != "control/door"]
    assert len(row["object_id"]) == discovery.MAX_ID_LENGTH
    assert row["source_id"] == f"{deep}/door"
    assert (tmp_path / "out" / "objects" / row["object_id"] / "object.urdf").is_file()
