"""A bad --previous (garbage or incomplete objects.parquet) is a usage error found before the
build starts (exit 2, no traceback, nothing computed or published)."""

from __future__ import annotations

import shutil

import pyarrow.parquet as pq
import pytest
from hostile_library import build
from verify_assets import door_urdf, write


def _build(builds, tmp_path, out, previous=None):
    sources = tmp_path / "sources.yaml"
    return build(
        builds, sources, tmp_path / out, tmp_path / "cache", version=out, previous=previous
    )


@pytest.fixture(scope="module")
def first(builds, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("previous")
    write(tmp_path / "lib" / "control_a", {"door.urdf": door_urdf()})
    (tmp_path / "sources.yaml").write_text(
        "sources:\n  - {name: lib, format: urdf, path: lib, license: t}\n", encoding="utf-8"
    )
    assert _build(builds, tmp_path, "first") == 0
    return tmp_path


@pytest.mark.parametrize("damage", ["garbage", "no_category", "missing"])
def test_a_bad_previous_is_refused_before_the_build(builds, first, damage, capsys):
    previous = first / f"prev-{damage}"
    shutil.copytree(first / "first", previous)
    objects = previous / "manifest" / "objects.parquet"
    if damage == "garbage":
        objects.write_bytes(b"PAR1 not really a parquet file")
    elif damage == "no_category":
        pq.write_table(pq.read_table(objects).drop_columns(["category"]), objects)
    else:
        objects.unlink()
    assert _build(builds, first, f"out-{damage}", previous) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "release" in err
    assert not (first / f"out-{damage}").exists()


def test_a_good_previous_still_builds(builds, first):
    assert _build(builds, first, "second", first / "first") == 0
    assert "against first" in (first / "second" / "CHANGELOG.md").read_text()
