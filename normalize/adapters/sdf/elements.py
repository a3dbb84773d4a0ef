"""SDFormat element access (child elements, their text, `::`-scoped names) and the reader's
numbers, vectors and errors."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from normalize.errors import AssetError

_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_NON_FINITE = re.compile(r"^[+-]?(nan|inf|infinity)$", re.IGNORECASE)


def _child(node, tag):
    return next((c for c in node if c.tag == tag), None)


def _children(node, tag):
    return [c for c in node if c.tag == tag]


def _text(node, tag, default=None):
    child = _child(node, tag)
    if child is None or child.text is None or not child.text.strip():
        return default
    return child.text.strip()


def _scoped(scope: str, name: str) -> str:
    return f"{scope}::{name}" if scope else name


class _Values:
    """The reader's errors and numbers (a base of `_SdfReader`)."""

    def error(self, message, code, element=None, path=None, stage="parse"):
        return AssetError(
            message, code=code, stage=stage, path=str(path or self.entry), element=element
        )

    def number(self, text: str, what: str, element: str, path: Path) -> float:
        token = text.strip()
        if _NUMBER.match(token):
            return float(token)
        if _NON_FINITE.match(token):
            if math.isinf(float(token)):
                return float(token)
            raise self.error(f"{what} is NaN", "parse.nan", element, path)
        raise self.error(f"{what} {token!r} is not a number", "parse.number", element, path)

    def vector(self, text, n: int, what: str, element: str, path: Path) -> np.ndarray:
        values = [self.number(t, what, element, path) for t in (text or "").split()]
        if len(values) != n:
            raise self.error(
                f"{what} {text!r} has {len(values)} numbers, expected {n}",
                "parse.vector",
                element,
                path,
            )
        if not np.all(np.isfinite(values)):
            raise self.error(f"{what} {text!r} is not finite", "parse.infinite", element, path)
        return np.array(values, dtype=float)

    def scalar(self, node, tag, default, element, path) -> float:
        text = _text(node, tag)
        return default if text is None else self.number(text, f"<{tag}>", element, path)
