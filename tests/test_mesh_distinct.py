"""`normalize.meshes.distinct` returns exactly what `numpy.unique` returns on mesh arrays."""

from __future__ import annotations

import numpy as np
import pytest

from normalize.meshes.distinct import distinct_rows, distinct_rows_inverse, used_vertices


def _point_sets():
    rng = np.random.default_rng(7)
    yield np.zeros((0, 3))
    yield np.array([[1.0, 2.0, 3.0]])
    yield np.array([[0.0, 1.0, 2.0], [-0.0, 1.0, 2.0], [0.0, 1.0, 1.0]])  # signed zeros equal
    for n in (2, 5, 64, 500):
        grid = np.round(rng.random((n, 3)), 1)  # many repeated rows and repeated columns
        yield np.concatenate([grid, grid[: n // 2][::-1]])
        yield rng.normal(size=(n, 3))  # all distinct


@pytest.mark.parametrize("points", list(_point_sets()))
def test_distinct_rows_are_numpy_unique_rows(points):
    rows, inverse = distinct_rows_inverse(points)
    expected, expected_inverse = np.unique(points, axis=0, return_inverse=True)
    assert np.array_equal(distinct_rows(points), expected)
    assert np.array_equal(rows, expected)
    assert np.array_equal(inverse.ravel(), expected_inverse.ravel())
    assert np.array_equal(rows[inverse], points)


def test_used_vertices_are_numpy_unique_indices():
    rng = np.random.default_rng(3)
    assert np.array_equal(used_vertices(np.zeros((0, 3), dtype=np.int64)), np.unique([]))
    for n in (1, 4, 100, 5000):
        faces = rng.integers(0, n, size=(max(1, n // 3), 3))
        assert np.array_equal(used_vertices(faces), np.unique(faces))
