"""Bootstrap intervals over objects, and the scores table's Arrow and JSON schemas."""

from __future__ import annotations

import numpy as np
import pytest
from test_release_schemas import json_type

import schemas
from scoring.score import SCORES
from scoring.stats import bootstrap, rng_for


def naive(values: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """Resampled means written as a loop: per resample, the mean of the drawn defined values."""
    out = np.full((len(draws), values.shape[1]), np.nan)
    for b, rows in enumerate(draws):
        for j in range(values.shape[1]):
            column = values[rows, j]
            column = column[~np.isnan(column)]
            if len(column):
                out[b, j] = column.mean()
    return out


def test_bootstrap_equals_the_loop_over_resamples():
    rng = np.random.default_rng(5)
    values = rng.normal(size=(37, 3))
    values[rng.random(values.shape) < 0.3] = np.nan
    result = bootstrap(values, 400, np.random.default_rng(9))
    draws = np.random.default_rng(9).integers(0, 37, size=(400, 37))
    means = naive(values, draws)
    for j in range(3):
        column = means[:, j][~np.isnan(means[:, j])]
        assert result.low[j] == pytest.approx(np.percentile(column, 2.5), rel=1e-12)
        assert result.high[j] == pytest.approx(np.percentile(column, 97.5), rel=1e-12)
        assert result.mean[j] == pytest.approx(np.nanmean(values[:, j]), rel=1e-12)
        assert result.n[j] == np.count_nonzero(~np.isnan(values[:, j]))


def test_bootstrap_edge_cases():
    constant = bootstrap(np.full((10, 1), 0.25), 100, np.random.default_rng(0))
    assert constant.low[0] == constant.high[0] == constant.mean[0] == 0.25
    empty = bootstrap(np.full((4, 1), np.nan), 100, np.random.default_rng(0))
    assert np.isnan(empty.mean[0]) and np.isnan(empty.low[0]) and empty.n[0] == 0
    none = bootstrap(np.ones((3, 2)), 0, np.random.default_rng(0))
    assert np.isnan(none.low).all() and (none.mean == 1.0).all()
    no_objects = bootstrap(np.zeros((0, 2)), 100, np.random.default_rng(0))
    assert np.isnan(no_objects.mean).all() and (no_objects.n == 0).all()
    with pytest.raises(ValueError, match="objects, columns"):
        bootstrap(np.ones(3), 10, np.random.default_rng(0))


def test_bootstrap_in_chunks_matches_one_block(monkeypatch):
    import scoring.stats as stats

    values = np.random.default_rng(1).exponential(size=(50, 2))
    whole = bootstrap(values, 300, np.random.default_rng(4))
    monkeypatch.setattr(stats, "_CHUNK_ENTRIES", 50 * 7)  # 7 resamples per chunk
    chunked = bootstrap(values, 300, np.random.default_rng(4))
    assert np.array_equal(whole.low, chunked.low) and np.array_equal(whole.high, chunked.high)


def test_percentile_intervals_cover_the_mean():
    rng = np.random.default_rng(12)
    covered = 0
    trials = 300
    for _ in range(trials):
        sample = rng.normal(1.0, 2.0, size=(80, 1))
        result = bootstrap(sample, 1000, rng)
        covered += result.low[0] <= 1.0 <= result.high[0]
    assert 0.90 <= covered / trials <= 0.98


def test_method_streams_do_not_depend_on_other_methods():
    a = rng_for(0, "method-a").integers(0, 1000, 5)
    assert np.array_equal(a, rng_for(0, "method-a").integers(0, 1000, 5))
    assert not np.array_equal(a, rng_for(1, "method-a").integers(0, 1000, 5))
    assert not np.array_equal(a, rng_for(0, "method-b").integers(0, 1000, 5))
    pair = rng_for(0, "a", "b").integers(0, 1000, 5)
    assert not np.array_equal(pair, rng_for(0, "b", "a").integers(0, 1000, 5))


def test_scores_arrow_and_json_schema_agree():
    schema = schemas.load_schema("scores")
    assert list(schema["properties"]) == SCORES.names
    assert schema["required"] == SCORES.names and schema["additionalProperties"] is False
    for field in SCORES:
        prop = schema["properties"][field.name]
        expected = json_type(field.type)
        if field.nullable:
            expected["type"] = [expected["type"], "null"]
        assert {k: prop[k] for k in expected} == expected, field.name
        assert set(prop) - set(expected) == {"description"}, field.name


def test_scores_row_schema_rejects_wrong_rows():
    row = {name: None for name in SCORES.names}
    row.update(
        method="m",
        object_id="o",
        category="c",
        supercategory="s",
        eval200=True,
        gen=False,
        n_gt_joints=2,
        error_code="prediction.missing",
    )
    schemas.validate(row, "scores")
    with pytest.raises(schemas.SchemaValidationError, match="e_tree"):
        schemas.validate({**row, "e_tree": "0.1"}, "scores")
    with pytest.raises(schemas.SchemaValidationError, match="n_gt_joints"):
        schemas.validate({**row, "n_gt_joints": None}, "scores")
    pair = {"pred_joint": "a", "gt_joint": "b", "e_phi": 0.1, "fixed_pair": False}
    schemas.validate({**row, "pairs": [pair]}, "scores")
    with pytest.raises(schemas.SchemaValidationError, match="pairs"):
        schemas.validate({**row, "pairs": [{**pair, "extra": 1}]}, "scores")
