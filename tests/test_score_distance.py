"""`arena distance`: joint lists against the authors' reference tool, and whole objects (split and
kinetic norms) against hand computation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import yaml
from scoring_support import (
    FAUCET,
    LAPTOP,
    checked_release,
    ground_truth,
    hand_e_phi,
    hand_to_fixed,
    joint_of,
    with_joint,
    write_prediction,
)
from typer.testing import CliRunner

from flows.cli import app

articulatearena = pytest.importorskip("articulatearena")


@pytest.fixture(scope="session")
def release(sample_release):
    return checked_release(sample_release)


def random_joint_file(path, n: int, seed: int) -> None:
    """Reference-format joints: random (non-unit) twists, limits in either order, some equal."""
    rng = np.random.default_rng(seed)

    def joint():
        twist = rng.normal(size=6) * rng.choice([0.1, 1.0, 3.0])
        a, b = rng.uniform(-2, 2, size=2)
        if rng.random() < 0.15:
            b = a
        return {"xi_hat": twist.tolist(), "a": float(a), "b": float(b)}

    data = {"prediction": [joint() for _ in range(n)], "ground_truth": [joint() for _ in range(n)]}
    path.write_text(json.dumps(data), encoding="utf-8")


def ours(path, *options) -> list[dict]:
    result = CliRunner().invoke(app, ["distance", "--joints", str(path), "--json", *options])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert list(out) == ["pairs"]
    return out["pairs"]


@pytest.mark.parametrize("alpha", [1.0, 2.5])
def test_joint_lists_match_the_reference_tool(tmp_path, alpha):
    from articulatearena import compactified_joint_metric, make_endpoint_pair, make_split_norm
    from articulatearena.cli import main as reference_main
    from articulatearena.read.config_loader import DEFAULT_CONFIG_PATH

    data = tmp_path / "joints.json"
    random_joint_file(data, 40, seed=int(alpha * 10))
    # The reference CLI computes E under the split norm of its config (packaged default:
    # alpha 1); for another alpha it gets a config with split_norm_alpha changed.
    config = yaml.safe_load(DEFAULT_CONFIG_PATH.read_text(encoding="utf-8"))
    config["inner_product"]["split_norm_alpha"] = alpha
    for section in ("prediction", "ground_truth"):
        config.pop(section, None)
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    report = reference_main([str(config_path), "--data", str(data), "--output", str(tmp_path)])
    cost = np.array(json.loads(report.read_text(encoding="utf-8"))["joint_metrics"]["cost_matrix"])
    pairs = ours(data, "--alpha", str(alpha))
    # Pairs in input order are the diagonal of the reference tool's cost matrix.
    assert [p["E"] for p in pairs] == pytest.approx(np.diag(cost).tolist(), rel=1e-12, abs=1e-14)
    # E^phi: the reference tool's compactified metric with kappa = pi (its benchmark setting).
    raw = json.loads(data.read_text(encoding="utf-8"))
    norm = make_split_norm(alpha)
    expected = []
    for p, g in zip(raw["prediction"], raw["ground_truth"], strict=True):
        a = make_endpoint_pair(np.array(p["xi_hat"]), p["a"], p["b"])
        b = make_endpoint_pair(np.array(g["xi_hat"]), g["a"], g["b"])
        expected.append(
            compactified_joint_metric(a.u.data, a.v.data, b.u.data, b.v.data, norm, math.pi)
        )
    assert [p["E_phi"] for p in pairs] == pytest.approx(expected, rel=1e-12, abs=1e-14)


def test_joint_lists_with_unbounded_joints(tmp_path):
    from articulatearena import continuous_joint_repr, joint_metric, make_split_norm
    from articulatearena import radial_compactify as phi

    xi = [0.0, 0.0, 1.0, 0.1, -0.2, 0.0]
    data = {
        "prediction": [{"xi_hat": xi, "a": -1.0, "b": 2.0}, {"xi_hat": xi, "a": None, "b": None}],
        "ground_truth": [{"xi_hat": xi, "a": "-inf", "b": "inf"}, {"xi_hat": xi, "a": 0, "b": 1}],
    }
    path = tmp_path / "joints.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    pairs = ours(path)
    assert pairs[0]["E"] is None and pairs[1]["E"] is None
    norm = make_split_norm(1.0)
    boundary = continuous_joint_repr(np.array(xi), norm)
    finite = [phi(np.array(xi) * s, math.pi, norm) for s in (-1.0, 2.0)]
    assert pairs[0]["E_phi"] == pytest.approx(joint_metric(*finite, *boundary, norm), rel=1e-12)
    text = CliRunner().invoke(app, ["distance", "--joints", str(path)])
    assert text.exit_code == 0 and "pair 0: E = undefined" in text.output


def test_joint_list_usage_errors(tmp_path):
    runner = CliRunner()
    good = tmp_path / "good.json"
    random_joint_file(good, 2, seed=0)
    uneven = tmp_path / "uneven.json"
    uneven.write_text(
        json.dumps({"prediction": [], "ground_truth": [{"xi_hat": [0] * 6, "a": 0, "b": 1}]}),
        encoding="utf-8",
    )
    bad_twist = tmp_path / "bad.json"
    bad_twist.write_text(
        json.dumps({"prediction": [{"xi_hat": [1, 2], "a": 0, "b": 1}], "ground_truth": []}),
        encoding="utf-8",
    )
    cases = [
        (["--joints", str(good), "--norm", "kinetic"], "split norm only"),
        (["--joints", str(uneven)], "same length"),
        (["--joints", str(bad_twist)], "6 numbers"),
        (["--joints", str(tmp_path / "missing.json")], "cannot read"),
        ([], "two objects"),
        (["--joints", str(good), str(good), str(good)], "not both"),
    ]
    for args, message in cases:
        result = runner.invoke(app, ["distance", *args])
        assert result.exit_code == 2, args
        assert message in result.output, (args, result.output)


def kinetic_squared(dz, mass, com, inertia) -> float:
    """||dz||_B^2 = (1/m) dw^T I dw + ||dv + dw x c||^2, written out."""
    dw, dv = dz[:3], dz[3:]
    return float(dw @ inertia @ dw / mass + np.sum((dv + np.cross(dw, com)) ** 2))


def test_object_distance_split_and_kinetic(release, tmp_path):
    gt = ground_truth(release, LAPTOP)
    joint = gt.joint_map["joint_0"]
    pred = with_joint(gt, "joint_0", lower=joint.lower + 0.2, upper=joint.upper + 0.2)
    a = write_prediction(pred, tmp_path, "shifted")
    b = release / "objects" / LAPTOP
    runner = CliRunner()
    split = runner.invoke(app, ["distance", str(a), str(b), "--json"])
    assert split.exit_code == 0, split.output
    result = json.loads(split.output)
    j = joint_of(gt, "joint_0")
    assert result["E_tree"] == pytest.approx(hand_e_phi((j[0], j[1] + 0.2, j[2] + 0.2), j))
    assert result["exact"] and result["certified"]
    assert result["pairs"] == [
        {
            "a_joint": "joint_0",
            "b_joint": "joint_0",
            "E": pytest.approx(result["E_tree"]),
            "inverted": False,
            "differences": {
                "a_type": "revolute",
                "b_type": "revolute",
                "axis_angle_deg": 0.0,
                "origin_offset_m": pytest.approx(0.0, abs=1e-12),
                "a_limits": [pytest.approx(j[1] + 0.2), pytest.approx(j[2] + 0.2)],
                "b_limits": [pytest.approx(j[1]), pytest.approx(j[2])],
                "a_limits_negated": False,
            },
        }
    ]
    assert result["unit"] == "dimensionless"
    text = runner.invoke(app, ["distance", str(a), str(b)])
    assert "certified by the assignment relaxation" in text.output
    assert "joint_0 -> joint_0" in text.output
    # Kinetic norm, no compactification: E_B in metres with B's child link moments.
    kinetic = runner.invoke(app, ["distance", str(a), str(b), "--norm", "kinetic", "--no-compact"])
    assert kinetic.exit_code == 0, kinetic.output
    mass, com, inertia = gt.child_mass_moments()
    dz = 0.2 * j[0]  # both endpoints move by 0.2 along the twist
    expected = math.sqrt(2 * kinetic_squared(dz, mass[0], com[0], inertia[0]))
    assert f"E_B^tree(A, B) = {expected:.6g}" in kinetic.output


def test_object_distance_errors(release, tmp_path):
    runner = CliRunner()
    faucet = release / "objects" / FAUCET  # has a continuous joint
    result = runner.invoke(app, ["distance", str(faucet), str(faucet), "--no-compact"])
    assert result.exit_code == 1 and "infinite limits" in result.output
    assert runner.invoke(app, ["distance", str(faucet), str(faucet)]).exit_code == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(app, ["distance", str(empty), str(faucet)])
    assert result.exit_code == 1 and "prediction.no_entry" in result.output
    massless = write_prediction(
        ground_truth(release, LAPTOP).replace(
            links=tuple(link.__class__(link.name) for link in ground_truth(release, LAPTOP).links)
        ),
        tmp_path,
        "massless",
    )
    result = runner.invoke(
        app, ["distance", str(massless), str(release / "objects" / LAPTOP), "--norm", "kinetic"]
    )
    assert result.exit_code == 1 and "A lacks them" in result.output


def test_real_corpus_objects(corpus, tmp_path):
    """A 115-key PartNet keyboard against itself and against a copy missing one key with
    another key's interval shifted; a dm_control MJCF model against its own URDF export."""
    from scoring.objects import read_any

    keyboard = corpus / "partnet_mobility" / "7619"
    same = json.loads(
        CliRunner().invoke(app, ["distance", str(keyboard), str(keyboard), "--json"]).output
    )
    assert same["E_tree"] == 0.0 and same["certified"] and len(same["pairs"]) == 115
    obj = read_any(keyboard)
    moving = [j for j in obj.joints if j.moving]
    gone, shifted = moving[3], moving[10]
    changed = with_joint(
        obj, shifted.name, lower=shifted.lower + 0.002, upper=shifted.upper + 0.002
    )
    changed = changed.replace(
        links=tuple(link for link in changed.links if link.name != gone.child),
        joints=tuple(j for j in changed.joints if j.name != gone.name),
    )
    folder = write_prediction(changed, tmp_path, "keyboard").parent
    result = json.loads(
        CliRunner().invoke(app, ["distance", str(folder), str(keyboard), "--json"]).output
    )
    j = joint_of(obj, shifted.name)
    expected = hand_e_phi((j[0], j[1] + 0.002, j[2] + 0.002), j) + hand_to_fixed(
        joint_of(obj, gone.name)
    )
    assert result["E_tree"] == pytest.approx(expected, rel=1e-9)
    # The keys are identical joints with coinciding joint origins (PartNet offsets the key
    # geometry, not the joint), so which key is reported unmatched is arbitrary; the value isn't.
    assert len(result["unmatched_b"]) == 1 and len(result["pairs"]) == 114

    manipulator = corpus / "dm_control_suite" / "manipulator" / "manipulator.xml"
    exported = write_prediction(read_any(manipulator), tmp_path, "manipulator")
    result = json.loads(
        CliRunner().invoke(app, ["distance", str(exported), str(manipulator), "--json"]).output
    )
    assert result["E_tree"] == pytest.approx(0.0, abs=1e-9)
    assert len(result["pairs"]) == sum(1 for j in read_any(manipulator).joints if j.moving)
