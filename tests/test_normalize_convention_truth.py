"""Every generated sample object, normalized end to end (all formats), has the joints of its
truth.json once the sidecar twists are moved by the documented placement: scale s about the
source origin, then the rigid `placement` (up-axis fix and centring). Checked on the object in
memory and on the URDF read back from disk."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from normalize.adapters import discover
from normalize.run import normalize_candidate
from normalize.sources import load_sources
from normalize.urdf import read_object
from samples.generate import generate_library

pytestmark = pytest.mark.slow
TOLERANCE = 1e-8


@pytest.fixture(scope="module", params=[(0, 0), (48, 5)], ids=["demo", "varied"])
def library(request, tmp_path_factory):
    n, seed = request.param
    out = tmp_path_factory.mktemp(f"samples_{n}_{seed}")
    generate_library(out, n=n, seed=seed)
    return out


def placed_twist(twist, kind: str, placement: np.ndarray, scale: float) -> np.ndarray:
    """A source-frame unit twist after scaling by `scale` and moving by `placement`."""
    w, v = np.asarray(twist[:3], float), np.asarray(twist[3:], float)
    if kind != "prismatic":
        v = v * scale  # o x a and pitch * a are lengths
    rot, shift = placement[:3, :3], placement[:3, 3]
    w2 = rot @ w
    return np.concatenate([w2, rot @ v + np.cross(shift, w2)])


def compare(obj, truth: dict, placement, scale, where: str, source_names=None) -> None:
    """source_names: joint name -> source name, for objects read back from disk (the file
    keeps canonical names only)."""
    moving = [j for j in obj.joints if j.moving and j.mimic is None]
    screws = obj.screws(tuple(moving))
    names = [(source_names or {}).get(j.name, j.source_name) for j in moving]
    assert sorted(names) == sorted(t["name"] for t in truth["joints"]), where
    for row in truth["joints"]:
        i = names.index(row["name"])
        assert screws.types[i] == row["type"], (where, row["name"])
        length = scale if row["type"] == "prismatic" else 1.0
        lower = -math.inf if row["lower"] is None else row["lower"] * length
        upper = math.inf if row["upper"] is None else row["upper"] * length
        expected = placed_twist(row["twist"], row["type"], placement, scale)
        got = screws.twist[i]
        ok = False
        for sign, (lo, hi) in ((1, (lower, upper)), (-1, (-upper, -lower))):
            limits = [
                a == b or abs(a - b) < TOLERANCE
                for a, b in ((screws.lower[i], lo), (screws.upper[i], hi))
            ]
            if np.allclose(got, sign * expected, atol=TOLERANCE) and all(limits):
                ok = True
        assert ok, (where, row["name"], got, expected, screws.lower[i], screws.upper[i], row)
        if row["type"] == "helical":
            assert abs(screws.pitch[i]) == pytest.approx(abs(row["pitch"]) * scale, rel=1e-9)


def test_normalized_joints_equal_the_sidecar_after_placement(library, tmp_path):
    seen = set()
    for source in load_sources(library / "sources.yaml"):
        for candidate in discover(source):
            truth = json.loads((candidate.path.parent / "truth.json").read_text())
            result = normalize_candidate(candidate, tmp_path)
            where = candidate.object_id
            compare(result.object, truth, result.placement, result.scale, where)
            back = read_object(result.urdf_path)
            source_names = {j.name: j.source_name for j in result.object.joints}
            compare(back, truth, result.placement, result.scale, where, source_names)
            seen.add(source.format)
            # The canonical placement: rest visual box centred on z, bottom at z = 0.
            assert result.object.links[0].name == "base"
    assert seen == {"partnet_mobility", "urdf", "mjcf", "sdf"}
