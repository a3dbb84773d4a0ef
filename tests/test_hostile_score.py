"""Scoring and distance bounded: N joints on the base against the same N chained make the
exact search grow about as N^4 nodes; the search stops at its budget (scoring.compare.
search_budget) and says the value is not exact, instead of stalling every method's score."""

from __future__ import annotations

import time

from verify_assets import box, write

from scoring.compare import MIN_SEARCH_NODES, SEARCH_WORK, search_budget
from scoring.distance import distance_text, object_distance

N = 40


def _urdf(chained: bool) -> str:
    links = "".join(f'<link name="l{i}">{box((0.05, 0.05, 0.05))}</link>' for i in range(N + 1))
    joints = "".join(
        f'<joint name="j{i}" type="revolute"><parent link="l{i if chained else 0}"/>'
        f'<child link="l{i + 1}"/><origin xyz="{0.1 * (i + 1)} {0.01 * i} 0"/>'
        f'<axis xyz="0 {i % 2} {1 - i % 2}"/><limit lower="-1" upper="1"/></joint>'
        for i in range(N)
    )
    return f'<?xml version="1.0"?><robot name="r">{links}{joints}</robot>'


def test_the_budget_shrinks_with_the_cost_of_a_node():
    assert search_budget(12, 12) == SEARCH_WORK // 144
    assert search_budget(100, 100) == SEARCH_WORK // 10_000
    assert search_budget(10_000, 10_000) == MIN_SEARCH_NODES


def test_a_chain_against_a_star_stops_at_its_budget_and_says_so(tmp_path):
    write(tmp_path, {"star.urdf": _urdf(False), "chain.urdf": _urdf(True)})
    started = time.perf_counter()
    d = object_distance(tmp_path / "chain.urdf", tmp_path / "star.urdf")
    assert time.perf_counter() - started < 60
    assert d["exact"] is False and not d["certified"]
    assert d["nodes_explored"] <= search_budget(N, N) + 1
    assert d["lower_bound"] <= d["E_tree"]
    assert "NOT exact" in distance_text(d)
    same = object_distance(tmp_path / "star.urdf", tmp_path / "star.urdf")
    assert same["exact"] and same["E_tree"] == 0.0
