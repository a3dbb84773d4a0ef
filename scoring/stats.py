"""Means over objects with 95 % percentile bootstrap intervals, resampling objects.

Values are an (n objects, k columns) array with NaN where a column is undefined for an object
(e.g. E_B for an object without a pair of finite limits). A resample draws n objects with
replacement; each column's resampled mean is over the drawn objects where it is defined
(resamples that draw none are left out of that column's percentiles). All resamples of one
call share the drawn objects, so the columns of one method stay coupled, and the work is a
matrix product of resample counts (B, n) with the values (n, k), in chunks.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95
#: Resample counts kept in memory at once (entries of the (chunk, n) count matrix).
_CHUNK_ENTRIES = 1 << 22


@dataclass(frozen=True)
class Interval:
    """Per column: the mean over defined values, the percentile interval and the count."""

    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n: np.ndarray


def rng_for(seed: int, *names: str) -> np.random.Generator:
    """A generator seeded by `seed` and the method names: the same method gets the same
    resamples whatever the other methods or their order."""
    return np.random.default_rng([seed, *(zlib.crc32(name.encode()) for name in names)])


def bootstrap(
    values: np.ndarray, resamples: int, rng: np.random.Generator, confidence: float = CONFIDENCE
) -> Interval:
    """Mean and percentile bootstrap interval of every column of `values` (n, k), NaN meaning
    undefined (see the module docstring). With no defined value a column's entries are NaN;
    with `resamples` 0 the interval is NaN."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 2:
        raise ValueError(f"values must be (objects, columns), got shape {values.shape}")
    n, k = values.shape
    defined = ~np.isnan(values)
    count = defined.sum(axis=0)
    filled = np.where(defined, values, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = filled.sum(axis=0) / count
    low = np.full(k, np.nan)
    high = np.full(k, np.nan)
    if n == 0 or resamples <= 0:
        return Interval(mean, low, high, count)
    weights = defined.astype(float)
    means = np.empty((resamples, k))
    chunk = max(1, _CHUNK_ENTRIES // n)
    for start in range(0, resamples, chunk):
        b = min(chunk, resamples - start)
        draws = rng.integers(0, n, size=(b, n))
        draws += (np.arange(b) * n)[:, None]
        counts = np.bincount(draws.ravel(), minlength=b * n).reshape(b, n).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            means[start : start + b] = (counts @ filled) / (counts @ weights)
    tail = 100.0 * (1.0 - confidence) / 2.0
    for j in range(k):
        column = means[:, j]
        column = column[~np.isnan(column)]
        if len(column):
            low[j], high[j] = np.percentile(column, [tail, 100.0 - tail])
    return Interval(mean, low, high, count)
