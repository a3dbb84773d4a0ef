"""Content digests: sha256 of bytes and files, and stable bytes of JSON values to hash."""

from __future__ import annotations

import hashlib
import json
import os


def canonical_json(value) -> bytes:
    """Stable bytes of a JSON value (sorted keys, no spaces); NaN and inf are kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    """sha256 of a file's content, read in blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
