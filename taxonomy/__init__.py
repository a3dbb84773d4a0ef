"""The category taxonomy and category assignment with evidence.

tax = load_taxonomy()                      # taxonomy/taxonomy.yaml, checked
overrides = load_overrides("overrides.yaml", tax)
a = categorize(obj, object_id=..., source_id=..., overrides=overrides, taxonomy=tax)
rows = review_rows([a, ...])               # -> manifest/review.parquet
markdown = write_release_statistics(objects_df, joints_df, release / "plots")
"""

from taxonomy.assign import Assignment, categorize, match_synonyms
from taxonomy.data import (
    UNASSIGNED,
    UNASSIGNED_SUPERCATEGORY,
    Category,
    Taxonomy,
    TaxonomyError,
    load_overrides,
    load_taxonomy,
    words,
)
from taxonomy.review import review_rows

__all__ = [
    "UNASSIGNED",
    "UNASSIGNED_SUPERCATEGORY",
    "Assignment",
    "Category",
    "Taxonomy",
    "TaxonomyError",
    "categorize",
    "load_overrides",
    "load_taxonomy",
    "match_synonyms",
    "review_rows",
    "words",
    "write_release_statistics",
]


def __getattr__(name: str):
    """`write_release_statistics` is imported on first use: it needs pandas and matplotlib,
    which categorizing one object (as `arena validate` does) does not."""
    if name == "write_release_statistics":
        from taxonomy.stats import write_release_statistics

        return write_release_statistics
    raise AttributeError(f"module 'taxonomy' has no attribute {name!r}")
