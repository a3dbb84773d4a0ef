"""Scoring predicted articulated objects against a release (`arena score`, `arena distance`).

- `objects`: read a ground-truth or predicted object into the arrays the metric needs.
- `compare`: one predicted object against its ground truth (matching, prior scores, E's).
- `stats`: means and percentile bootstrap intervals over objects, paired differences.
- `report`: the Table-4-style Markdown report.
- `defaults`: the defaults of the settings (`score.Settings`'s and the commands').

`scoring.score` ties them together; see docs/scoring.md.
"""
