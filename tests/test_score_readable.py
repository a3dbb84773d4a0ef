"""Scores you can read: `arena score` writes PNG plots (E over objects per method, means per
supercategory) and per method a table of its worst objects linking the release's browser."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pyarrow.parquet as pq
import pytest
from scoring_support import (
    CABINET,
    LAPTOP,
    WINDOW,
    checked_release,
    ground_truth,
    with_joint,
    write_prediction,
)
from typer.testing import CliRunner

from flows.cli import app

#: Objects of the `shifted` method whose first moving joint's limits are shifted, from the
#: worst to the least bad; every other object is an exact copy (E = 0).
SHIFTS = {LAPTOP: 1.0, WINDOW: 0.3, CABINET: 0.05}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="session")
def release(sample_release):
    return checked_release(sample_release)


@pytest.fixture(scope="module")
def scored(release, tmp_path_factory) -> Path:
    """`arena score` of two methods, `copy (exact)` (the release's objects) and `shifted`."""
    root = tmp_path_factory.mktemp("readable")
    shutil.copytree(release / "objects", root / "copy")
    shutil.copytree(release / "objects", root / "shifted")
    for object_id, shift in SHIFTS.items():
        gt = ground_truth(release, object_id)
        joint = next(j for j in gt.joints if j.type != "fixed")
        shutil.rmtree(root / "shifted" / object_id)
        pred = with_joint(gt, joint.name, lower=joint.lower + shift, upper=joint.upper + shift)
        write_prediction(pred, root / "shifted", object_id)
    out = root / "scores"
    args = ["score", "--release", str(release), "--out", str(out), "--subset", "all"]
    args += ["--pred", f"copy (exact)={root / 'copy'}", "--pred", f"shifted={root / 'shifted'}"]
    result = CliRunner().invoke(app, [*args, "--bootstrap", "200", "--no-prefect"])
    assert result.exit_code == 0, result.output
    return out


PLOTS = ("e-distribution-copy-exact.png", "e-distribution-shifted.png", "e-supercategories.png")
TABLES = ("worst-objects-copy-exact.csv", "worst-objects-shifted.csv")


def test_score_writes_png_plots_listed_in_the_report(scored):
    import matplotlib.image

    report = (scored / "report.md").read_text(encoding="utf-8")
    for name in PLOTS:
        data = (scored / name).read_bytes()
        assert data.startswith(PNG_SIGNATURE) and len(data) > 10_000, name
        pixels = matplotlib.image.imread(scored / name)
        assert pixels.ndim == 3 and pixels.shape[0] > 300 and pixels.shape[1] > 800, name
        assert np.ptp(pixels[..., :3]) > 0.5, f"{name} is blank"
        assert re.search(rf"^!\[[^\]]+\]\({re.escape(name)}\)$", report, flags=re.M), name
        assert f"- `{name}`: " in report, name
    for name in TABLES:
        assert f"- `{name}`: " in report, name


def test_a_heavy_tailed_distribution_gets_a_log_axis(tmp_path):
    """One outlier 100 times the median: that panel turns symmetric-log, the other stays linear."""
    import matplotlib.image

    from scoring.plots import distribution_plot

    e_b = [0.0, 0.01, 0.02, 0.03, 0.05, 5.0]
    rows = [{"gen": True, "e_tree": 0.1 * (i + 1), "e_b_m": v} for i, v in enumerate(e_b)]
    rows.append({"gen": False, "e_tree": None, "e_b_m": None})
    stat = {"mean": 0.1, "low": 0.05, "high": 0.2, "n": 6}
    fig = distribution_plot(tmp_path / "d.png", "m", rows, {"e_tree": stat, "e_b_m": stat})
    assert [ax.get_xscale() for ax in fig.axes] == ["linear", "symlog"]
    assert fig.axes[1].get_xlim()[0] == 0.0
    assert any("6 of 7 with a valid output" in t.get_text() for t in fig.texts)
    assert matplotlib.image.imread(tmp_path / "d.png").shape[2] == 4


def read_csv(path: Path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_worst_objects_are_the_truly_worst_in_order(scored):
    rows = pq.read_table(scored / "scores.parquet").to_pylist()
    shifted = {r["object_id"]: r for r in rows if r["method"] == "shifted"}
    assert all(r["e_tree"] == 0.0 for o, r in shifted.items() if o not in SHIFTS)
    worst = read_csv(scored / "worst-objects-shifted.csv")
    assert [w["object_id"] for w in worst] == list(SHIFTS)
    assert [int(w["rank"]) for w in worst] == [1, 2, 3]
    for w in worst:
        row = shifted[w["object_id"]]
        assert float(w["e_tree"]) == row["e_tree"] > 0
        assert w["supercategory"] == row["supercategory"] and w["category"] == row["category"]
        assert float(w["e_b_m"]) == row["e_b_m"]
    assert read_csv(scored / "worst-objects-copy-exact.csv") == []  # every E is 0

    report = (scored / "report.md").read_text(encoding="utf-8")
    section = report.split("### shifted", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| (\d+) \| \[([^\]]+)\]\(([^)]+)\) \|", section, flags=re.M)
    assert [(int(rank), object_id) for rank, object_id, _ in listed] == [
        (i + 1, o) for i, o in enumerate(SHIFTS)
    ]
    assert [link for *_, link in listed] == [w["link"] for w in worst]
    copy = report.split("### copy (exact)", 1)[1].split("###", 1)[0]
    assert "No valid output with E_α^{φ,tree} > 0." in copy


def test_worst_object_links_open_existing_objects_from_the_report_folder(scored, release):
    ids = set(
        pq.read_table(release / "manifest" / "objects.parquet").column("object_id").to_pylist()
    )
    browser = (release / "browser" / "data.js").read_text(encoding="utf-8")
    for w in read_csv(scored / "worst-objects-shifted.csv"):
        path, _, fragment = w["link"].partition("#")
        assert not Path(unquote(path)).is_absolute()
        assert (scored / unquote(path)).resolve() == (release / "index.html").resolve()
        key, _, object_id = fragment.partition("=")
        object_id = unquote(object_id)
        assert key == "object" and object_id == w["object_id"]
        assert object_id in ids and (release / "objects" / object_id).is_dir()
        assert json.dumps(object_id) in browser


def test_supercategory_means_are_the_summary_bootstrap(scored):
    summary = json.loads((scored / "summary.json").read_text(encoding="utf-8"))
    rows = pq.read_table(scored / "scores.parquet").to_pylist()
    groups = summary["methods"]["shifted"]["supercategories"]
    assert set(groups) == {r["supercategory"] for r in rows}
    for name, group in groups.items():
        values = [
            r["e_tree"] for r in rows if r["method"] == "shifted" and r["supercategory"] == name
        ]
        stat = group["scores"]["e_tree"]
        assert group["objects"] == group["gen"] == stat["n"] == len(values)
        assert stat["mean"] == pytest.approx(float(np.mean(values)), abs=1e-15)
        assert stat["low"] <= stat["mean"] <= stat["high"]
    laptop = next(r for r in rows if r["object_id"] == LAPTOP)["supercategory"]
    assert groups[laptop]["scores"]["e_tree"]["high"] > 0
    report = (scored / "report.md").read_text(encoding="utf-8")
    assert "| Supercategory | Objects | copy (exact) | shifted |" in report
