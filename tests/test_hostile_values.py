"""Names and numbers are data: a literal overflowing to infinity is refused like a written
infinity (`parse.infinite`, in the hostile build), a sources file `scale` outside 1e-6..1e6 is
a usage error, a meta.json nested too deeply leaves the labels empty with `labels.too_deep`,
and `arena validate` prints names holding rich markup as they are."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest
from hostile_library import _SDF_HINGE, _mjcf, _sdf, build
from test_verify_hostile import TWO_LINKS, joint, robot
from verify_assets import door_urdf, urdf_source, write

from normalize.adapters import discover
from normalize.errors import AssetError
from normalize.run import normalize_candidate
from normalize.sources import SourceConfig, SourcesFileError, load_sources
from verify.validate import validate_command


@pytest.mark.parametrize("scale", ["1.0e+300", ".inf", ".nan", "1.0e-300"])
def test_a_scale_that_would_overflow_the_checks_is_a_usage_error(builds, tmp_path, scale):
    (tmp_path / "lib").mkdir()
    sources = tmp_path / "sources.yaml"
    sources.write_text(
        f"sources:\n  - {{name: lib, format: urdf, path: lib, license: t, scale: {scale}}}\n",
        encoding="utf-8",
    )
    with pytest.raises(SourcesFileError, match="scale"):
        load_sources(sources)
    assert build(builds, sources, tmp_path / "out", tmp_path / "cache") == 2


def test_a_deeply_nested_meta_json_leaves_the_labels_empty_with_its_code(builds, tmp_path):
    depth = 100_000
    write(tmp_path / "lib" / "1", {"mobility.urdf": door_urdf(), "meta.json": "[" * depth})
    write(tmp_path / "lib" / "control", {"mobility.urdf": door_urdf()})
    sources = tmp_path / "sources.yaml"
    sources.write_text(
        "sources:\n  - {name: p, format: partnet_mobility, path: lib, license: t}\n",
        encoding="utf-8",
    )
    assert build(builds, sources, tmp_path / "out", tmp_path / "cache") == 0
    rows = pq.read_table(tmp_path / "out" / "manifest" / "objects.parquet").to_pylist()
    [row] = [r for r in rows if r["source_id"] == "1"]
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


@pytest.mark.parametrize(("mass", "accepted"), [("3.5e10", True), ("1e300", False)])
def test_the_magnitude_bound_applies_after_the_sources_scale(tmp_path, mass, accepted):
    """A millimetre source (scale 0.001) declares masses for millimetre volumes: 3.5e10 there is
    35 kg, within the bound; 1e300 stays refused."""

    inertial = (
        f'<inertial><mass value="{mass}"/><inertia ixx="1e15" iyy="1e15" izz="1e15" ixy="0" '
        'ixz="0" iyz="0"/></inertial><visual><geometry><box size="400 400 400"/></geometry>'
        "</visual>"
    )
    body = TWO_LINKS.replace('<link name="a">', f'<link name="a">{inertial}', 1)
    urdf = robot(body + joint("ab", "a", "b"))
    root = write(tmp_path / "src", {"m.urdf": urdf})
    [candidate] = discover(urdf_source(root, scale=0.001))
    if accepted:
        result = normalize_candidate(candidate, tmp_path / "out")
        [link] = [
            link
            for link in result.object.links
            if link.inertial is not None and link.inertial.mass > 1
        ]
        assert link.inertial.mass == pytest.approx(35.0)
    else:
        with pytest.raises(AssetError) as refused:
            normalize_candidate(candidate, tmp_path / "out")
        assert refused.value.code == "parse.out_of_range"
        assert "scale 0.001" in str(refused.value)


@pytest.mark.parametrize("fmt", ["urdf", "sdf", "mjcf"])
@pytest.mark.parametrize("axis", ["1e300 1e300 0", "1e-300 1e-300 0"])
def test_an_axis_whose_length_overflows_or_underflows_is_normalized_and_recorded(
    tmp_path, fmt, axis
):
    """Its square overflows (or underflows) a float: the direction is still well defined, so the
    axis is scaled to unit length by its largest component first, never taken for zero."""
    if fmt == "urdf":
        files = {"m.urdf": door_urdf().replace('<axis xyz="0 0 1"/>', f'<axis xyz="{axis}"/>')}
    elif fmt == "sdf":
        files = {"model.sdf": _sdf(_SDF_HINGE.replace("<xyz>0 0 1</xyz>", f"<xyz>{axis}</xyz>"))}
    else:
        files = {"m.xml": _mjcf("").replace('axis="0 0 1"', f'axis="{axis}"')}
    write(tmp_path / "lib" / "obj", files)
    source = SourceConfig(name=fmt, format=fmt, path=(tmp_path / "lib").resolve(), license="t")
    [candidate] = discover(source)
    result = normalize_candidate(candidate, tmp_path / "out")
    assert "axis.normalized" in [c.code for c in result.changes]
    [moving] = [j for j in result.object.joints if j.moving]
    assert np.allclose(np.abs(moving.axis), [2**-0.5, 2**-0.5, 0.0])
