"""`loads_in`: where an object loads, from its check results, in the objects manifest (typed by
its schema), the browser's data and the dataset card."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from verify_assets import door_urdf, urdf_source, write

from export.card import LOADER_LABELS, loads_in_markdown
from normalize.adapters import discover
from normalize.run import normalize_candidate
from verify import verify_object
from verify.report import LOADS_IN, CheckResult, VerificationReport

SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "objects.schema.json"


def report(*checks: tuple[str, bool]) -> VerificationReport:
    out = VerificationReport(object_id="o", source="s", source_id="o", source_path="o.urdf")
    out.checks = [CheckResult(i, "error", passed, "") for i, passed in checks]
    return out


def test_a_loader_counts_when_all_its_checks_ran_and_passed():
    checks = report(
        ("simulator.compile", True),
        ("simulator.load.pybullet", False),  # refused the file
        ("simulator.skipped", False),  # SAPIEN not installed: none of its checks ran
        ("simulator.load.yourdfpy", True),
        ("simulator.load.usd", True),
        ("simulator.usd.links", True),
        ("simulator.usd.joints", True),
        ("simulator.usd.rest_pose", False),  # read back, but one link elsewhere
        ("simulator.usd.rest_pose", True),
    )
    assert checks.loads_in == ["mujoco", "yourdfpy"]
    checks.checks = [c for c in checks.checks if not (c.id.endswith("rest_pose") and not c.passed)]
    assert checks.loads_in == ["mujoco", "yourdfpy", "usd"]


def test_the_schema_and_the_card_name_every_loader_in_order():
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    assert "loads_in" in schema["required"]
    description = schema["properties"]["loads_in"]["description"]
    named = sorted(LOADS_IN, key=lambda name: description.index(f"{name} ("))
    assert named == list(LOADS_IN), "each name described, in the order of LOADS_IN"
    assert list(LOADER_LABELS) == list(LOADS_IN)


def test_the_card_counts_each_loader_over_the_accepted_objects():
    objects = [{"loads_in": ["mujoco", "pybullet"]}, {"loads_in": ["mujoco"]}, {"loads_in": []}]
    text = "\n".join(loads_in_markdown(objects))
    assert "| MuJoCo (object.urdf) | 2/3 |" in text
    assert "| PyBullet | 1/3 |" in text
    assert "| SAPIEN | 0/3 |" in text


def test_a_verified_door_loads_in_every_installed_loader(tmp_path):
    pytest.importorskip("mujoco")
    root = write(tmp_path / "src", {"cabinet.urdf": door_urdf()})
    source = urdf_source(root)
    [candidate] = discover(source)
    verified = verify_object(normalize_candidate(candidate, tmp_path / "out"), source)
    skipped = {c.element.removeprefix("loader ") for c in verified.check("simulator.skipped")}
    expected = [name for name in LOADS_IN if name not in skipped]
    assert verified.loads_in == expected and "mujoco" in expected
