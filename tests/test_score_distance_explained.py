"""`arena distance` says why: the matching (which joint of A goes to which of B, the unmatched
ones named), each pair's contribution with its unit (dimensionless for E_alpha, metres for E_B)
and what differs (type, axis angle, origin offset, limits)."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from scoring_support import (
    CABINET,
    checked_release,
    ground_truth,
    with_joint,
    with_spurious_joint,
    write_prediction,
)
from typer.testing import CliRunner

from flows.cli import app


@pytest.fixture(scope="session")
def release(sample_release):
    return checked_release(sample_release)


@pytest.fixture(scope="module")
def changed_cabinet(release, tmp_path_factory):
    """The cabinet with joint_0's axis turned by 90 degrees, joint_1's hinge moved 5 cm across
    its axis, joint_2's upper limit lowered to 0.2 m and an extra revolute joint `spurious`
    ([0, 1] rad); the ground truth's folder; the ground truth; the change without `spurious`."""
    gt = ground_truth(release, CABINET)
    assert gt.joint_map["joint_0"].axis.tolist() == [0.0, 0.0, 1.0]
    hinge = gt.joint_map["joint_1"]
    assert np.allclose(hinge.origin[:3, :3] @ hinge.axis, [0.0, 0.0, 1.0])
    assert gt.joint_map["joint_2"].type == "prismatic"
    pred = with_joint(gt, "joint_0", axis=np.array([1.0, 0.0, 0.0]))
    moved = hinge.origin.copy()
    moved[:3, 3] += (0.05, 0.0, 0.0)
    pred = with_joint(pred, "joint_1", origin=moved)
    pred = with_joint(pred, "joint_2", upper=0.2)
    folder = tmp_path_factory.mktemp("changed")
    a = write_prediction(with_spurious_joint(pred, "base", 1.0), folder, "extra").parent
    b = release / "objects" / CABINET
    return a, b, gt, write_prediction(pred, folder, "no_extra").parent


def blocks(text: str) -> dict[str, list[str]]:
    """The printed pairs: 'A -> B' line -> its indented difference lines."""
    out, current = {}, None
    for line in text.splitlines():
        if line.startswith("  ") and " -> " in line:
            current = line.strip()
            out[current] = []
        elif line.startswith("      ") and current is not None:
            out[current].append(line.strip())
        else:
            current = None
    return out


def test_distance_prints_the_matching_contributions_and_differences(changed_cabinet):
    a, b, gt, _ = changed_cabinet
    runner = CliRunner()
    text = runner.invoke(app, ["distance", str(a), str(b)])
    assert text.exit_code == 0, text.output
    result = json.loads(runner.invoke(app, ["distance", str(a), str(b), "--json"]).output)
    total = result["E_tree"]
    assert text.output.startswith(f"E_alpha^{{phi,tree}}(A, B) = {total:.6g}  (split norm")
    assert "; dimensionless)" in text.output.splitlines()[0]
    assert "matching (A -> B), 5 pairs:" in text.output

    pairs = blocks(text.output)
    assert len(pairs) == 5
    by_joint = {line.split(" -> ")[0]: (line, diff) for line, diff in pairs.items()}
    pattern = r"joint_\d -> joint_\d  E = ([0-9.e-]+) \(dimensionless, ([0-9.]+) % of the total\)"
    for name, (line, _) in by_joint.items():
        e, share = re.fullmatch(pattern, line).groups()
        assert line.startswith(f"{name} -> {name} ")  # each joint matched to its own
        assert float(share) == pytest.approx(100 * float(e) / total, abs=0.06)
    assert by_joint["joint_0"][1] == ["axis angle: 90 deg"]
    j2 = gt.joint_map["joint_2"]
    assert by_joint["joint_2"][1] == [
        f"limits: A [{j2.lower:.6g}, 0.2] m, B [{j2.lower:.6g}, {j2.upper:.6g}] m"
    ]
    assert by_joint["joint_1"][1] == ["origin offset: 0.05 m between the axis lines"]
    for name in ("joint_3", "joint_4"):
        assert by_joint[name][1] == ["no difference in type, axis, origin or limits"]
    assert "unmatched joints of A (contracted), each against the fixed joint J0:" in text.output
    assert re.search(
        r"^  spurious \(revolute, limits \[0, 1\] rad\)  E\(J, J0\) = [0-9.e-]+ \(dimensionless",
        text.output,
        flags=re.M,
    )
    assert "unmatched joints of B" not in text.output

    # The JSON says the same, and the contributions add up to the total.
    diff = {p["a_joint"]: p["differences"] for p in result["pairs"]}
    assert diff["joint_0"]["axis_angle_deg"] == pytest.approx(90.0)
    assert diff["joint_1"]["origin_offset_m"] == pytest.approx(0.05)
    assert diff["joint_2"]["origin_offset_m"] is None  # a translation has no axis line
    assert diff["joint_2"]["a_limits"] == [pytest.approx(j2.lower), pytest.approx(0.2)]
    assert diff["joint_2"]["b_limits"] == [pytest.approx(j2.lower), pytest.approx(j2.upper)]
    assert [u["joint"] for u in result["unmatched_a"]] == ["spurious"]
    parts = [p["E"] for p in result["pairs"]] + [u["E"] for u in result["unmatched_a"]]
    assert math.fsum(parts) == pytest.approx(total, rel=1e-12)


def test_distance_kinetic_contributions_are_in_metres(changed_cabinet):
    _, b, _, a = changed_cabinet  # without the massless spurious link
    runner = CliRunner()
    metres = runner.invoke(app, ["distance", str(a), str(b), "--norm", "kinetic", "--no-compact"])
    assert metres.exit_code == 0, metres.output
    first = metres.output.splitlines()[0]
    assert re.fullmatch(r"E_B\^tree\(A, B\) = [0-9.e-]+ m  \(kinetic norm, .*; in metres\)", first)
    lines = list(blocks(metres.output))
    assert len(lines) == 5
    assert all(re.search(r"  E = [0-9.e-]+ m \([0-9.]+ % of the total\)$", line) for line in lines)
    compact = runner.invoke(app, ["distance", str(a), str(b), "--norm", "kinetic", "--json"])
    assert json.loads(compact.output)["unit"] == "dimensionless"  # phi maps into the unit ball
