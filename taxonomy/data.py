"""The taxonomy data file and the curators' overrides file: loading, validation, name matching.

`taxonomy/taxonomy.yaml` lists 15 supercategories and the categories under them. Each category has
exactly one supercategory, synonyms (matched on whole words of object names), source-label
mappings (e.g. PartNet `model_cat` values) and optionally a `broader` category it refines.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path

import schemas
from normalize.inputs import unrecorded
from normalize.safe_yaml import YamlError, load_yaml

UNASSIGNED = "unassigned"
UNASSIGNED_SUPERCATEGORY = "Unassigned"


class TaxonomyError(ValueError):
    """The taxonomy or an overrides file is invalid, or names a category the taxonomy lacks.

    code: stable dotted identifier (taxonomy.unreadable, taxonomy.schema, taxonomy.duplicate,
    taxonomy.orphan, taxonomy.ambiguous_synonym, taxonomy.ambiguous_label, taxonomy.broader,
    overrides.unreadable, overrides.schema, overrides.unknown_category).
    """

    def __init__(self, message: str, *, code: str, path: str | None = None):
        self.code = code
        self.path = path
        where = f" ({path})" if path else ""
        super().__init__(f"[{code}] {message}{where}")


# --------------------------------------------------------------------------- words
_HASH = re.compile(r"^(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{4,}$")


def words(text: str) -> tuple[str, ...]:
    """Lower-case words of a name: split at anything not a letter or digit, at camelCase
    boundaries and between letters and digits ("TwoJointRobot_w2" -> two joint robot w 2).
    Hex chunks that look like hashes or UUID parts ("5b844d6f4d06") are dropped."""
    out: list[str] = []
    for chunk in re.split(r"[^A-Za-z0-9]+", text):
        if not chunk or _HASH.match(chunk.lower()):
            continue
        chunk = re.sub(r"([a-z])([A-Z])", r"\1 \2", chunk)
        chunk = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", chunk)
        out.extend(t.lower() for t in re.findall(r"[A-Za-z]+|[0-9]+", chunk))
    return tuple(out)


# --------------------------------------------------------------------------- model
@dataclass(frozen=True)
class Category:
    name: str
    supercategory: str
    synonyms: tuple[str, ...]
    source_labels: Mapping[str, tuple[str, ...]]
    broader: str | None = None
    description: str = ""
    size: tuple[float, float] | None = None


@dataclass(frozen=True)
class Synonym:
    """One synonym as the word sequence it matches."""

    words: tuple[str, ...]
    text: str
    category: str


@dataclass(frozen=True)
class Taxonomy:
    """A loaded, checked taxonomy. `categories` keeps file order; indexes are built on load."""

    version: str
    supercategories: tuple[str, ...]
    categories: Mapping[str, Category]
    label_keys: Mapping[str, str]
    part_words: frozenset[str]
    path: str = ""
    supercategory_sizes: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    supercategory_densities: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    _synonyms: Mapping[str, tuple[Synonym, ...]] = field(default_factory=dict, repr=False)
    _labels: Mapping[tuple[str, tuple[str, ...]], str] = field(default_factory=dict, repr=False)

    def supercategory_of(self, category: str) -> str:
        if category == UNASSIGNED:
            return UNASSIGNED_SUPERCATEGORY
        return self.categories[category].supercategory

    def category_for_label(self, vocabulary: str, value: str) -> str | None:
        """The category a source label maps to (matched on its words, so "StorageFurniture",
        "storage_furniture" and "Storage Furniture" are the same label), or None."""
        return self._labels.get((vocabulary, words(value)))

    def related(self, a: str, b: str) -> bool:
        """Whether one category is the other or refines it (directly or through `broader`)."""
        return a == b or b in self.ancestors(a) or a in self.ancestors(b)

    def ancestors(self, category: str) -> tuple[str, ...]:
        out = []
        current = self.categories[category].broader
        while current is not None:
            out.append(current)
            current = self.categories[current].broader
        return tuple(out)

    def size_range(self, category: str) -> tuple[float, float] | None:
        """(smallest, largest) plausible largest extent in metres of an object of `category`:
        its own `size`, else its nearest broader category's, else its supercategory's; None
        for an unassigned object."""
        if category not in self.categories:
            return None
        for name in (category, *self.ancestors(category)):
            if self.categories[name].size is not None:
                return self.categories[name].size
        return self.supercategory_sizes.get(self.categories[category].supercategory)

    def density_range(self, category: str) -> tuple[float, float] | None:
        """(lowest, highest) plausible effective density in kg/m^3 (mass over the rest-pose box
        volume) of an object of `category` whose masses were computed: its supercategory's;
        None for an unassigned object."""
        if category not in self.categories:
            return None
        return self.supercategory_densities.get(self.categories[category].supercategory)

    def synonyms_starting(self, word: str) -> tuple[Synonym, ...]:
        return self._synonyms.get(word, ())


def _read_yaml(path: Path, code: str) -> object:
    try:
        return load_yaml(path)
    except YamlError as exc:  # the message names the YAML code (yaml.alias, yaml.too_large...)
        raise TaxonomyError(str(exc), code=code, path=str(path)) from exc


DEFAULT_PATH = Path(str(resources.files(__name__.rpartition(".")[0]).joinpath("taxonomy.yaml")))


def load_taxonomy(path: Path | str | None = None) -> Taxonomy:
    """Load and check a taxonomy file (default: the packaged `taxonomy/taxonomy.yaml`).

    Checks, beyond `schemas/taxonomy.schema.json` (the packaged file: by the tests, not at each
    load): category names are unique (no category under two supercategories), every category's
    supercategory is declared (no orphans) and every supercategory has a category, `broader`
    names an existing category without cycles, no synonym and no source label belongs to two
    categories. Raises `TaxonomyError`."""
    if path is None:
        return _load_default()
    return _load(Path(path))


@cache
def _load_default() -> Taxonomy:
    # tests/test_taxonomy_data.py holds the packaged file to its schema; it is code (in the
    # cache's code fingerprint), not an input of the object being computed
    with unrecorded():
        return _load(DEFAULT_PATH, schema=False)


def _load(path: Path, schema: bool = True) -> Taxonomy:
    data = _read_yaml(path, "taxonomy.unreadable")
    if schema:
        try:
            schemas.validate(data, "taxonomy", source=str(path))
        except schemas.SchemaValidationError as exc:
            raise TaxonomyError(str(exc), code="taxonomy.schema", path=str(path)) from exc

    def fail(message: str, code: str):
        raise TaxonomyError(message, code=code, path=str(path))

    supers = [s["name"] for s in data["supercategories"]]
    if len(set(supers)) != len(supers):
        fail(f"supercategory declared twice: {_repeated(supers)}", "taxonomy.duplicate")
    label_keys = {k: v["label"] for k, v in data.get("label_vocabularies", {}).items()}
    categories: dict[str, Category] = {}
    for entry in data["categories"]:
        name = entry["name"]
        if name in categories:
            fail(
                f"category {name!r} is listed twice (under {categories[name].supercategory!r} "
                f"and {entry['supercategory']!r})",
                "taxonomy.duplicate",
            )
        if entry["supercategory"] not in supers:
            fail(
                f"category {name!r} names undeclared supercategory {entry['supercategory']!r}",
                "taxonomy.orphan",
            )
        for vocabulary in entry["source_labels"]:
            if vocabulary not in label_keys:
                fail(
                    f"category {name!r} maps labels of undeclared vocabulary {vocabulary!r}",
                    "taxonomy.orphan",
                )
        categories[name] = Category(
            name=name,
            supercategory=entry["supercategory"],
            synonyms=tuple(entry["synonyms"]),
            source_labels={k: tuple(v) for k, v in entry["source_labels"].items()},
            broader=entry.get("broader"),
            description=entry.get("description", ""),
            size=_size(entry, fail),
        )
    empty = [s for s in supers if not any(c.supercategory == s for c in categories.values())]
    if empty:
        fail(f"supercategories without categories: {', '.join(empty)}", "taxonomy.orphan")
    for cat in categories.values():
        seen = {cat.name}
        current = cat.broader
        while current is not None:
            if current not in categories:
                fail(
                    f"category {cat.name!r}: broader {current!r} is not a category",
                    "taxonomy.broader",
                )
            if current in seen:
                fail(f"category {cat.name!r}: broader categories form a cycle", "taxonomy.broader")
            seen.add(current)
            current = categories[current].broader

    synonyms: dict[tuple[str, ...], Synonym] = {}
    for cat in categories.values():
        for text in (cat.name.replace("_", " "), *cat.synonyms):
            key = words(text)
            if not key:
                fail(f"category {cat.name!r}: synonym {text!r} has no words", "taxonomy.schema")
            other = synonyms.get(key)
            if other is not None and other.category != cat.name:
                fail(
                    f"synonym {text!r} of {cat.name!r} matches the same words as {other.text!r} "
                    f"of {other.category!r}",
                    "taxonomy.ambiguous_synonym",
                )
            synonyms.setdefault(key, Synonym(key, text, cat.name))
    by_first: dict[str, list[Synonym]] = {}
    for syn in synonyms.values():
        by_first.setdefault(syn.words[0], []).append(syn)

    labels: dict[tuple[str, tuple[str, ...]], str] = {}
    for cat in categories.values():
        for vocabulary, values in cat.source_labels.items():
            for value in values:
                key = (vocabulary, words(value))
                if labels.get(key, cat.name) != cat.name:
                    fail(
                        f"{vocabulary} label {value!r} maps to both {labels[key]!r} and "
                        f"{cat.name!r}",
                        "taxonomy.ambiguous_label",
                    )
                labels[key] = cat.name

    return Taxonomy(
        version=str(data["version"]),
        supercategories=tuple(supers),
        categories=categories,
        label_keys=label_keys,
        part_words=frozenset(w for text in data.get("part_words", ()) for w in words(text)),
        path=str(path),
        supercategory_sizes={s["name"]: _size(s, fail) for s in data["supercategories"]},
        supercategory_densities={
            s["name"]: _size(s, fail, "density") for s in data["supercategories"]
        },
        _synonyms={k: tuple(sorted(v, key=lambda s: -len(s.words))) for k, v in by_first.items()},
        _labels=labels,
    )


def _size(entry: dict, fail, key: str = "size") -> tuple[float, float] | None:
    if key not in entry:
        return None
    low, high = (float(v) for v in entry[key])
    if not low < high:
        fail(
            f"{entry['name']!r}: {key} [{low:g}, {high:g}] is not an increasing range",
            f"taxonomy.{key}",
        )
    return (low, high)


def _repeated(names: list[str]) -> str:
    return ", ".join(sorted({n for n in names if names.count(n) > 1}))


# --------------------------------------------------------------------------- overrides
def load_overrides(path: Path | str, taxonomy: Taxonomy | None = None) -> dict[str, str]:
    """Read a curators' overrides file `{version: 1, overrides: {<object_id>: <category>}}`
    (schema `schemas/overrides.schema.json`) and return object_id -> category. A category the
    taxonomy does not have is an error naming the object (code overrides.unknown_category)."""
    taxonomy = taxonomy or load_taxonomy()
    data = _read_yaml(Path(path), "overrides.unreadable")
    try:
        schemas.validate(data, "overrides", source=str(path))
    except schemas.SchemaValidationError as exc:
        raise TaxonomyError(str(exc), code="overrides.schema", path=str(path)) from exc
    overrides = {str(k): str(v) for k, v in (data.get("overrides") or {}).items()}
    unknown = {k: v for k, v in overrides.items() if v not in taxonomy.categories}
    if unknown:
        listing = "; ".join(f"{k} -> {v!r}" for k, v in sorted(unknown.items()))
        raise TaxonomyError(
            f"{len(unknown)} override(s) name categories not in taxonomy {taxonomy.version}: "
            f"{listing}",
            code="overrides.unknown_category",
            path=str(path),
        )
    return overrides
