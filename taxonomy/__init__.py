"""The category taxonomy and category assignment with evidence.

tax = load_taxonomy()                      # taxonomy/taxonomy.yaml, schema-checked
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
from taxonomy.stats import write_release_statistics

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
