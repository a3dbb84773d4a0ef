"""`arena normalize --sources FILE --out DIR`: objects and a schema-valid report accounting for
every discovered candidate."""

from __future__ import annotations

import json

from typer.testing import CliRunner

import schemas
from flows.cli import app

GOOD = """<robot name="lamp"><link name="a"><visual><geometry><box size="1 1 1"/></geometry>
</visual></link><link name="b"><visual><geometry><sphere radius="0.1"/></geometry></visual>
</link><joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
<limit lower="-1" upper="1"/></joint></robot>"""
BAD = GOOD.replace('<axis xyz="0 0 1"/>', '<origin xyz="$(optenv X 0 0 0)"/><axis xyz="0 0 1"/>')


def test_normalize_command_writes_objects_and_report(tmp_path):
    library = tmp_path / "lib"
    (library / "robots").mkdir(parents=True)
    (library / "robots" / "good.urdf").write_text(GOOD)
    (library / "robots" / "bad.urdf").write_text(BAD)
    (library / "notes.txt").write_text("not a robot")
    sources = tmp_path / "sources.yaml"
    sources.write_text(
        "sources:\n  - name: mine\n    format: urdf\n    path: lib\n    license: CC0\n"
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["normalize", "--sources", str(sources), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "normalized 1 of 2 objects from 1 sources" in result.output
    assert "rejected    1  parse.number" in result.output
    report = json.loads((out / "normalize_report.json").read_text())
    schemas.validate(report, "normalize_report")
    entries = {o["source_id"]: o for o in report["objects"]}
    assert set(entries) == {"robots/good", "robots/bad"}
    good, bad = entries["robots/good"], entries["robots/bad"]
    assert good["status"] == "normalized"
    assert good["urdf_path"] == "objects/mine__robots__good/object.urdf"
    assert (out / good["urdf_path"]).is_file()
    assert {"frame.placement", "inertial.computed"} <= {c["code"] for c in good["changes"]}
    assert (bad["status"], bad["stage"], bad["code"], bad["urdf_path"]) == (
        "rejected",
        "parse",
        "parse.number",
        None,
    )
    assert "bad.urdf" in bad["message"] and "joint j" in bad["message"]
    assert sorted(p.name for p in (out / "objects").iterdir()) == ["mine__robots__good"]


def test_normalize_command_on_the_sample_library(sample_library, tmp_path):
    out = tmp_path / "out"
    sources = sample_library / "sources.yaml"
    result = CliRunner().invoke(app, ["normalize", "--sources", str(sources), "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "normalize_report.json").read_text())
    schemas.validate(report, "normalize_report")
    assert len(report["objects"]) == 40
    assert all(o["status"] == "normalized" for o in report["objects"]), [
        (o["object_id"], o["code"]) for o in report["objects"] if o["status"] != "normalized"
    ]
    assert {s["format"] for s in report["sources"]} == {"partnet_mobility", "urdf", "mjcf", "sdf"}


def test_bad_sources_file_is_a_usage_error(tmp_path):
    sources = tmp_path / "sources.yaml"
    sources.write_text("sources:\n  - name: x\n    format: obj\n    path: nowhere\n")
    result = CliRunner().invoke(app, ["normalize", "--sources", str(sources), "--out", "o"])
    assert result.exit_code == 2
    assert "format" in result.output and "Traceback" not in result.output
