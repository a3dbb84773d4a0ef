"""The review queue: assignments a curator should look at, as rows for manifest/review.parquet."""

from __future__ import annotations

from collections.abc import Iterable

from taxonomy.assign import Assignment


def review_rows(assignments: Iterable[Assignment]) -> list[dict]:
    """One row per assignment that needs review, sorted by object_id: object_id, source,
    source_id, category (the proposal), supercategory, method, confidence, candidates
    ([{category, score}], best first), evidence (strings) and reason (why it is listed).
    A curator settles a row by adding `<object_id>: <category>` to the overrides file."""
    rows = [
        {
            "object_id": a.object_id,
            "source": a.source,
            "source_id": a.source_id,
            "category": a.category,
            "supercategory": a.supercategory,
            "method": a.method,
            "confidence": a.confidence,
            "candidates": [{"category": c, "score": s} for c, s in a.candidates],
            "evidence": list(a.evidence),
            "reason": "; ".join(a.reasons),
        }
        for a in assignments
        if a.needs_review
    ]
    return sorted(rows, key=lambda r: r["object_id"])
