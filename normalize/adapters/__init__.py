"""Source adapters: one module per library format, registered by format name.

An adapter turns the files of one candidate into an `ArticulatedObject` in the source's own frame
(the "raw" object), raising `AssetError` with a stable code for anything it cannot read. To add a
format, write a module here with a class that has `format`, `discover(source)` and
`load(candidate)`, decorate it with `@register`, and import the module at the end of this file.
"""

from __future__ import annotations

from typing import Protocol

from normalize.model import ArticulatedObject
from normalize.sources import Candidate, SourceConfig


class Adapter(Protocol):
    format: str

    def discover(self, source: SourceConfig) -> list[Candidate]:
        """Every candidate object of the source (any order; callers sort)."""

    def load(self, candidate: Candidate) -> ArticulatedObject:
        """The raw object of one candidate, in the source frame; raises AssetError."""


_ADAPTERS: dict[str, Adapter] = {}


def register(cls):
    """Class decorator: instantiate and register an adapter under its `format`."""
    _ADAPTERS[cls.format] = cls()
    return cls


def get_adapter(format: str) -> Adapter:
    try:
        return _ADAPTERS[format]
    except KeyError:
        raise ValueError(
            f"no adapter for format {format!r} (known: {', '.join(sorted(_ADAPTERS))})"
        ) from None


# Format modules register themselves on import (keep these imports last).
from normalize.adapters import (  # noqa: E402, F401
    mjcf,
    partnet_mobility,
    sdf,
    urdf,
)
