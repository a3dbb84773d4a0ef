"""Safe YAML everywhere: the sources file, the overrides file, a per-object allowances file
(from inside the untrusted library: in the hostile build) and a taxonomy file go through one
loader that refuses aliases (`yaml.alias`) and files above its size cap (`yaml.too_large`), so
a 400-byte alias bomb fails at once instead of expanding into gigabytes."""

from __future__ import annotations

import time

import pytest
from hostile_library import ALIAS_BOMB, build
from verify_assets import door_urdf, write

from normalize.safe_yaml import MAX_YAML_BYTES, YamlError, parse_yaml
from normalize.sources import SourcesFileError, load_sources
from taxonomy import TaxonomyError
from taxonomy.data import load_overrides, load_taxonomy

SOURCES = "sources:\n  - {name: lib, format: urdf, path: lib, license: test}\n"


def test_an_alias_is_refused_before_anything_expands():
    started = time.perf_counter()
    with pytest.raises(YamlError) as info:
        parse_yaml(ALIAS_BOMB)
    assert info.value.code == "yaml.alias"
    assert time.perf_counter() - started < 1.0
    assert parse_yaml("a: &x 1\nb: 2\n") == {"a": 1, "b": 2}  # an anchor alone is harmless


def test_an_alias_bomb_in_the_sources_file_exits_2_at_once(builds, tmp_path, capsys):
    write(tmp_path / "lib" / "control_a", {"door.urdf": door_urdf()})
    sources = tmp_path / "sources.yaml"
    sources.write_text(ALIAS_BOMB + SOURCES, encoding="utf-8")
    with pytest.raises(SourcesFileError, match=r"yaml\.alias"):
        load_sources(sources)
    assert build(builds, sources, tmp_path / "out", tmp_path / "cache") == 2
    err = capsys.readouterr().err
    assert "yaml.alias" in err and len(err) < 2000  # no expanded document in the message
    assert not (tmp_path / "out").exists()


def test_an_alias_bomb_in_the_overrides_file_exits_2(builds, tmp_path, capsys):
    write(tmp_path / "lib" / "control_a", {"door.urdf": door_urdf()})
    sources = tmp_path / "sources.yaml"
    sources.write_text(SOURCES, encoding="utf-8")
    overrides = tmp_path / "overrides.yaml"
    overrides.write_text(ALIAS_BOMB + "version: 1\noverrides: {}\n", encoding="utf-8")
    with pytest.raises(TaxonomyError, match=r"yaml\.alias") as info:
        load_overrides(overrides)
    assert info.value.code == "overrides.unreadable"
    assert build(builds, sources, tmp_path / "out", tmp_path / "cache", overrides=overrides) == 2
    assert "yaml.alias" in capsys.readouterr().err


def test_taxonomy_files_and_the_size_cap(tmp_path):
    bomb = tmp_path / "taxonomy.yaml"
    bomb.write_text(ALIAS_BOMB, encoding="utf-8")
    with pytest.raises(TaxonomyError, match=r"yaml\.alias"):
        load_taxonomy(bomb)
    big = tmp_path / "sources.yaml"
    with open(big, "wb") as f:
        f.truncate(MAX_YAML_BYTES + 1)
    with pytest.raises(SourcesFileError, match=r"yaml\.too_large"):
        load_sources(big)
