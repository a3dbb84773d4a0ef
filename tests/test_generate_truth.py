"""Done-when of the sample library: every generated object builds a valid model through the
pipeline's own adapters, and its world-frame twists equal the sidecar ground truth.

For each source of the generated sources.yaml: discover the candidates, load each with the
format's adapter into the raw ArticulatedObject (source frame), compose helical mimic pairs if
the adapter left them as pairs, and compare `obj.screws()` of the moving joints with truth.json
by joint name (source name), up to the free sign of each joint.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from normalize.adapters import discover, get_adapter
from normalize.sources import load_sources
from samples.generate import generate_library
from samples.plan import SOURCES

TWIST_TOLERANCE = 1e-6


@pytest.fixture(scope="module")
def libraries(sample_library, tmp_path_factory) -> list[Path]:
    varied = tmp_path_factory.mktemp("truth_varied")
    generate_library(varied, n=120, seed=21)
    return [sample_library, varied]


def _composed(obj):
    """The object with coupled prismatic + rotational mimic pairs composed into helical joints."""
    if not any(j.mimic is not None for j in obj.joints):
        return obj
    from normalize.helical import compose_helical

    composed, _changes = compose_helical(obj)
    return composed


def _compare(obj, truth: dict, where: str) -> list[str]:
    """Differences between the object's moving joints and the truth, as readable lines."""
    problems = []
    moving = [j for j in obj.joints if j.moving and j.mimic is None]
    screws = obj.screws(tuple(moving))
    got = {j.source_name: i for i, j in enumerate(moving)}
    rows = {row["name"]: row for row in truth["joints"]}
    if set(got) != set(rows):
        return [f"{where}: joints {sorted(got)} != truth {sorted(rows)}"]
    for name, i in got.items():
        row = rows[name]
        t, expected = screws.twist[i], np.array(row["twist"])
        lower, upper = float(screws.lower[i]), float(screws.upper[i])
        exp_lower = -math.inf if row["lower"] is None else row["lower"]
        exp_upper = math.inf if row["upper"] is None else row["upper"]
        matched = False
        for sign, (lo, hi) in ((1.0, (lower, upper)), (-1.0, (-upper, -lower))):
            if np.allclose(sign * t, expected, atol=TWIST_TOLERANCE) and np.allclose(
                [lo, hi], [exp_lower, exp_upper], atol=TWIST_TOLERANCE
            ):
                matched = True
        if not matched:
            problems.append(
                f"{where} {name}: twist {np.round(t, 9).tolist()} limits [{lower:g}, {upper:g}] "
                f"!= truth {row['twist']} [{exp_lower:g}, {exp_upper:g}]"
            )
        if screws.types[i] != row["type"]:
            problems.append(f"{where} {name}: type {screws.types[i]} != {row['type']}")
        if not math.isclose(float(screws.pitch[i]), row["pitch"], abs_tol=1e-9):
            problems.append(f"{where} {name}: pitch {screws.pitch[i]} != {row['pitch']}")
    return problems


@pytest.mark.parametrize("source_name", list(SOURCES))
def test_adapters_recover_the_ground_truth(libraries, source_name):
    problems: list[str] = []
    checked = 0
    for root in libraries:
        source = next(s for s in load_sources(root / "sources.yaml") if s.name == source_name)
        candidates = discover(source)
        folders = sorted(p for p in source.path.iterdir() if p.is_dir())
        # One candidate per object folder: include fragments are not entries.
        owners = sorted(c.path if c.path.is_dir() else c.path.parent for c in candidates)
        assert owners == folders, f"{source_name}: candidates {[c.source_id for c in candidates]}"
        adapter = get_adapter(source.format)
        for candidate in candidates:
            folder = candidate.path if candidate.path.is_dir() else candidate.path.parent
            truth = json.loads((folder / "truth.json").read_text())
            obj = _composed(adapter.load(candidate))
            problems += _compare(obj, truth, f"{source_name}/{candidate.source_id}")
            checked += 1
    assert checked > 0
    assert not problems, f"{len(problems)} mismatches:\n" + "\n".join(problems[:20])
