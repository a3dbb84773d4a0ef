"""Scoring and distance bounded, predictions confined. N joints chained against the same N
joints as a binary tree make the exact search grow far beyond any budget; the search stops at
its budget (scoring.compare.search_budget) and says the value is not exact, instead of stalling
every method's score (N joints on the base against the same N chained used to as well; the
subtree bound now proves that pair exact within the budget). A prediction whose entry links out
of its folder is not read."""

from __future__ import annotations

import os
import time

from hostile_library import bounded
from verify_assets import box, write

from scoring.compare import MIN_SEARCH_NODES, SEARCH_WORK, search_budget
from scoring.distance import distance_text, object_distance
from scoring.score import _read_prediction

N = 40


def _urdf(chained: bool, binary: bool = False) -> str:
    """N revolute joints on the base (a star), chained, or as a binary tree (parent i // 2)."""
    links = "".join(f'<link name="l{i}">{box((0.05, 0.05, 0.05))}</link>' for i in range(N + 1))
    joints = "".join(
        f'<joint name="j{i}" type="revolute">'
        f'<parent link="l{i // 2 if binary else i if chained else 0}"/>'
        f'<child link="l{i + 1}"/><origin xyz="{0.1 * (i + 1)} {0.01 * i} 0"/>'
        f'<axis xyz="0 {i % 2} {1 - i % 2}"/><limit lower="-1" upper="1"/></joint>'
        for i in range(N)
    )
    return f'<?xml version="1.0"?><robot name="r">{links}{joints}</robot>'


def test_the_budget_shrinks_with_the_cost_of_a_node():
    assert search_budget(12, 12) == SEARCH_WORK // 144
    assert search_budget(100, 100) == SEARCH_WORK // 10_000
    assert search_budget(10_000, 10_000) == MIN_SEARCH_NODES


def test_a_chain_against_a_binary_tree_stops_at_its_budget_and_says_so(tmp_path):
    write(
        tmp_path,
        {
            "star.urdf": _urdf(False),
            "chain.urdf": _urdf(True),
            "binary.urdf": _urdf(False, binary=True),
        },
    )
    star = object_distance(tmp_path / "chain.urdf", tmp_path / "star.urdf")
    assert star["exact"] and not star["certified"]
    assert star["nodes_explored"] <= search_budget(N, N) + 2
    started = time.perf_counter()
    d = object_distance(tmp_path / "chain.urdf", tmp_path / "binary.urdf")
    assert time.perf_counter() - started < 60
    assert d["exact"] is False and not d["certified"]
    # the budget is checked before each branching, which evaluates all its children
    assert d["nodes_explored"] <= search_budget(N, N) + 2
    assert d["lower_bound"] <= d["E_tree"]
    assert "NOT exact" in distance_text(d)
    same = object_distance(tmp_path / "star.urdf", tmp_path / "star.urdf")
    assert same["exact"] and same["E_tree"] == 0.0


def test_a_prediction_linking_out_of_its_folder_is_not_read(tmp_path):
    """object.urdf -> the ground truth (or the object's folder -> the release's) would score
    as perfect: it is a failed output, prediction.outside, and nothing behind it is opened."""
    truth = write(tmp_path / "release" / "objects" / "o1", {"object.urdf": _urdf(False)})
    preds = tmp_path / "preds"
    (preds / "o1").mkdir(parents=True)
    os.symlink(truth / "object.urdf", preds / "o1" / "object.urdf")
    os.symlink(truth, preds / "o2")
    write(preds / "o3", {"object.urdf": _urdf(True)})
    for object_id in ("o1", "o2"):
        kin, code, message = _read_prediction(preds, object_id)
        assert (kin, code) == (None, "prediction.outside"), message
    kin, entry, problem = _read_prediction(preds, "o3")
    assert kin is not None and entry == "o3/object.urdf" and problem is None


def test_a_40000_joint_prediction_takes_memory_linear_in_its_joints(tmp_path):
    """The side matrices of the metric trees are computed on indexing (metric.tree), and the
    massless links' moments are found from one child map: a 40,000-joint prediction against a
    10-joint truth is scored within the bounds (it once built a 5 GB matrix)."""

    def star(n: int) -> str:
        links = "".join(f'<link name="l{i}"/>' for i in range(n + 1))
        joints = "".join(
            f'<joint name="j{i}" type="revolute"><parent link="l0"/><child link="l{i + 1}"/>'
            f'<origin xyz="{0.001 * i} 0 0"/><axis xyz="0 0 1"/><limit lower="-1" upper="1"/>'
            "</joint>"
            for i in range(n)
        )
        return f'<?xml version="1.0"?><robot name="r">{links}{joints}</robot>'

    write(tmp_path, {"prediction.urdf": star(40_000), "truth.urdf": star(10)})
    with bounded("the distance of a 40,000-joint prediction", memory=2 * 1024**3):
        d = object_distance(tmp_path / "prediction.urdf", tmp_path / "truth.urdf")
    assert d["E_tree"] > 0 and d["lower_bound"] <= d["E_tree"]
