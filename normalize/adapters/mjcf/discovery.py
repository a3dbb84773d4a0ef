"""Discovery: entry files of formats whose files include each other (MJCF, SDF), minus the
files another entry includes."""

from __future__ import annotations

from pathlib import Path

from normalize.adapters.mjcf.scan import scan_mjcf
from normalize.discovery import Candidate, discover_entries
from normalize.errors import AssetError
from normalize.paths import is_inside, realpath
from normalize.sources import SourceConfig


def discover_xml_entries(source: SourceConfig, pattern: str, included_by) -> list[Candidate]:
    """Candidates for formats whose entry files can include each other (MJCF, SDF): every file
    matching `source.entry` (else `pattern`) that the source selects, minus the files another
    matching file includes. `included_by(path)` lists the files `path` includes (may raise
    AssetError: such a file is still a candidate, rejected when loaded)."""
    root = source.path
    files, refused = discover_entries(source, pattern)
    included: set[Path] = set()
    for path in files:
        if not path.is_file() or not is_inside(path, root):
            continue  # refused when loaded; never read outside the root
        try:
            included.update(Path(realpath(p)) for p in included_by(path))
        except AssetError:
            continue
    return refused + [
        Candidate(source, p.relative_to(root).with_suffix("").as_posix(), p)
        for p in files
        if Path(realpath(p)) not in included
    ]


def _mjcf_includes(path: Path, source: SourceConfig) -> list[Path]:
    """Files `path` includes, directly or through its includes (for discovery; an include that
    leaves the root or exceeds the source's size limit raises AssetError and is never read)."""
    scan = scan_mjcf(path, source.path, max_bytes=source.max_file_bytes, assets=False)
    return [p for p in scan.files if p != path]
