"""The stage's settings from the build's files.

- The sources file: top-level `duplicates: keep | move_out` (default keep) and the order of its
  sources, which is the source priority of the canonical policy (first listed, first chosen).
- The curators' overrides file (the one the sources file names, schema overrides.schema.json):
  `duplicates: {same: [[id, id], ...], distinct: [[id, id], ...]}` declares pairs of objects
  the same object or distinct, whatever the evidence says.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from duplicates.stage import DuplicateSettings


def _yaml(path: Path | None) -> dict:
    if path is None or not Path(path).is_file():
        return {}
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def load_settings(
    sources_file: Path | None, overrides_file: Path | None, source_names: list[str]
) -> DuplicateSettings:
    """The DuplicateSettings of a build (both files are schema-checked by their loaders)."""
    handling = _yaml(sources_file).get("duplicates", DuplicateSettings.handling)
    declared = _yaml(overrides_file).get("duplicates") or {}

    def pairs(kind: str) -> tuple[tuple[str, str], ...]:
        return tuple(sorted(tuple(sorted(map(str, p))) for p in declared.get(kind, ())))

    return DuplicateSettings(
        handling=handling,
        priority=tuple(source_names),
        same=pairs("same"),
        distinct=pairs("distinct"),
    )
