"""The duplicate stage: the same physical object found in several libraries (after
verification and taxonomy, before export). Plain functions: `record_from_rows` per accepted
object, `find_duplicates` over all of them; see `duplicates.stage` for the policy."""

from duplicates.keys import ObjectRecord, record_from_rows
from duplicates.settings import load_settings
from duplicates.stage import (
    DuplicateResult,
    DuplicateSettings,
    EvidenceCache,
    PairEvidence,
    find_duplicates,
)

__all__ = [
    "DuplicateResult",
    "DuplicateSettings",
    "EvidenceCache",
    "ObjectRecord",
    "PairEvidence",
    "find_duplicates",
    "load_settings",
    "record_from_rows",
]
