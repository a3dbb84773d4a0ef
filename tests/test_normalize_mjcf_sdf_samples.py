"""The generated sample library: raw MJCF and SDF objects carry exactly the joints of truth.json
(twists in the source root-link frame, limits; a joint's sign is free)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from test_normalize_mjcf import assert_geometry_matches, assert_kinematics_match

from normalize.adapters import discover, get_adapter
from normalize.sources import load_sources


def candidates(library, fmt):
    return [
        c for s in load_sources(library / "sources.yaml") if s.format == fmt for c in discover(s)
    ]


def bound(value, default):
    return default if value is None else value


@pytest.mark.parametrize("fmt", ["mjcf", "sdf"])
def test_raw_joints_equal_the_sidecar_truth(sample_library, fmt):
    found = candidates(sample_library, fmt)
    assert len(found) >= 8
    for candidate in found:
        truth = json.loads((candidate.path.parent / "truth.json").read_text())
        obj = get_adapter(fmt).load(candidate)
        screws = obj.screws(obj.moving_joints)
        assert sorted(screws.names) == sorted(j["name"] for j in truth["joints"]), candidate
        for joint in truth["joints"]:
            i = screws.names.index(joint["name"])
            assert screws.types[i] == joint["type"], joint["name"]
            twist = np.array(joint["twist"])
            lower, upper = bound(joint["lower"], -math.inf), bound(joint["upper"], math.inf)
            got = (screws.twist[i], screws.lower[i], screws.upper[i])
            same = np.allclose(got[0], twist, atol=1e-9) and np.allclose(
                got[1:], (lower, upper), atol=1e-9
            )
            flipped = np.allclose(got[0], -twist, atol=1e-9) and np.allclose(
                got[1:], (-upper, -lower), atol=1e-9
            )
            assert same or flipped, (candidate.object_id, joint["name"], got, joint)
            if joint["type"] == "helical":
                assert math.isclose(abs(screws.pitch[i]), abs(joint["pitch"]), rel_tol=1e-9)
        quirks = set(truth["quirks"])
        codes = {c.code for c in obj.source.changes}
        assert ("non_unit_axis" in quirks) == ("axis.normalized" in codes)
        assert ("limits_upper_first" in quirks) == ("limits.swapped" in codes)


def test_mjcf_samples_move_as_mujoco_moves_them(sample_library):
    for candidate in candidates(sample_library, "mjcf"):
        obj = get_adapter("mjcf").load(candidate)
        assert_kinematics_match(candidate.path, obj, trials=3)
        assert assert_geometry_matches(candidate.path, obj) > 0
