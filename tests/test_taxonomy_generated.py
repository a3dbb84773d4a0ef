"""Category assignment on the generated sample library: every object gets its truth category."""

from __future__ import annotations

import json

from normalize.adapters import get_adapter
from normalize.sources import load_sources
from taxonomy import categorize, load_taxonomy, review_rows


def test_generated_objects_get_their_truth_category_without_review(sample_library):
    tax = load_taxonomy()
    assignments, truths, formats = [], [], set()
    for source in load_sources(sample_library / "sources.yaml"):
        adapter = get_adapter(source.format)
        formats.add(source.format)
        for candidate in adapter.discover(source):
            obj = adapter.load(candidate)
            truth = json.loads((candidate.path.parent / "truth.json").read_text(encoding="utf-8"))
            assignments.append(
                categorize(
                    obj, object_id=candidate.object_id, source_id=candidate.source_id, taxonomy=tax
                )
            )
            truths.append(truth["category"])
    assert formats == {"partnet_mobility", "urdf", "mjcf", "sdf"}
    assert len(assignments) >= 40
    got = [(a.object_id, a.category) for a in assignments]
    expected = [(a.object_id, t) for a, t in zip(assignments, truths, strict=True)]
    assert got == expected
    assert review_rows(assignments) == []
    # PartNet-Mobility folders are decided by meta.json, the other formats by their names.
    methods = {a.method for a in assignments if a.source == "sample_partnet"}
    assert methods == {"source_label"}
    assert {a.method for a in assignments if a.source != "sample_partnet"} == {"name_synonym"}
