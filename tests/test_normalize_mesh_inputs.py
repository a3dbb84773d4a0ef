"""A mesh served from the in-process cache or the disk store records the same inputs as a
parse: the mesh file and the files parsing it read (COLLADA textures, GLTF buffers), so an
object's recorded source files never depend on what the process computed before."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest
import trimesh
from test_normalize_faithful import URDF, collada

from normalize import inputs, meshes
from normalize.adapters import discover
from normalize.run import normalize_candidate
from normalize.sources import SourceConfig

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00"
    b"\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7"
    b"\x35\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82"
)


@pytest.fixture()
def library(tmp_path):
    """An object whose COLLADA mesh names a texture in a sibling folder."""
    root = tmp_path / "lib"
    (root / "meshes").mkdir(parents=True)
    (root / "textures").mkdir()
    (root / "r.urdf").write_text(URDF.format(mesh="meshes/cube.dae"), encoding="utf-8")
    (root / "meshes" / "cube.dae").write_text(collada(bumpmap="../textures/t.png"))
    (root / "textures" / "t.png").write_bytes(PNG)
    meshes.clear_cache()
    yield root
    meshes.clear_cache()


def _recorded(path, root) -> set[str]:
    with inputs.recording() as recorded:
        meshes.load_mesh(path, root=root)
    return set(recorded)


def test_a_cached_collada_records_its_texture_again(library):
    dae = library / "meshes" / "cube.dae"
    first = _recorded(dae, library)
    assert first == {str(dae), str(library / "textures" / "t.png")}
    assert _recorded(dae, library) == first  # the same file: a hit by its status


def test_the_same_content_elsewhere_records_its_own_texture(library):
    _recorded(library / "meshes" / "cube.dae", library)
    other = library / "other" / "deeper"
    other.mkdir(parents=True)
    shutil.copyfile(library / "meshes" / "cube.dae", other / "cube.dae")
    assert _recorded(other / "cube.dae", library) == {
        str(other / "cube.dae"),
        str(library / "other" / "textures" / "t.png"),  # looked for, though missing
    }


def test_a_mesh_from_the_disk_store_records_its_texture(library, tmp_path, monkeypatch):
    dae = library / "meshes" / "cube.dae"
    with meshes.disk_cache(tmp_path / "store"):
        first = _recorded(dae, library)
        meshes.clear_cache()  # a new worker process, a later build
        monkeypatch.setattr(meshes.loading, "_parse", _refuse)
        assert _recorded(dae, library) == first


def _refuse(*args, **kwargs):
    raise AssertionError("parsed although the disk store holds it")


def test_a_cached_gltf_records_its_buffer(tmp_path):
    exported = trimesh.creation.box().export(file_type="gltf")
    for name, data in exported.items():
        (tmp_path / name).write_bytes(data)
    gltf = tmp_path / "model.gltf"
    meshes.clear_cache()
    first = _recorded(gltf, tmp_path)
    assert any(p.endswith(".bin") for p in first)
    assert _recorded(gltf, tmp_path) == first
    meshes.clear_cache()


def test_normalizing_twice_in_one_process_records_the_same_files(library, tmp_path):
    source = SourceConfig(name="lib", format="urdf", path=library, license="x")
    (candidate,) = discover(source)
    runs = []
    for out in ("out1", "out2"):
        with inputs.recording() as recorded:
            normalize_candidate(candidate, tmp_path / out)
        runs.append({p for p in recorded if not p.startswith(str(tmp_path / out))})
    assert str(library / "textures" / "t.png") in runs[0]
    assert runs[1] == runs[0]


def _missing(path, root) -> list[str]:
    return [m for code, m in meshes.load_mesh(path, root=root).notes if code == "texture.missing"]


def test_a_texture_added_or_removed_is_seen_by_a_cached_mesh(library, tmp_path):
    dae, texture = library / "meshes" / "cube.dae", library / "textures" / "t.png"
    with meshes.disk_cache(tmp_path / "store"):
        assert _missing(dae, library) == []
        texture.unlink()
        (missing,) = _missing(dae, library)  # the same file: a hit by its status
        assert "texture ../textures/t.png does not exist" in missing
        meshes.clear_cache()
        assert len(_missing(dae, library)) == 1  # from the disk store
        texture.write_bytes(PNG)
        assert _missing(dae, library) == []


def test_the_same_content_elsewhere_notes_its_own_missing_texture(library):
    assert _missing(library / "meshes" / "cube.dae", library) == []
    other = library / "other" / "deeper"  # ../textures/t.png is not there
    other.mkdir(parents=True)
    shutil.copyfile(library / "meshes" / "cube.dae", other / "cube.dae")
    assert len(_missing(other / "cube.dae", library)) == 1


def test_a_gltf_buffer_edited_gives_the_new_geometry(tmp_path):
    for name, data in trimesh.creation.box().export(file_type="gltf").items():
        (tmp_path / name).write_bytes(data)
    gltf = tmp_path / "model.gltf"
    meshes.clear_cache()
    first = meshes.load_mesh(gltf, root=tmp_path)
    doubled = trimesh.creation.box(extents=(2.0, 2.0, 2.0)).export(file_type="gltf")
    for name in ("gltf_buffer_0.bin", "gltf_buffer_1.bin"):  # model.gltf itself is unchanged
        (tmp_path / name).write_bytes(doubled[name])
    again = meshes.load_mesh(gltf, root=tmp_path)
    assert np.allclose(again.vertices, 2 * first.vertices)
    assert again.sha256 != first.sha256  # what mass properties and other caches are keyed on
    meshes.clear_cache()


@pytest.mark.slow  # two builds
def test_two_builds_in_one_process_give_the_same_release(builds, library, tmp_path):
    source = SourceConfig(name="lib", format="urdf", path=library, license="CC0-1.0")
    hashes, rows = [], []
    for out in (tmp_path / "release1", tmp_path / "release2"):  # no cache: both compute
        builds.release([source], out)
        hashes.append(json.loads((out / "release.json").read_text())["content_hash"])
        rows.append(pq.read_table(out / "manifest" / "source_files.parquet").to_pylist())
    assert any(r["path"].endswith("textures/t.png") for r in rows[0])
    assert rows[1] == rows[0] and hashes[1] == hashes[0]
