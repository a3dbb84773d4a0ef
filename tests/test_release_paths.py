"""No path of the build machine in any shipped file: a release is moved, published and shared,
so every file of it (manifests, card, browser data, object files, previews) is scanned for the
absolute folders the build read and wrote."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_library import build_config
from verify_assets import door_urdf, mesh, write


def machine_paths_in(release: Path, folders: list[Path]) -> list[str]:
    """`file: folder` for every shipped file holding one of `folders` as bytes."""
    needles = {str(f.resolve()).encode(): str(f) for f in folders}
    needles.update({str(f.absolute()).encode(): str(f) for f in folders})
    found = []
    for path in sorted(p for p in release.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [
            f"{path.relative_to(release)}: {name}" for n, name in needles.items() if n in data
        ]
    return found


def test_a_release_with_rejects_ships_no_path_of_the_build_machine(builds, tmp_path):
    library = tmp_path / "library"
    write(library / "control", {"door.urdf": door_urdf()})
    write(library / "broken", {"b.urdf": "<robot name='b'>"})
    missing = mesh("missing.obj", (0, 0, 0), (1, 1, 1))
    write(library / "nomesh", {"n.urdf": door_urdf(door_geometry=missing)})
    sources = tmp_path / "sources.yaml"
    sources.write_text(f"sources:\n  - {{name: lib, format: urdf, path: {library}, license: t}}\n")
    out = tmp_path / "release"
    config = builds.config(sources, out, tmp_path / "cache")
    result = build_config(config)
    assert {r["code"] for r in result.rejects} == {"xml.truncated", "mesh.missing"}
    assert machine_paths_in(out, [tmp_path]) == []


def test_the_demo_release_ships_no_path_of_the_build_machine(sample_release, sample_library):
    assert machine_paths_in(sample_release, [sample_library, sample_release.parent]) == []


@pytest.mark.parametrize("where", ["message", "path"])
def test_rejects_name_files_relative_to_their_source(builds, tmp_path, where):
    import pyarrow.parquet as pq

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
