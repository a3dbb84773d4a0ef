"""File references: `model://` URIs, the file an `<include>` names, and every file an entry
includes (for discovery)."""

from __future__ import annotations

from pathlib import Path

from normalize.adapters.sdf.elements import _text
from normalize.errors import AssetError
from normalize.files import regular_status
from normalize.paths import confine, realpath, resolve_reference
from normalize.safe_xml import parse_xml, parse_xml_bytes, read_limited
from normalize.sources import SourceConfig


def model_uri_target(uri: str, referrer: Path, root: Path, package_roots=()) -> Path:
    """A `model://name/rest` URI resolved like Gazebo's model path, but only inside the source
    root: a folder called `name` in a configured package root or in a folder between the
    referring file and the root. Anything else is refused with ``path.remote``."""
    try:
        target = resolve_reference(
            "package://" + uri[len("model://") :],
            referrer=referrer,
            root=root,
            package_roots=package_roots,
        )
    except AssetError:
        target = None
    if target is None or not target.exists():
        raise AssetError(
            f"{uri!r} does not resolve to a file inside the source root (model:// URIs are "
            "looked up only there)",
            code="path.remote",
            stage="resolve",
            path=str(referrer),
            element=f"uri {uri}",
        )
    return target


def include_target(uri: str, referrer: Path, source: SourceConfig) -> Path:
    """The SDFormat file an <include> URI in `referrer` names: a file, or a model folder
    holding model.config (its <sdf> entry) or model.sdf."""
    root, package_roots = source.path, source.package_roots
    if uri.lower().startswith("model://"):
        target = model_uri_target(uri, referrer, root, package_roots)
    else:
        target = resolve_reference(uri, referrer=referrer, root=root, package_roots=package_roots)
    if target.is_dir():
        name = "model.sdf"
        config = target / "model.config"
        if config.is_file():
            xml = parse_xml(confine(config, root, referrer=str(referrer)), source.max_file_bytes)
            name = next((e.text.strip() for e in xml.iter("sdf") if e.text), name)
        target = confine(target / name, root, referrer=str(referrer))
    if not regular_status(target):
        raise AssetError(
            f"included model {uri!r} does not exist (looked for {target})",
            code="sdf.include_missing",
            stage="resolve",
            path=str(referrer),
            element=f"include {uri}",
        )
    return target


def _sdf_includes(path: Path, source: SourceConfig) -> list[Path]:
    """Files `path` includes, directly or through its includes (for discovery). Raises
    `sdf.include_cycle` when the includes lead back to `path`: such a file stays a candidate
    (and is rejected when loaded) instead of vanishing as "included" by its own cycle."""
    out: list[Path] = []
    stack = [path]
    entry = Path(realpath(path))
    while stack:
        current = stack.pop()
        data = read_limited(current, source.max_file_bytes)
        if b"include" not in data:
            continue  # a file without the word includes nothing: no need to parse it here
        xml = parse_xml_bytes(data, current)
        for include in xml.iter("include"):
            uri = _text(include, "uri")
            if not uri:
                continue
            try:
                target = include_target(uri, current, source)
            except AssetError:
                continue
            real = Path(realpath(target))
            if real == entry:
                raise AssetError(
                    f"include cycle back to {path.name}",
                    code="sdf.include_cycle",
                    stage="parse",
                    path=str(current),
                    element=f"include {uri}",
                )
            if real not in out:
                out.append(real)
                stack.append(target)
    return out
