"""`arena validate` as a user runs it: a subprocess, its exit codes, its table and its JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from verify_assets import door_urdf, write

import schemas

ARENA = Path(sys.executable).parent / "arena"


def arena(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(ARENA), "validate", *map(str, args)], capture_output=True, text=True, timeout=300
    )


def document(run: subprocess.CompletedProcess) -> dict:
    data = json.loads(run.stdout)
    schemas.validate(data, "validation_report")
    return data


@pytest.fixture
def library(tmp_path):
    """A good door, a door with a frozen hinge (warning) and a malformed file."""
    write(tmp_path / "lib" / "good", {"door.urdf": door_urdf()})
    write(tmp_path / "lib" / "frozen", {"door.urdf": door_urdf(lower=0.0, upper=0.0)})
    write(tmp_path / "lib" / "broken", {"door.urdf": '<robot name="x"><link name="a"></robot>'})
    return tmp_path / "lib"


def test_passing_object_exits_0_with_a_schema_valid_json_report(library):
    run = arena(library / "good", "--json")
    assert run.returncode == 0, run.stderr
    data = document(run)
    assert data["summary"]["objects"] == 1 and data["summary"]["pass"] == 1
    [entry] = data["objects"]
    assert entry["status"] == "pass" and entry["moving_joints"] == 1
    assert entry["format"] == "urdf"
    assert not any(p.name == "object.urdf" for p in library.rglob("*"))  # source untouched


def test_warnings_pass_unless_strict(library):
    assert arena(library / "frozen").returncode == 0
    run = arena(library / "frozen", "--strict", "--json")
    assert run.returncode == 1
    data = document(run)
    assert data["summary"]["strict"] is True and data["summary"]["warn"] == 1
    assert data["objects"][0]["warnings"] == ["structure.moving_joints"]  # the hinge is fixed


@pytest.mark.slow
def test_a_failing_object_exits_1_and_is_named_in_the_table(library):
    run = arena(library)
    assert run.returncode == 1
    assert "Traceback" not in run.stderr
    for text in ("broken", "fail", "xml.malformed", "good", "pass", "frozen", "warn"):
        assert text in run.stdout
    data = document(arena(library, "--json"))
    statuses = {o["source_id"].split("/")[0]: o["status"] for o in data["objects"]}
    assert statuses == {"good": "pass", "frozen": "warn", "broken": "fail"}
    assert data["summary"]["failing_checks"] == {"xml.malformed": 1}
    assert data["summary"]["exit_code"] == 1


def test_usage_errors_exit_2_without_a_traceback(tmp_path, library):
    for args in (
        [tmp_path / "missing"],
        [library, "--format", "obj"],
        [write(tmp_path / "empty", {"notes.txt": "no asset here"})],
    ):
        run = arena(*args)
        assert run.returncode == 2, args
        assert "Traceback" not in run.stderr and "error" in run.stderr
    assert arena().returncode == 2  # no PATH at all


def test_corpus_objects_from_the_command_line(corpus):
    run = arena(corpus / "partnet_mobility" / "10495", "--json")
    assert run.returncode == 0, run.stdout[-2000:]
    [entry] = document(run)["objects"]
    assert entry["object_id"] == "partnet_mobility__10495" and entry["status"] == "warn"
    # its drawer enters the convex hull of its one-mesh cabinet by 4 mm: the only warning
    warned = {c["id"] for c in entry["checks"] if not c["passed"] and c["severity"] == "warning"}
    assert warned == {"mechanism.penetration"}
    run = arena(corpus / "gensim2_partnet" / "1011", "--json")
    assert run.returncode == 1
    [entry] = document(run)["objects"]
    assert entry["failures"] == ["mesh.missing"] and entry["stage"] == "mesh"


def test_validate_never_imports_prefect(library):
    code = (
        "import sys\n"
        "from flows.cli import app\n"
        f"sys.argv = ['arena', 'validate', {str(library / 'good')!r}]\n"
        "try:\n    app()\nexcept SystemExit as exc:\n    rc = exc.code\n"
        "assert rc == 0, rc\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'prefect'))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "[]"
