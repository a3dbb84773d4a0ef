"""Adapter for plain URDF libraries (format `urdf`).

Discovery: every file matching the source's `entry` glob (default `**/*.urdf`, and `**/*.xml`
files whose root element is `<robot>`) below the root and selected by include/exclude is one
candidate; its source_id is the path relative to the
root without the suffix (a folder with three URDF variants gives three objects).
Loading: `normalize.urdf.read_urdf` confined to the source root, `package://` resolved against
the configured package roots and by walking up to the root. The fixes made while reading are
returned in `object.source.changes`; `labels["robot_name"]` is the <robot> name and
`labels["folder"]` the entry's folder relative to the root.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from normalize.adapters.registry import register
from normalize.discovery import Candidate, discover_entries
from normalize.errors import AssetError
from normalize.files import xml_root
from normalize.paths import confine, is_inside
from normalize.sources import SourceConfig

if TYPE_CHECKING:
    from normalize.model import ArticulatedObject

DEFAULT_ENTRY = "**/*.urdf"
XML_ENTRY = "**/*.xml"  # taken when the file's root element is <robot>


def load_urdf_candidate(candidate: Candidate, entry: Path, labels: dict) -> ArticulatedObject:
    """Read `entry` for `candidate` with the source's settings; the raw object carries the
    source information, `labels` plus robot_name, and the reading changes in
    `source.changes`."""
    from normalize.model import SourceInfo

    source = candidate.source
    changes: list = []
    obj = _read(candidate, entry, changes)
    info = SourceInfo(
        library=source.name,
        source_id=candidate.source_id,
        source_path=candidate.source_path,
        license=source.license,
        labels={**labels, "robot_name": obj.source.labels.get("robot_name")},
        changes=tuple(changes),
    )
    return obj.replace(source=info)


def urdf_problems(candidate: Candidate, entry: Path) -> list[AssetError]:
    """Every independent problem of `entry` read for `candidate` (`read_urdf`'s `problems`);
    a file that cannot be read at all is its one problem."""
    problems: list[AssetError] = []
    try:
        _read(candidate, entry, [], problems)
    except AssetError as exc:
        problems.append(exc)
    return problems


def _read(candidate: Candidate, entry: Path, changes: list, problems=None):
    from normalize.urdf import read_urdf

    source = candidate.source
    confine(entry, source.path)
    allowance = source.allowance("limits.reversed", candidate.source_id)
    return read_urdf(
        entry,
        root=source.path,
        package_roots=source.package_roots,
        max_bytes=source.max_file_bytes,
        changes=changes,
        allow_reversed_limits=allowance is not None,
        infinite_limits=True,  # unbounded prismatic joints, as the convention writes them
        problems=problems,
    )


@register
class UrdfAdapter:
    format = "urdf"

    def discover(self, source: SourceConfig) -> list[Candidate]:
        paths, refused = discover_entries(source, DEFAULT_ENTRY)
        if source.entry is None:  # a URDF may be named .xml: its root element says so
            named_xml, _ = discover_entries(source, XML_ENTRY)
            inside = [p for p in named_xml if is_inside(p, source.path)]  # nothing else is read
            paths += [p for p in inside if xml_root(p) == "robot"]
        return refused + [
            Candidate(source, path.relative_to(source.path).with_suffix("").as_posix(), path)
            for path in paths
        ]

    def load(self, candidate: Candidate) -> ArticulatedObject:
        folder = candidate.path.parent.relative_to(candidate.source.path).as_posix()
        return load_urdf_candidate(candidate, candidate.path, {"folder": folder})

    def problems(self, candidate: Candidate) -> list[AssetError]:
        return urdf_problems(candidate, candidate.path)
