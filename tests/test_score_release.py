"""`arena score` end to end on the sample release: outputs and their schemas, failed outputs,
MJCF predictions, subsets, determinism, worker processes, the command line and the Prefect flow."""

from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scoring_support import LAPTOP, checked_release, ground_truth, object_ids
from typer.testing import CliRunner

import schemas
from flows.cli import app
from scoring.score import SCORES, ScoreError, Settings, score_release


@pytest.fixture(scope="session")
def release(sample_release):
    return checked_release(sample_release)


def mjcf_laptop(release) -> str:
    """The ground-truth laptop hinge written by hand as MJCF in the release frame."""
    screws = ground_truth(release, LAPTOP).screws()
    x, y, z = (repr(float(v)) for v in screws.point[0])
    ax = " ".join(repr(float(v)) for v in screws.axis[0])
    lower, upper = float(screws.lower[0]), float(screws.upper[0])
    return f"""<mujoco model="laptop">
  <compiler angle="radian"/>
  <worldbody>
    <geom type="box" size="0.2 0.15 0.01" mass="1"/>
    <body name="lid" pos="{x} {y} {z}">
      <joint name="hinge" type="hinge" axis="{ax}" range="{lower!r} {upper!r}"/>
      <geom type="box" size="0.2 0.01 0.15" pos="0 0 0.15" mass="0.5"/>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.fixture(scope="module")
def methods(release, tmp_path_factory):
    """`copy`: the release's own object folders; `partial`: an MJCF laptop, a folder without a
    model file, a URDF with a revolute joint missing its limits; everything else missing."""
    root = tmp_path_factory.mktemp("methods")
    shutil.copytree(release / "objects", root / "copy")
    partial = root / "partial"
    ids = object_ids(release)
    (partial / LAPTOP).mkdir(parents=True)
    (partial / LAPTOP / "laptop.xml").write_text(mjcf_laptop(release), encoding="utf-8")
    (partial / ids[0]).mkdir()
    (partial / ids[0] / "notes.txt").write_text("no model here", encoding="utf-8")
    (partial / ids[1]).mkdir()
    (partial / ids[1] / "object.urdf").write_text(
        '<robot name="r"><link name="a"/><link name="b"/>'
        '<joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
        '<axis xyz="0 0 1"/></joint></robot>',
        encoding="utf-8",
    )
    return {"copy": root / "copy", "partial": partial}


@pytest.fixture(scope="module")
def scored(release, methods, tmp_path_factory):
    out = tmp_path_factory.mktemp("scored")
    return score_release(release, methods, out, Settings(subset="all", bootstrap=500, seed=1)), out


def test_outputs_match_their_schemas(scored):
    result, out = scored
    table = pq.read_table(out / "scores.parquet")
    assert table.schema.equals(SCORES)
    rows = table.to_pylist()
    assert len(rows) == 2 * result.summary["n_objects"]
    for row in rows:
        schemas.validate(row, "scores")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    schemas.validate(summary, "score_summary")
    assert summary == json.loads(json.dumps(result.summary))
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "| Method | Gen ↑ (%) | TypeErr ↓ (%) | OriginErr ↓ (m) | AxisErr ↓ (rad)" in report
    assert "| copy | **100.0 [100.0, 100.0]**" in report
    assert "| copy − partial | 1 |" in report
    # The paper's Table 4 layout (group row, names, units, means) and Table 7's (Gen, Pair).
    assert "|  | Prior per-component scores |  |  |  |  |  | Ours |" in report
    units = "|  | (%) | (%) | (m) | (rad) | (range / dir) | (%) | (m) |  | (per joint) |  |"
    assert units in report
    assert "| copy | **100.0** | **0.0** |" in report
    coverage = result.summary["methods"]["copy"]["coverage"]
    assert "| Method | Gen | Pair |" in report
    assert f"| copy | {coverage['gen']} | {coverage['pairs']} |" in report


def test_copies_of_the_ground_truth_score_zero(scored):
    result, _ = scored
    copy = result.summary["methods"]["copy"]
    assert copy["coverage"]["gen"] == result.summary["n_objects"]
    for key in ("e_tree", "e_phi", "e_b_m", "type_err_pct", "axis_err_rad", "origin_err_m"):
        assert copy["scores"][key]["mean"] == pytest.approx(0.0, abs=1e-9), key
    assert copy["scores"]["succ_rate_pct"]["mean"] == 100.0
    assert copy["coverage"]["certified_share"] == 1.0
    rows = [r for r in result.rows if r["method"] == "copy"]
    assert all(r["n_matched"] == r["n_gt_joints"] == r["n_pred_joints"] for r in rows)
    # Pair (Table 7) counts the matched pairs with finite limits: continuous joints drop out.
    assert copy["coverage"]["pairs"] < copy["coverage"]["matched_pairs"]


def test_failed_and_mjcf_outputs(scored, release):
    result, _ = scored
    ids = object_ids(release)
    rows = {r["object_id"]: r for r in result.rows if r["method"] == "partial"}
    laptop = rows[LAPTOP]
    assert laptop["gen"] and laptop["prediction_file"] == f"{LAPTOP}/laptop.xml"
    assert laptop["e_tree"] == pytest.approx(0.0, abs=1e-9)
    assert laptop["pairs"][0]["pred_joint"] == "hinge"
    assert rows[ids[0]]["error_code"] == "prediction.no_entry"
    assert rows[ids[1]]["error_code"] == "joint.limits_missing"
    assert "limit" in rows[ids[1]]["error_message"]
    assert all(r["e_tree"] is None for r in rows.values() if not r["gen"])
    partial = result.summary["methods"]["partial"]
    assert partial["coverage"]["gen"] == 1
    assert partial["failures"]["prediction.missing"] == len(ids) - 3
    assert partial["scores"]["e_tree"]["n"] == 1


def test_scoring_is_deterministic(release, methods, scored, tmp_path):
    _, first = scored
    again = score_release(release, methods, tmp_path, Settings(subset="all", bootstrap=500, seed=1))
    names = sorted(p.name for p in first.iterdir())
    assert {"summary.json", "e-supercategories.png", "worst-objects-copy.csv"} <= set(names)
    for name in names:  # the plots and tables too
        assert (tmp_path / name).read_bytes() == (first / name).read_bytes(), name
    other = score_release(
        release, methods, tmp_path / "s2", Settings(subset="all", bootstrap=500, seed=2)
    )
    e_tree = [s.summary["methods"]["copy"]["scores"]["gen"] for s in (again, other)]
    assert e_tree[0] == e_tree[1]  # Gen of 100 % has a degenerate interval whatever the seed
    low = [s.summary["paired"][0]["differences"]["e_tree"]["low"] for s in (again, other)]
    assert low[0] == low[1] == pytest.approx(0.0, abs=1e-9)


@pytest.mark.slow
def test_worker_processes_give_the_same_rows(release, methods, scored, tmp_path):
    result, _ = scored
    parallel = score_release(
        release, methods, tmp_path, Settings(subset="all", bootstrap=500, seed=1), workers=2
    )
    assert parallel.rows == result.rows


def test_eval200_subset_scores_only_flagged_objects(release, methods, tmp_path):
    copy = tmp_path / "release"
    shutil.copytree(release / "manifest", copy / "manifest")
    (copy / "objects").symlink_to(release / "objects")
    table = pq.read_table(copy / "manifest" / "objects.parquet")
    flags = [i % 3 == 0 for i in range(table.num_rows)]
    column = table.schema.get_field_index("eval200")
    table = table.set_column(column, table.schema.field("eval200"), pa.array(flags))
    pq.write_table(table, copy / "manifest" / "objects.parquet")
    result = score_release(copy, methods, tmp_path / "out", Settings(bootstrap=0))
    flagged = sorted(r["object_id"] for r, f in zip(table.to_pylist(), flags, strict=True) if f)
    assert sorted({r["object_id"] for r in result.rows}) == flagged
    assert result.summary["n_objects"] == len(flagged)
    assert result.summary["methods"]["copy"]["scores"]["e_tree"]["low"] is None  # no resamples


def test_a_broken_ground_truth_stops_the_run(release, methods, tmp_path):
    broken = tmp_path / "release"
    shutil.copytree(release, broken)
    (broken / "objects" / LAPTOP / "object.urdf").write_text("<robot", encoding="utf-8")
    with pytest.raises(ScoreError, match=LAPTOP):
        score_release(broken, methods, tmp_path / "out", Settings(subset="all", bootstrap=0))
    runner = CliRunner()
    args = ["score", "--release", str(broken), "--pred", f"copy={methods['copy']}"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "o"), "--subset", "all"])
    assert result.exit_code == 2  # the file no longer matches the release's checksums
    assert f"{LAPTOP}/object.urdf is modified" in result.output
    args += ["--accept-modified"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "o"), "--subset", "all"])
    assert result.exit_code == 1  # read anyway, it cannot be parsed
    assert LAPTOP in result.output


def test_command_line(release, methods, tmp_path):
    runner = CliRunner()
    base = ["score", "--release", str(release), "--out", str(tmp_path / "out")]
    ok = runner.invoke(
        app, [*base, "--pred", f"copy={methods['copy']}", "--bootstrap", "50", "--no-prefect"]
    )
    assert ok.exit_code == 0, ok.output
    assert "copy" in ok.output and (tmp_path / "out" / "report.md").is_file()
    usage = [
        ["--pred", "copy"],
        ["--pred", f"copy={tmp_path / 'nowhere'}"],
        ["--pred", f"a={methods['copy']}", "--pred", f"a={methods['copy']}"],
        ["--pred", f"copy={methods['copy']}", "--subset", "train"],
        ["--pred", f"copy={methods['copy']}", "--kappa", "0"],
    ]
    for extra in usage:
        result = runner.invoke(app, [*base, *extra])
        assert result.exit_code == 2, (extra, result.output)
    not_release = runner.invoke(
        app,
        ["score", "--release", str(tmp_path), "--pred", f"c={methods['copy']}", "--out", "x"],
    )
    assert not_release.exit_code == 2 and "not a release" in not_release.output


@pytest.mark.slow
def test_prefect_flow_matches_the_plain_function(release, methods, scored, tmp_path):
    from prefect.testing.utilities import prefect_test_harness

    from flows.score import score_flow

    result, first = scored
    with prefect_test_harness():
        flow_result = score_flow(
            release, methods, tmp_path, Settings(subset="all", bootstrap=500, seed=1)
        )
    assert flow_result.rows == result.rows
    assert (tmp_path / "summary.json").read_bytes() == (first / "summary.json").read_bytes()
