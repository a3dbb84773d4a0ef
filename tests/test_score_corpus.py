"""`arena score` on a release of real corpus objects with perturbed predictions: the per-joint
tree column (Table 4's E_α^{φ,tree}) lies below E_α^φ on average, as in the paper, and the
report names its normalization."""

from __future__ import annotations

import numpy as np
import pytest
from scoring_support import ground_truth, object_ids, with_joint, without_joint, write_prediction

from scoring.score import Settings, score_release

pytestmark = pytest.mark.slow
SOURCES = (
    "partnet_mobility",
    "gapartnet",
    "gensim2_partnet",
    "articraft",
    "urdformer",
    "pybullet_data",
    "example_robot_data",
)


@pytest.fixture(scope="module")
def corpus_release(builds, corpus_sources, corpus_cache, tmp_path_factory):
    root = tmp_path_factory.mktemp("score_corpus")
    sources = [corpus_sources[name] for name in SOURCES]
    builds.release(sources, root / "release", corpus_cache)
    return root / "release"


def _perturbed(obj, rng):
    """Limits of every bounded moving joint shifted and scaled, and (for every other object
    with two or more moving joints) one leaf joint that no joint mimics left out."""
    for joint in obj.joints:
        if joint.type in ("revolute", "prismatic") and np.isfinite(joint.upper):
            span = joint.upper - joint.lower
            shift = rng.normal(scale=0.2 * max(span, 0.05))
            obj = with_joint(
                obj, joint.name, lower=joint.lower + shift, upper=joint.upper + shift + 0.1 * span
            )
    moving = [j for j in obj.joints if j.type != "fixed"]
    mimicked = {j.mimic.joint for j in obj.joints if j.mimic is not None}
    leaves = [
        j
        for j in moving
        if not any(k.parent == j.child for k in obj.joints) and j.name not in mimicked
    ]
    if len(moving) >= 2 and leaves and rng.random() < 0.5:
        obj = without_joint(obj, leaves[int(rng.integers(len(leaves)))].name)
    return obj


def test_tree_column_below_e_phi_on_perturbed_corpus_objects(corpus_release, tmp_path):
    rng = np.random.default_rng(0)
    ids = object_ids(corpus_release)
    assert len(ids) >= 30
    for object_id in ids:
        write_prediction(
            _perturbed(ground_truth(corpus_release, object_id), rng), tmp_path / "p", object_id
        )
    result = score_release(
        corpus_release,
        {"perturbed": tmp_path / "p"},
        tmp_path / "out",
        Settings(subset="all", bootstrap=0),
    )
    scores = result.summary["methods"]["perturbed"]["scores"]
    assert 0 < scores["e_tree"]["mean"] < scores["e_phi"]["mean"] < scores["e_tree_edit"]["mean"]
    rows = [r for r in result.rows if r["gen"] and r["e_phi"] is not None]
    for row in rows:
        joints = row["n_pred_joints"] + row["n_gt_joints"]
        assert row["e_tree"] == pytest.approx(row["e_tree_edit"] / joints, rel=1e-12)
        assert row["e_tree"] <= row["e_phi"] + 1e-15
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "divided by the number of moving joints of both objects" in report
    assert "E^{φ,tree} edit distance" in report
