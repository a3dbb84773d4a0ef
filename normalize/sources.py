"""The sources file: which libraries a build reads, and how (the configuration only; what a
source offers is found by `normalize.discovery`)."""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import schemas
from normalize.files import broken_link
from normalize.limits import MAX_LINKS
from normalize.safe_xml import MAX_XML_BYTES
from normalize.safe_yaml import YamlError, load_yaml


class SourcesFileError(ValueError):
    """The sources file is unreadable or does not match `schemas/sources.schema.json`."""


@dataclass(frozen=True)
class Allowance:
    check: str
    reason: str
    objects: tuple[str, ...] = ()

    def applies_to(self, source_id: str) -> bool:
        return not self.objects or any(fnmatch.fnmatchcase(source_id, g) for g in self.objects)


PROVENANCE_KEYS = ("spdx", "url", "revision", "homepage", "citation")


@dataclass(frozen=True)
class SourceConfig:
    """One library. `path` and `package_roots` are absolute."""

    name: str
    format: str
    path: Path
    license: str
    up_axis: str = "z"
    scale: float = 1.0
    entry: str | None = None
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    package_roots: tuple[Path, ...] = ()
    overrides: Mapping[str, str] = field(default_factory=dict)
    allowances: tuple[Allowance, ...] = ()
    max_file_bytes: int = MAX_XML_BYTES
    # Provenance (all optional): SPDX license, upstream URL and revision, home page, citation.
    spdx: str | None = None
    url: str | None = None
    revision: str | None = None
    homepage: str | None = None
    citation: str | None = None
    allow_empty: bool = False  # a source where discovery finds nothing does not fail the build
    max_links: int = MAX_LINKS

    def allowance(self, check: str, source_id: str) -> Allowance | None:
        """The allowance waiving `check` for `source_id`, if any."""
        return next(
            (a for a in self.allowances if a.check == check and a.applies_to(source_id)), None
        )

    def selects(self, relative: str) -> bool:
        """Whether a candidate path (relative to the root, '/'-separated) passes include/exclude."""
        if self.include and not any(fnmatch.fnmatchcase(relative, g) for g in self.include):
            return False
        return not any(fnmatch.fnmatchcase(relative, g) for g in self.exclude)

    def as_dict(self) -> dict:
        """JSON-friendly form (used in cache keys and release metadata)."""
        return {
            "name": self.name,
            "format": self.format,
            "path": str(self.path),
            "license": self.license,
            "up_axis": self.up_axis,
            "scale": self.scale,
            "entry": self.entry,
            "include": list(self.include),
            "exclude": list(self.exclude),
            "package_roots": [str(p) for p in self.package_roots],
            "overrides": dict(sorted(self.overrides.items())),
            "allowances": [
                {"check": a.check, "reason": a.reason, "objects": list(a.objects)}
                for a in self.allowances
            ],
            "max_file_bytes": self.max_file_bytes,
            **{key: getattr(self, key) for key in PROVENANCE_KEYS},
            "allow_empty": self.allow_empty,
            "max_links": self.max_links,
        }


#: Separates the parts of an object id (`normalize.discovery.make_object_id`): a source name
#: may not hold it
ID_SEPARATOR = "__"


def source_name_problem(name: str) -> str | None:
    """Why a source name cannot prefix object ids unambiguously, or None."""
    if ID_SEPARATOR in name:
        return f"must not contain {ID_SEPARATOR!r} (it separates the parts of object ids)"
    if name.endswith("_"):
        return "must not end with '_' (object ids would become ambiguous)"
    return None


def load_sources(path: Path) -> list[SourceConfig]:
    """Read and validate a sources file; raise `SourcesFileError` listing every problem."""
    path = Path(path)
    try:
        data = load_yaml(path)
    except YamlError as exc:
        raise SourcesFileError(f"sources file {path}: {exc}") from exc
    named = data.get("sources") if isinstance(data, dict) else None
    bad_names = [
        f"sources[{i}].name: {e['name']!r} {source_name_problem(e['name'])}"
        for i, e in enumerate(named if isinstance(named, list) else [])
        if isinstance(e, dict) and isinstance(e.get("name"), str) and source_name_problem(e["name"])
    ]
    if bad_names:  # before the schema, whose pattern says the same less clearly
        raise SourcesFileError(
            f"{len(bad_names)} problem(s) in {path}:\n" + "\n".join(f"  - {p}" for p in bad_names)
        )
    try:
        schemas.validate(data, "sources", source=str(path))
    except schemas.SchemaValidationError as exc:
        raise SourcesFileError(str(exc)) from exc
    base = path.resolve().parent
    configs, problems, seen = [], [], set()
    for index, entry in enumerate(data["sources"]):
        if entry["name"] in seen:
            problems.append(f"sources[{index}].name: {entry['name']!r} is used twice")
        seen.add(entry["name"])
        if not math.isfinite(float(entry.get("scale", 1.0))):  # NaN passes the schema's range
            problems.append(f"sources[{index}].scale: must be a finite number")
        folders = [entry["path"], *entry.get("package_roots", ())]
        broken = [(f, why) for f in folders if (why := broken_link(base / f))]
        if broken:
            problems += [f"sources[{index}]: {base / f} {why}" for f, why in broken]
            continue
        root = (base / entry["path"]).resolve()
        if not root.is_dir():
            problems.append(f"sources[{index}].path: folder {root} does not exist")
        configs.append(
            SourceConfig(
                name=entry["name"],
                format=entry["format"],
                path=root,
                license=entry["license"],
                up_axis=entry.get("up_axis", "z"),
                scale=float(entry.get("scale", 1.0)),
                entry=entry.get("entry"),
                include=tuple(entry.get("include", ())),
                exclude=tuple(entry.get("exclude", ())),
                package_roots=tuple((base / p).resolve() for p in entry.get("package_roots", ())),
                overrides=dict(entry.get("overrides", {})),
                allowances=tuple(
                    Allowance(a["check"], a["reason"], tuple(a.get("objects", ())))
                    for a in entry.get("allowances", ())
                ),
                max_file_bytes=int(entry.get("max_file_bytes", MAX_XML_BYTES)),
                **{key: entry.get(key) for key in PROVENANCE_KEYS},
                allow_empty=bool(entry.get("allow_empty", False)),
                max_links=int(entry.get("max_links", MAX_LINKS)),
            )
        )
    if problems:
        raise SourcesFileError(
            f"{len(problems)} problem(s) in {path}:\n" + "\n".join(f"  - {p}" for p in problems)
        )
    return configs


def overrides_file(path: Path) -> Path | None:
    """The category overrides file a sources file names (top-level `overrides`), if any."""
    data = load_yaml(path) or {}
    name = data.get("overrides") if isinstance(data, dict) else None
    return (Path(path).resolve().parent / name) if name else None
