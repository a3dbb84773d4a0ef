"""Names and numbers are data: a literal overflowing to infinity is refused like a written
infinity (`parse.infinite`, in the hostile build), a sources file `scale` outside 1e-6..1e6 is
a usage error, a meta.json nested too deeply leaves the labels empty with `labels.too_deep`,
and `arena validate` prints names holding rich markup as they are."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from hostile_library import build
from test_verify_hostile import TWO_LINKS, joint, robot
from verify_assets import door_urdf, write

from normalize.sources import SourcesFileError, load_sources
from verify.validate import validate_command


def _build(tmp_path, sources):
    return build(sources, tmp_path / "out", tmp_path / "cache")


@pytest.mark.parametrize("scale", ["1.0e+300", ".inf", ".nan", "1.0e-300"])
def test_a_scale_that_would_overflow_the_checks_is_a_usage_error(tmp_path, scale):
    (tmp_path / "lib").mkdir()
    sources = tmp_path / "sources.yaml"
    sources.write_text(
        f"sources:\n  - {{name: lib, format: urdf, path: lib, license: t, scale: {scale}}}\n",
        encoding="utf-8",
    )
    with pytest.raises(SourcesFileError, match="scale"):
        load_sources(sources)
    assert _build(tmp_path, sources) == 2


def test_a_deeply_nested_meta_json_leaves_the_labels_empty_with_its_code(tmp_path):
    depth = 100_000
    write(tmp_path / "lib" / "1", {"mobility.urdf": door_urdf(), "meta.json": "[" * depth})
    sources = tmp_path / "sources.yaml"
    sources.write_text(
        "sources:\n  - {name: p, format: partnet_mobility, path: lib, license: t}\n",
        encoding="utf-8",
    )
    assert _build(tmp_path, sources) == 0
    [row] = pq.read_table(tmp_path / "out" / "manifest" / "objects.parquet").to_pylist()
    assert "labels.too_deep" in row["changes"]


def test_validate_prints_names_with_rich_markup_as_they_are(tmp_path, capsys):
    for folder, name in (("closing", "[/bold]"), ("balanced", "[red]lid[/red]")):
        urdf = robot(TWO_LINKS + joint("ab", "a", name))  # an unknown link, named in the message
        write(tmp_path / folder, {"m.urdf": urdf})
    code = validate_command([tmp_path])
    out = capsys.readouterr().out
    assert code == 1
    flat = "".join(out.split())  # the table folds long cells over lines
    assert "[/bold]" in flat and "[red]lid[/red]" in flat
