"""Bounds on the size of one object, checked as early as the format allows: before MuJoCo
compiles an MJCF (bodies and joints counted with `<replicate>` multiplied out), while SDFormat
includes are expanded (links, joints and include elements counted as they are added), and on
every object an adapter returns. A tiny file that expands into a huge model is refused with
`model.too_large` instead of taking the worker's time and memory. The link and joint bound is
the source's `max_links` (sources file; default MAX_LINKS); docs/limits.md lists every limit.
"""

from __future__ import annotations

from normalize.errors import AssetError

MAX_LINKS = 1000  # links (MJCF bodies) and joints of one object; real objects have up to ~120
MAX_INCLUDES = 1000  # SDFormat <include> elements expanded for one object


def check_count(what: str, count: int, limit: int, path=None, stage: str = "parse") -> None:
    """Raise `model.too_large` when `count` of `what` exceeds `limit`."""
    if count > limit:
        raise AssetError(
            f"the model has more than {limit} {what} ({count} so far); the limit is the "
            "source's max_links (see docs/limits.md)",
            code="model.too_large",
            stage=stage,
            path=None if path is None else str(path),
        )
