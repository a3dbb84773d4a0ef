"""The demo release as users get it: every shipped URDF and MJCF loads in yourdfpy, MuJoCo and
PyBullet, each file in a fresh process per loader, without a printed warning; `arena validate`
passes its objects folder; normalizing the release again changes nothing; every link with
shapes has a mass and `objects.mass` is their sum. (The corpus release gets the same checks in
tests/test_release_corpus.py.)"""

from __future__ import annotations

import pytest
from shipped_support import (
    loud_files,
    mass_problems,
    mjcf_role_differences,
    renormalized_differences,
    validation_failures,
)

pytestmark = pytest.mark.slow


def test_every_shipped_file_loads_without_a_printed_warning(sample_release):
    assert loud_files(sample_release) == {}


def test_the_mjcf_reads_back_with_the_urdf_visuals_and_collisions(sample_release):
    assert mjcf_role_differences(sample_release) == []


def test_the_release_objects_validate(sample_release):
    assert validation_failures(sample_release) == []


def test_normalizing_the_release_again_changes_nothing(sample_release, tmp_path):
    assert renormalized_differences(sample_release, tmp_path) == []


def test_links_with_shapes_have_mass_and_objects_mass_is_their_sum(sample_release):
    assert mass_problems(sample_release) == []
