"""No path of the build machine in any shipped file: a release is moved, published and shared,
so every file of it (manifests, card, browser data, object files, previews) is scanned for the
absolute folders the build read and wrote, the home folder and the checkout: as bytes, and in
Parquet files (compressed, so their bytes hide text) cell by cell."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hostile_library import build_config
from verify_assets import door_urdf, mesh, write

CHECKOUT = Path(__file__).resolve().parents[1]


def _pattern(folders: list[Path]) -> re.Pattern:
    """Any of `folders` as an absolute path: not inside a relative path (`a/tmp/x`, `<source>/..
    /tmp/x`) nor a longer name (`/tmp/ab` for `/tmp/a`)."""
    names = {str(f) for folder in folders for f in (folder.absolute(), folder.resolve())}
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w.\-/])(?:{alternatives})(?![\w.\-])")


def _cells(value):
    """Every string or bytes value inside a Parquet cell (lists and structs walked)."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _cells(item)
    elif isinstance(value, list):
        for item in value:
            yield from _cells(item)
    elif isinstance(value, bytes):
        yield value.decode("latin-1")
    elif isinstance(value, str):
        yield value


def machine_paths_in(release: Path, folders: list[Path]) -> list[str]:
    """`file: path` (`file [column]: value` in Parquet cells) for every shipped file holding one
    of `folders`, the home folder or the checkout as an absolute path."""
    pattern = _pattern([*folders, Path.home(), CHECKOUT])
    found = []
    for path in sorted(p for p in release.rglob("*") if p.is_file()):
        name = path.relative_to(release).as_posix()
        text = path.read_bytes().decode("latin-1")
        found += [f"{name}: {m.group()}" for m in pattern.finditer(text)]
        if path.suffix == ".parquet":
            table = pq.read_table(path)
            for column in table.column_names:
                for value in table.column(column).to_pylist():
                    found += [
                        f"{name} [{column}]: {cell}"
                        for cell in _cells(value)
                        if pattern.search(cell)
                    ]
    return found


def test_the_scan_sees_paths_in_compressed_parquet_cells(tmp_path):
    import pyarrow as pa

    leak = str(tmp_path / "library" / "a.obj")
    column = ["a", *(f"missing {leak} ({i})" for i in range(50)), "z"]  # not the min nor max
    pq.write_table(pa.table({"message": column}), tmp_path / "t.parquet", compression="zstd")
    assert leak.encode() not in (tmp_path / "t.parquet").read_bytes(), "compressed away"
    assert len(machine_paths_in(tmp_path, [tmp_path])) == 50
    (tmp_path / "t.parquet").unlink()
    home = Path.home()
    (tmp_path / "card.md").write_text(f"{home}/x, <source>/..{tmp_path}/y, a{tmp_path}, {home}a")
    assert machine_paths_in(tmp_path, []) == [f"card.md: {home}"]


def test_a_release_with_rejects_ships_no_path_of_the_build_machine(builds, tmp_path):
    library = tmp_path / "library"
    write(library / "control", {"door.urdf": door_urdf()})
    write(library / "broken", {"b.urdf": "<robot name='b'>"})
    missing = mesh("missing.obj", (0, 0, 0), (1, 1, 1))
    write(library / "nomesh", {"n.urdf": door_urdf(door_geometry=missing)})
    outside = mesh(str(tmp_path / "elsewhere.obj"), (0, 0, 0), (1, 1, 1))
    write(library / "outside", {"o.urdf": door_urdf(door_geometry=outside)})
    sources = tmp_path / "sources.yaml"
    sources.write_text(f"sources:\n  - {{name: lib, format: urdf, path: {library}, license: t}}\n")
    out = tmp_path / "release"
    config = builds.config(sources, out, tmp_path / "cache")
    result = build_config(config)
    assert {r["code"] for r in result.rejects} == {
        "xml.truncated",
        "mesh.missing",
        "path.outside_root",
    }
    assert machine_paths_in(out, [tmp_path]) == []


def test_the_demo_release_ships_no_path_of_the_build_machine(
    sample_release, sample_library, tmp_path_factory
):
    folders = [sample_library, sample_release.parent, tmp_path_factory.getbasetemp()]
    assert machine_paths_in(sample_release, folders) == []


@pytest.mark.parametrize("where", ["message", "path"])
def test_rejects_name_files_relative_to_their_source(builds, tmp_path, where):
    library = tmp_path / "library"
    write(library / "control", {"door.urdf": door_urdf()})
    missing = mesh("missing.obj", (0, 0, 0), (1, 1, 1))
    write(library / "nomesh", {"n.urdf": door_urdf(door_geometry=missing)})
    sources = tmp_path / "sources.yaml"
    sources.write_text(f"sources:\n  - {{name: lib, format: urdf, path: {library}, license: t}}\n")
    config = builds.config(sources, tmp_path / "out")
    build_config(config)
    [row] = pq.read_table(tmp_path / "out" / "manifest" / "rejects.parquet").to_pylist()
    expected = {"message": "<source>/nomesh/missing.obj", "path": "nomesh/n.urdf"}[where]
    assert expected in row[where]


def test_a_file_outside_the_source_is_named_relative_to_it(builds, tmp_path):
    library = tmp_path / "library"
    write(library / "control", {"door.urdf": door_urdf()})
    outside = mesh(str(tmp_path / "elsewhere.obj"), (0, 0, 0), (1, 1, 1))
    write(library / "outside", {"o.urdf": door_urdf(door_geometry=outside)})
    sources = tmp_path / "sources.yaml"
    sources.write_text(f"sources:\n  - {{name: lib, format: urdf, path: {library}, license: t}}\n")
    build_config(builds.config(sources, tmp_path / "out"))
    [row] = pq.read_table(tmp_path / "out" / "manifest" / "rejects.parquet").to_pylist()
    assert row["code"] == "path.outside_root"
    assert row["message"].startswith("<source>/../elsewhere.obj is outside the source root")
