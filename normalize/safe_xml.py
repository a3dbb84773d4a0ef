"""Hardened XML parsing for untrusted source files.

Entity expansion, DTD loading and network access are off; files above a size limit, files that are
not UTF-8 (or the encoding they declare), truncated or malformed XML all raise `AssetError` with a
stable `xml.*` code naming the file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from normalize import files, inputs
from normalize.changes import Change
from normalize.errors import AssetError

if TYPE_CHECKING:  # lxml is imported where a file is parsed
    from lxml import etree

MAX_XML_BYTES = 64 * 1024 * 1024
_EXTERNAL_ENTITY = re.compile(rb"<!ENTITY\s+(%\s*)?[^\s>]+\s+(SYSTEM|PUBLIC)\b")
_ENCODING_DECLARATION = re.compile(rb"<\?xml[^>]*encoding=")
_VERSION_DECLARATION = re.compile(rb"^(\s*<\?xml\s+version\s*=\s*)([\"'])([^\"']*)\2")


def _parser(recover: bool = False) -> etree.XMLParser:
    from lxml import etree

    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
        recover=recover,
    )


def _undeclared_prefixes(parser: etree.XMLParser) -> list[str] | None:
    """The messages of a parse that failed only for namespace prefixes used without their
    `xmlns:` declaration (`<drake:foo>`), None when anything else failed too."""
    errors = list(parser.error_log)
    if not errors or any(e.type_name != "NS_ERR_UNDEFINED_NAMESPACE" for e in errors):
        return None
    return sorted({e.message for e in errors})


def read_limited(path: Path, max_bytes: int = MAX_XML_BYTES) -> bytes:
    """The bytes of the regular file `path` (`normalize.files.read_regular`): directories,
    FIFOs and devices are refused, and so are files above `max_bytes`."""
    path = Path(path)
    inputs.record(path)
    try:
        return files.read_regular(path, max_bytes)
    except FileNotFoundError as exc:
        raise AssetError(
            f"cannot read file: {exc.strerror or exc}",
            code="file.unreadable",
            stage="parse",
            path=str(path),
        ) from exc


def _repair_version(data: bytes, path: str, changes: list[Change] | None) -> bytes:
    """A declaration claiming an XML version other than 1.0/1.1 (e.g. pybullet_data's
    `<?xml version="0.0"?>`) names no real format: read the file as XML 1.0, with a record."""
    match = _VERSION_DECLARATION.match(data)
    if not match or match.group(3) in (b"1.0", b"1.1"):
        return data
    if changes is not None:
        changes.append(
            Change(
                "xml.version_repaired",
                f"XML declaration claims version {match.group(3).decode(errors='replace')!r}, "
                "which does not exist; read as XML 1.0",
                element=path,
            )
        )
    return data[: match.start(3)] + b"1.0" + data[match.end(3) :]


def parse_xml_bytes(
    data: bytes, path: str | Path, changes: list[Change] | None = None
) -> etree._Element:
    """Parse XML bytes safely; `path` only names the file in errors. Fixes made on the way (a
    bogus version in the XML declaration) are appended to `changes`."""
    from lxml import etree

    path = str(path)
    if not data.strip():
        raise AssetError("file is empty", code="xml.empty", stage="parse", path=path)
    if b"<!ENTITY" in data:
        if _EXTERNAL_ENTITY.search(data):
            raise AssetError(
                "XML declares an external entity (SYSTEM/PUBLIC); it is never resolved",
                code="xml.external_entity",
                stage="parse",
                path=path,
            )
        raise AssetError(
            "XML declares entities; entity expansion is not allowed",
            code="xml.entity",
            stage="parse",
            path=path,
        )
    if not _ENCODING_DECLARATION.search(data[:256]):
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise AssetError(
                f"file is not valid UTF-8 (byte {exc.start}: {data[exc.start : exc.start + 1]!r})",
                code="xml.encoding",
                stage="parse",
                path=path,
            ) from exc
    data = _repair_version(data, path, changes)
    parser = _parser()
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        undeclared = _undeclared_prefixes(parser)  # this parse's errors only
        if undeclared is None:
            raise _malformed(data, exc, path) from exc
        # As Drake and libsdformat read such files: the elements keep their prefixed names,
        # which no reader here knows, so they are ignored like any unknown element.
        root = etree.fromstring(data, _parser(recover=True))
        if changes is not None:
            changes.append(
                Change(
                    "xml.undeclared_prefix",
                    "namespace prefixes used without their xmlns declaration, read as plain "
                    f"names: {'; '.join(undeclared)}",
                    element=f"file {Path(path).name}",
                )
            )
    except ValueError as exc:
        raise AssetError(
            f"XML cannot be parsed: {exc}", code="xml.malformed", stage="parse", path=path
        ) from exc
    if root is None:
        raise AssetError("file holds no XML element", code="xml.empty", stage="parse", path=path)
    return root


def _malformed(data: bytes, exc: etree.XMLSyntaxError, path: str) -> AssetError:
    message = str(exc)
    code = "xml.truncated" if _fails_at_end(data, exc) else "xml.malformed"
    line = exc.lineno or None  # lxml's line of the error (0 when unknown)
    return AssetError(
        f"XML is not well-formed: {message}", code=code, stage="parse", path=path, line=line
    )


def _fails_at_end(data: bytes, exc: etree.XMLSyntaxError) -> bool:
    """Whether the parser ran out of input (a truncated file) rather than met a bad construct."""
    message = str(exc).lower()
    if "premature end" in message:
        return True
    if "mismatch" in message or "extra content" in message:  # complete, but wrongly built
        return False
    lines = data.rstrip().split(b"\n")
    line, column = exc.position
    return line >= len(lines) and column >= len(lines[-1].decode("utf-8", "replace"))


def parse_xml(
    path: Path, max_bytes: int = MAX_XML_BYTES, changes: list[Change] | None = None
) -> etree._Element:
    """Read and parse one XML file with every protection on."""
    return parse_xml_bytes(read_limited(path, max_bytes), path, changes)
