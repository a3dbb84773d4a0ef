"""Discovery: the candidates (objects) a source offers, found without reading them.

`list_source` walks a source root losing nothing (unreadable folders and symlinks leaving the
root become refused candidates); `discover_entries` matches the source's entry glob; adapters
build their candidates from it (`normalize.adapters.discover` runs the format's adapter), and
`refuse_collisions` refuses candidates sharing an object id. `make_object_id` names an object
for the whole release; `skipped_files` reports the files that look like entries but are none.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from normalize.errors import AssetError
from normalize.paths import is_inside
from normalize.sources import ID_SEPARATOR, SourceConfig


@dataclass(frozen=True)
class Candidate:
    """One object a source offers: an entry file, or an object folder for PartNet-Mobility.

    source_id: the path of the entry (file without suffix, or folder) relative to the source
    root, '/'-separated; object_id: the release-wide id derived from it.
    """

    source: SourceConfig
    source_id: str
    path: Path
    # Set by discovery for a candidate it refuses before loading (an id collision, a folder
    # it cannot read): (code, message), and the id it gets instead of its own.
    refusal: tuple[str, str] | None = None
    refused_id: str | None = None

    @property
    def object_id(self) -> str:
        if self.refused_id is not None:
            return self.refused_id
        return make_object_id(self.source.name, self.source_id)

    @property
    def source_path(self) -> str:
        """The entry path relative to the source root."""
        return self.path.relative_to(self.source.path).as_posix()


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_HASH_SUFFIX = re.compile(r"-[0-9a-f]{8}$")
#: An object id names a folder: file systems allow 255 bytes a name, so a longer id is cut to
#: this length, its last 9 characters the hash suffix (ids are ASCII)
MAX_ID_LENGTH = 200


def make_object_id(source_name: str, source_id: str) -> str:
    """Readable, stable and unique: `<source>__<source_id>` with '/' as '__'.

    Unique by construction: a source name holds no '__' and does not end with '_'
    (`load_sources` refuses it), so the first '__' ends the source name; a part kept as it is
    holds no '__' and neither starts nor ends with '_', so splitting at '__' gives the parts
    back. Any other id (characters replaced, such parts, or an id that ends like a hash
    suffix) gets `-<8 hex digits of sha256(source_id)>`, which an id without a hash never
    ends with. An id longer than MAX_ID_LENGTH is cut to it, ending with that suffix. Two ids
    can then only meet by a hash collision, which discovery refuses (`id.collision`)."""
    parts = source_id.split("/")
    cleaned = [_UNSAFE.sub("-", p).strip("-.") or "_" for p in parts]
    object_id = ID_SEPARATOR.join([source_name, *cleaned])
    ambiguous = any(
        ID_SEPARATOR in p or p.startswith("_") or p.endswith("_") for p in parts
    ) or _HASH_SUFFIX.search(object_id)
    too_long = len(object_id) > MAX_ID_LENGTH
    if cleaned != parts or ambiguous or too_long:
        kept = object_id[: MAX_ID_LENGTH - 9] if too_long else object_id
        object_id = kept + "-" + hashlib.sha256(source_id.encode()).hexdigest()[:8]
    return object_id


@dataclass
class Listing:
    """What discovery found below a source root: every folder walked with the names in it,
    and the candidates refused without reading them (a folder that cannot be listed:
    `file.unreadable`; a symlinked folder leading out of the root: `path.symlink_escape`)."""

    folders: list[tuple[Path, list[str], list[str]]]  # (folder, sub-folder names, other names)
    refused: list[Candidate]


def list_source(source: SourceConfig) -> Listing:
    """Walk the source root, sorted, losing nothing: a sub-folder that cannot be listed and a
    symlinked folder leading out of the root become refused candidates (counted as rejected).
    A symlinked folder inside the root is not followed: the folder it leads to is walked once,
    under its own path, so no object is found twice and a symlink loop cannot recurse."""
    root = source.path
    listing = Listing([], [])

    def refuse(folder: Path, code: str, message: str) -> None:
        relative = folder.relative_to(root).as_posix()
        if any(fnmatch.fnmatchcase(relative, g) for g in source.exclude):
            return  # excluded on purpose (its entries are unknown: include globs cannot tell)
        digest = hashlib.sha256(f"{relative}/".encode()).hexdigest()[:8]
        listing.refused.append(
            Candidate(
                source,
                relative,
                folder,
                refusal=(code, message),
                refused_id=f"{make_object_id(source.name, relative)}-{digest}",
            )
        )

    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            if folder == root:
                raise source_unreadable(source, exc) from exc
            refuse(folder, "file.unreadable", f"folder cannot be listed: {exc.strerror or exc}")
            continue
        dirs, names = [], []
        for entry in entries:
            try:
                is_dir = entry.is_dir()  # follows a symlink
            except OSError:
                is_dir = False
            if is_dir and entry.is_symlink():
                path = Path(entry.path)
                if not is_inside(path, root):
                    refuse(path, "path.symlink_escape", "a symlinked folder leads out of the root")
                continue  # inside the root: walked under its own path
            (dirs if is_dir else names).append(entry.name)
        listing.folders.append((folder, dirs, names))
        stack.extend(folder / d for d in reversed(dirs))
    return listing


def _glob_match(parts: list[str], pattern: list[str]) -> bool:
    """Whether path components match glob components as pathlib's glob does ('**': any number
    of folders; other components: fnmatch within one name, case-sensitive)."""
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return any(_glob_match(parts[i:], pattern[1:]) for i in range(len(parts) + 1))
    return (
        bool(parts)
        and fnmatch.fnmatchcase(parts[0], pattern[0])
        and _glob_match(parts[1:], pattern[1:])
    )


def discover_entries(source: SourceConfig, pattern: str) -> tuple[list[Path], list[Candidate]]:
    """(every path matching the source's `entry` glob (else `pattern`) that the source selects,
    sorted; the candidates refused while listing, see `list_source`). Nothing is filtered by
    type: a directory named like an entry file or a symlink that leaves the root is still a
    candidate, refused with its own code when loaded."""
    listing = list_source(source)
    glob_parts = [p for p in (source.entry or pattern).split("/") if p not in ("", ".")]
    found = []
    for folder, dirs, names in listing.folders:
        base = folder.relative_to(source.path).parts
        for name in (*dirs, *names):
            if _glob_match([*base, name], glob_parts):
                found.append(folder / name)
    paths = sorted(found)
    return [p for p in paths if source.selects(p.relative_to(source.path).as_posix())], list(
        listing.refused
    )


def refuse_collisions(candidates: list[Candidate]) -> list[Candidate]:
    """Candidates sharing an object_id (a PartNet-Mobility root and a sub-folder of the same
    name, an entry glob matching `a.urdf` and `a.xml`, a hash collision) are all refused with
    `id.collision`, each under its id plus a hash of its entry path: no object silently
    replaces another, and the build goes on."""
    by_id: dict[str, list[Candidate]] = {}
    for c in candidates:
        by_id.setdefault(c.object_id, []).append(c)
    out = []
    for c in candidates:
        group = by_id[c.object_id]
        if len(group) == 1:
            out.append(c)
            continue
        others = ", ".join(o.source_path for o in group if o is not c)
        digest = hashlib.sha256(c.source_path.encode()).hexdigest()[:8]
        out.append(
            replace(
                c,
                refusal=("id.collision", f"object id {c.object_id} is also that of {others}"),
                refused_id=f"{c.object_id}-{digest}",
            )
        )
    return out


# File suffixes that look like the entry of a format: a file with one of these that discovery
# did not take is reported as skipped (`skipped_files`).
ENTRY_SUFFIXES = {".urdf": "urdf", ".xml": "mjcf", ".mjcf": "mjcf", ".sdf": "sdf", ".world": "sdf"}
SKIP_EXAMPLES = 5
SKIP_REASONS = {
    "other_format": "the suffix of another format's entry files",
    "not_selected": "left out by the source's entry, include or exclude patterns",
    "not_an_entry": "of this format but not an entry (included by another file, or unused)",
    "symlinked_folder": "a symbolic link to a folder inside the root, discovered under the "
    "folder's own path (so never twice)",
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
        for name in dirs:  # os.walk lists symlinked folders without entering them
            path = folder / name
            if path.is_symlink() and is_inside(path, source.path):
                relative = path.relative_to(source.path).as_posix()
                found.setdefault("symlinked_folder", []).append(relative)
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
