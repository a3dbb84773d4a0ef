"""Provenance per object: the sources file's url, revision, homepage, citation and SPDX license
reach objects.source_url / source_revision, release.json and LICENSES.md; source_files lists
every file an object was built from with its sha256; the release holds its sources file."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
import yaml
from verify_assets import door_urdf, write

from export.digests import sha256_file
from flows.commands import EXIT_OK
from normalize.sources import SourcesFileError, load_sources

PROVENANCE = {
    "url": "https://example.org/doors.git",
    "revision": "0123456789abcdef0123456789abcdef01234567",
    "homepage": "https://example.org/doors",
    "citation": "@misc{doors, title={Doors}}",
    "spdx": "MIT",
}


@pytest.fixture()
def library(tmp_path):
    mesh = "v 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nv 0 0 0.1\nf 1 2 3\nf 1 2 4\nf 1 3 4\nf 2 3 4\n"
    door = door_urdf(extra="").replace(
        '<link name="door">',
        '<link name="door"><visual><geometry><mesh filename="knob.obj"/></geometry></visual>',
    )
    root = write(
        tmp_path / "library",
        {"doors/a/door.urdf": door, "doors/a/knob.obj": mesh, "plain/b.urdf": door_urdf()},
    )
    doors = {"name": "doors", "format": "urdf", "path": "doors", "license": "MIT License"}
    plain = {"name": "plain", "format": "urdf", "path": "plain", "license": "unstated"}
    (root / "sources.yaml").write_text(
        "# the sources file, copied into the release as it is\n"
        + yaml.safe_dump({"sources": [{**doors, **PROVENANCE}, plain]}, sort_keys=False)
    )
    return root


def test_provenance_reaches_the_release(builds, library, tmp_path):
    out = tmp_path / "out"
    assert builds.command(library, out) == EXIT_OK
    objects = {o["source"]: o for o in pq.read_table(out / "manifest/objects.parquet").to_pylist()}
    assert objects["doors"]["source_url"] == PROVENANCE["url"]
    assert objects["doors"]["source_revision"] == PROVENANCE["revision"]
    assert objects["plain"]["source_url"] is None and objects["plain"]["source_revision"] is None

    files = pq.read_table(out / "manifest/source_files.parquet").to_pylist()
    doors_files = {r["path"]: r["sha256"] for r in files if r["object_id"] == "doors__a__door"}
    assert set(doors_files) == {"a/door.urdf", "a/knob.obj"}
    for path, digest in doors_files.items():
        assert sha256_file(library / "doors" / path) == digest
    assert {r["object_id"] for r in files} == {o["object_id"] for o in objects.values()}

    assert (out / "sources.yaml").read_bytes() == (library / "sources.yaml").read_bytes()
    info = json.loads((out / "release.json").read_text())
    doors = next(s for s in info["sources"] if s["name"] == "doors")
    assert {k: doors[k] for k in PROVENANCE} == PROVENANCE
    licenses = (out / "LICENSES.md").read_text()
    assert "@misc{doors" in licenses and "- revision: 0123456789abcdef" in licenses
    front = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])
    assert front["license"] == "other" and front["license_link"] == "LICENSES.md", "plain: no SPDX"
    assert "source_files" in {c["config_name"] for c in front["configs"]}


def test_the_sources_schema_checks_provenance_fields(tmp_path):
    path = tmp_path / "sources.yaml"
    (tmp_path / "lib").mkdir()
    entry = {"name": "x", "format": "urdf", "path": "lib", "license": "MIT", "spdx": "MIT"}
    path.write_text(yaml.safe_dump({"sources": [{**entry, "revision": "v1.2"}]}))
    assert load_sources(path)[0].revision == "v1.2"
    path.write_text(yaml.safe_dump({"sources": [{**entry, "commit": "abc"}]}))
    with pytest.raises(SourcesFileError, match="commit"):
        load_sources(path)
    path.write_text(yaml.safe_dump({"sources": [{**entry, "spdx": "MIT; or else"}]}))
    with pytest.raises(SourcesFileError, match="spdx"):
        load_sources(path)
