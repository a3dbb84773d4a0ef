"""Category assignment with evidence: override, source label, name synonyms, structure.

`categorize` collects every piece of evidence an object offers, scores each category, then takes
the first step of the documented order that yields a category:

1. override: the overrides file (object_id -> category), else the source config (source_id ->
   category);
2. source label: a label such as PartNet `model_cat`, mapped through the taxonomy;
3. name synonym: whole-word synonyms in the folder, path, robot/model, semantics and link names;
4. structure: rules over the kinematic tree (`taxonomy.structure`);
5. otherwise "unassigned".

Anything unassigned, below `REVIEW_BELOW` confidence or with conflicting evidence is flagged
`needs_review` and still enters the release.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from normalize.model import ArticulatedObject
from taxonomy.data import (
    UNASSIGNED,
    Taxonomy,
    TaxonomyError,
    load_taxonomy,
    words,
)
from taxonomy.structure import structure_hints

LABEL_WEIGHT = 0.95
# Where a name was found -> how much a synonym match there counts. The first five (OBJECT_LEVEL)
# describe the whole object; link names and part labels name parts, so part words are ignored
# there.
NAME_WEIGHTS = {
    "folder": 0.8,
    "robot name": 0.75,
    "source path": 0.7,
    "semantics body label": 0.7,
    "variant file": 0.5,
    "link name": 0.4,
    "semantics part label": 0.4,
}
OBJECT_LEVEL = ("folder", "robot name", "source path", "semantics body label", "variant file")
# PartNet semantics.txt joint types of the object's main body (the others are moving parts).
BODY_JOINT_TYPES = ("free", "heavy", "static")

REVIEW_BELOW = 0.6  # confidence under this sends the object to review
CONFLICT_MIN = 0.5  # a rival category needs at least this much object-level name evidence...
CONFLICT_MARGIN = 0.25  # ...and, against a name-based choice, to come this close to the winner


@dataclass(frozen=True)
class Evidence:
    """One thing that points at a category: where it was found and how much it counts."""

    category: str
    score: float
    field: str
    text: str


@dataclass(frozen=True)
class Assignment:
    """The category of one object, how it was decided, and whether a curator should look."""

    object_id: str
    source: str
    source_id: str
    category: str
    supercategory: str
    method: str
    confidence: float
    evidence: tuple[str, ...]
    candidates: tuple[tuple[str, float], ...]
    needs_review: bool
    reasons: tuple[str, ...]
    taxonomy_version: str

    def as_dict(self) -> dict:
        """JSON-friendly form (candidates as [{category, score}])."""
        return {
            "object_id": self.object_id,
            "source": self.source,
            "source_id": self.source_id,
            "category": self.category,
            "supercategory": self.supercategory,
            "method": self.method,
            "confidence": self.confidence,
            "evidence": list(self.evidence),
            "candidates": [{"category": c, "score": s} for c, s in self.candidates],
            "needs_review": self.needs_review,
            "reasons": list(self.reasons),
            "taxonomy_version": self.taxonomy_version,
        }


# --------------------------------------------------------------------------- evidence
def _label_evidence(obj: ArticulatedObject, tax: Taxonomy) -> tuple[list[Evidence], list[str]]:
    found, unmapped = [], []
    for vocabulary, key in tax.label_keys.items():
        value = obj.source.labels.get(key)
        if value in (None, ""):
            continue
        category = tax.category_for_label(vocabulary, str(value))
        if category is None:
            unmapped.append(f"source label {key}={value!r} is not mapped in taxonomy {tax.version}")
        else:
            text = f"source label {key}={value!r} -> {category}"
            found.append(Evidence(category, LABEL_WEIGHT, "source label", text))
    return found, unmapped


def _names(obj: ArticulatedObject, object_id: str, source_id: str) -> list[tuple[str, str]]:
    """(field, name) pairs worth matching, without repeats."""
    labels = obj.source.labels
    out: list[tuple[str, str]] = []
    folder = str(labels.get("folder") or "")
    if folder:
        out.append(("folder", folder))
    # A normalized object is named after its object_id, which holds the source's name: skip it.
    robot = str(labels.get("robot_name") or (obj.name if obj.name != object_id else ""))
    if robot:
        out.append(("robot name", robot))
    path = obj.source.source_path.rsplit(".", 1)[0] if obj.source.source_path else ""
    for segment in [*source_id.split("/"), *path.split("/")]:
        if segment and segment not in folder.split("/"):
            out.append(("source path", segment))
    # Other entry files of a PartNet-style folder (e.g. "switch.urdf" beside mobility.urdf).
    out.extend(("variant file", str(v).rsplit(".", 1)[0]) for v in labels.get("variants") or ())
    for entry in labels.get("semantics") or ():
        field = (
            "semantics body label"
            if entry.get("joint_type") in BODY_JOINT_TYPES
            else "semantics part label"
        )
        if entry.get("label"):
            out.append((field, str(entry["label"])))
    for link in obj.links:
        out.extend(("link name", name) for name in link.source_names)
    return list(dict.fromkeys(out))


def match_synonyms(text: str, tax: Taxonomy) -> list[tuple[str, str]]:
    """(category, synonym) for every synonym found in `text` as a run of whole words. A match
    inside a longer match is dropped ("cart pole" is a cart-pole, not a cart)."""
    ws = words(text)
    spans = []
    for i, w in enumerate(ws):
        for syn in tax.synonyms_starting(w):
            if ws[i : i + len(syn.words)] == syn.words:
                spans.append((i, i + len(syn.words), syn))
    kept = [
        s
        for s in spans
        if not any(o[0] <= s[0] and s[1] <= o[1] and o[1] - o[0] > s[1] - s[0] for o in spans)
    ]
    return list(dict.fromkeys((syn.category, syn.text) for _, _, syn in kept))


def _name_evidence(
    obj: ArticulatedObject, object_id: str, source_id: str, tax: Taxonomy
) -> list[Evidence]:
    hits: dict[tuple[str, str], list[str]] = {}  # (category, field) -> descriptions
    for field, name in _names(obj, object_id, source_id):
        for category, synonym in match_synonyms(name, tax):
            if field not in OBJECT_LEVEL and set(words(synonym)) <= tax.part_words:
                continue
            hits.setdefault((category, field), []).append(f"{name!r} (synonym {synonym!r})")
    found = []
    for (category, field), where in hits.items():
        more = f" and {len(where) - 1} more" if len(where) > 1 else ""
        text = f"{field} {where[0]}{more} -> {category}"
        found.append(Evidence(category, NAME_WEIGHTS[field], field, text))
    return found


def _combine(evidence: list[Evidence]) -> dict[str, float]:
    """Score per category: noisy-OR of the best evidence from each field."""
    best: dict[tuple[str, str], float] = {}
    for e in evidence:
        best[(e.category, e.field)] = max(best.get((e.category, e.field), 0.0), e.score)
    miss: dict[str, float] = {}
    for (category, _), score in best.items():
        miss[category] = miss.get(category, 1.0) * (1.0 - score)
    return {c: round(1.0 - m, 4) for c, m in miss.items()}


# --------------------------------------------------------------------------- decision
def _refine(choice: str, scores: Mapping[str, float], tax: Taxonomy) -> str:
    """A narrower category than `choice` that object-level names support well enough."""
    narrower = [c for c, s in scores.items() if choice in tax.ancestors(c) and s >= REVIEW_BELOW]
    return max(narrower, key=lambda c: (scores[c], c)) if narrower else choice


def _confidence(choice: str, evidence: list[Evidence], tax: Taxonomy) -> float:
    """Evidence for the category or a broader one it refines, combined."""
    family = {choice, *tax.ancestors(choice)}
    supporting = [e for e in evidence if e.category in family]
    return _combine([Evidence(choice, e.score, e.field, "") for e in supporting]).get(choice, 0.0)


def categorize(
    obj: ArticulatedObject,
    *,
    object_id: str,
    source_id: str,
    overrides: Mapping[str, str] | None = None,
    source_overrides: Mapping[str, str] | None = None,
    taxonomy: Taxonomy | None = None,
) -> Assignment:
    """Assign `obj` a category, with the method, confidence, evidence and candidates.

    overrides: object_id -> category (the curators' overrides file, `load_overrides`);
    source_overrides: source_id -> category (the `overrides` of the object's source config).
    An override naming a category the taxonomy lacks raises `TaxonomyError`."""
    tax = taxonomy or load_taxonomy()
    labels, unmapped = _label_evidence(obj, tax)
    names = _name_evidence(obj, object_id, source_id, tax)
    hints = structure_hints(obj)
    structure = [
        Evidence(h.category, h.score, "structure", f"structure: {h.text} -> {h.category}")
        for h in hints
    ]
    evidence = labels + names + structure
    scores = _combine(evidence)
    name_scores = _combine(names)
    object_scores = _combine([e for e in names if e.field in OBJECT_LEVEL])
    reasons = list(unmapped)

    def rivals(choice: str, margin: float | None) -> list[str]:
        out = []
        for category, score in sorted(object_scores.items(), key=lambda kv: (-kv[1], kv[0])):
            if score < CONFLICT_MIN or tax.related(category, choice):
                continue
            if margin is not None and name_scores.get(choice, 0.0) - score >= margin:
                continue
            fields = sorted({e.field for e in names if e.category == category} & set(OBJECT_LEVEL))
            out.append(f"conflicting evidence: {', '.join(fields)} says {category}, not {choice}")
        return out

    override = _override(object_id, source_id, overrides, source_overrides, tax)
    if override is not None:
        category, text = override
        method, confidence = "override", 1.0
        evidence.insert(0, Evidence(category, 1.0, "override", text))
        reasons = []
    elif labels:
        label_choice = sorted(labels, key=lambda e: e.category)[0].category
        category = _refine(label_choice, object_scores, tax)
        method = "source_label"
        if len({e.category for e in labels}) > 1:
            reasons.append("source labels disagree: " + "; ".join(e.text for e in labels))
        reasons += rivals(label_choice, margin=None)
    elif name_scores:
        best = max(name_scores, key=lambda c: (name_scores[c], c))
        category = _refine(best, object_scores, tax)
        method = "name_synonym"
        reasons += rivals(best, margin=CONFLICT_MARGIN)
    elif hints:
        category, method = hints[0].category, "structure"
    else:
        category, method = UNASSIGNED, "unassigned"
        reasons.append("no source label, name or structural rule points to a category")

    if method != "override":
        confidence = _confidence(category, evidence, tax) if category != UNASSIGNED else 0.0
        if category != UNASSIGNED and confidence < REVIEW_BELOW:
            reasons.append(f"low confidence {confidence:.2f} from {method} (< {REVIEW_BELOW})")
    candidates = tuple(sorted(scores.items(), key=lambda kv: (-kv[1], kv[0])))
    return Assignment(
        object_id=object_id,
        source=obj.source.library,
        source_id=source_id,
        category=category,
        supercategory=tax.supercategory_of(category),
        method=method,
        confidence=round(confidence, 4),
        evidence=tuple(e.text for e in evidence) + tuple(unmapped),
        candidates=candidates,
        needs_review=bool(reasons),
        reasons=tuple(reasons),
        taxonomy_version=tax.version,
    )


def _override(object_id, source_id, overrides, source_overrides, tax) -> tuple[str, str] | None:
    for table, key, where in (
        (overrides, object_id, f"overrides file entry {object_id}"),
        (source_overrides, source_id, f"source config override for {source_id}"),
    ):
        if table and key in table:
            category = table[key]
            if category not in tax.categories:
                raise TaxonomyError(
                    f"object {object_id}: {where} names category {category!r}, which taxonomy "
                    f"{tax.version} does not have",
                    code="overrides.unknown_category",
                )
            return category, f"{where} -> {category}"
    return None
