"""The sources file: which libraries a build reads, and the candidates discovered in them."""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

import schemas
from normalize.errors import AssetError
from normalize.safe_xml import MAX_XML_BYTES


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
        }


@dataclass(frozen=True)
class Candidate:
    """One object a source offers: an entry file, or an object folder for PartNet-Mobility.

    source_id: the path of the entry (file without suffix, or folder) relative to the source
    root, '/'-separated; object_id: the release-wide id derived from it.
    """

    source: SourceConfig
    source_id: str
    path: Path

    @property
    def object_id(self) -> str:
        return make_object_id(self.source.name, self.source_id)

    @property
    def source_path(self) -> str:
        """The entry path relative to the source root."""
        return self.path.relative_to(self.source.path).as_posix()


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def make_object_id(source_name: str, source_id: str) -> str:
    """Readable, stable and unique: `<source>__<source_id>` with '/' as '__'; when other
    characters had to be replaced, a short hash of the raw id keeps distinct ids distinct."""
    parts = source_id.split("/")
    cleaned = [_UNSAFE.sub("-", p).strip("-.") or "_" for p in parts]
    object_id = "__".join([source_name, *cleaned])
    if cleaned != parts or any("__" in p for p in parts):
        object_id += "-" + hashlib.sha256(source_id.encode()).hexdigest()[:8]
    return object_id


def load_sources(path: Path) -> list[SourceConfig]:
    """Read and validate a sources file; raise `SourcesFileError` listing every problem."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SourcesFileError(f"cannot read sources file {path}: {exc.strerror or exc}") from exc
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise SourcesFileError(f"sources file {path} is not valid YAML: {exc}") from exc
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
            )
        )
    if problems:
        raise SourcesFileError(
            f"{len(problems)} problem(s) in {path}:\n" + "\n".join(f"  - {p}" for p in problems)
        )
    return configs


def entry_paths(source: SourceConfig, pattern: str) -> list[Path]:
    """Every path matching the source's `entry` glob (else `pattern`) that the source selects,
    sorted. Nothing is filtered by type: a directory named like an entry file or a symlink that
    leaves the root is still a candidate, refused with its own code when loaded."""
    try:
        paths = sorted(source.path.glob(source.entry or pattern))
    except OSError as exc:
        raise source_unreadable(source, exc) from exc
    return [p for p in paths if source.selects(p.relative_to(source.path).as_posix())]


def overrides_file(path: Path) -> Path | None:
    """The category overrides file a sources file names (top-level `overrides`), if any."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    name = data.get("overrides") if isinstance(data, dict) else None
    return (Path(path).resolve().parent / name) if name else None


def discover(source: SourceConfig) -> list[Candidate]:
    """Every candidate of a source, sorted by source_id (delegates to the format's adapter)."""
    from normalize.adapters import get_adapter
    from normalize.paths import memoized_realpaths

    with memoized_realpaths():  # thousands of candidates in a few folders
        candidates = get_adapter(source.format).discover(source)
    return sorted(candidates, key=lambda c: c.source_id)


# File suffixes that look like the entry of a format: a file with one of these that discovery
# did not take is reported as skipped (`skipped_files`).
ENTRY_SUFFIXES = {".urdf": "urdf", ".xml": "mjcf", ".mjcf": "mjcf", ".sdf": "sdf", ".world": "sdf"}
SKIP_EXAMPLES = 5
SKIP_REASONS = {
    "other_format": "the suffix of another format's entry files",
    "not_selected": "left out by the source's entry, include or exclude patterns",
    "not_an_entry": "of this format but not an entry (included by another file, or unused)",
}


def _matches_entry(source: SourceConfig, relative: str) -> bool:
    patterns = {source.entry, source.entry.removeprefix("**/")}  # "**/" also matches the root
    return any(fnmatch.fnmatchcase(relative, p) for p in patterns)


def skipped_files(source: SourceConfig, candidates: list[Candidate]) -> dict[str, dict]:
    """The files under the source root that look like an entry file (ENTRY_SUFFIXES) but are
    no candidate, by reason (SKIP_REASONS): {reason: {"count": n, "examples": [first paths]}},
    paths relative to the root. Files inside a PartNet-Mobility object folder belong to it."""
    own = "urdf" if source.format == "partnet_mobility" else source.format
    entries = {c.path for c in candidates}
    folders = {c.path.parent for c in candidates} if source.format == "partnet_mobility" else set()
    found: dict[str, list[str]] = {}
    for directory, dirs, files in os.walk(source.path):
        dirs.sort()
        folder = Path(directory)
        if folder in folders:
            continue
        for name in sorted(files):
            fmt = ENTRY_SUFFIXES.get(Path(name).suffix.lower())
            path = folder / name
            if fmt is None or path in entries:
                continue
            relative = path.relative_to(source.path).as_posix()
            if fmt != own:
                reason = "other_format"
            elif not source.selects(relative) or (
                source.entry and not _matches_entry(source, relative)
            ):
                reason = "not_selected"
            else:
                reason = "not_an_entry"
            found.setdefault(reason, []).append(relative)
    return {
        reason: {"count": len(paths), "examples": paths[:SKIP_EXAMPLES]}
        for reason, paths in sorted(found.items())
    }


def source_unreadable(source: SourceConfig, exc: OSError) -> AssetError:
    return AssetError(
        f"source root cannot be read: {exc.strerror or exc}",
        code="source.unreadable",
        stage="discover",
        path=str(source.path),
    )
