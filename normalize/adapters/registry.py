"""The adapter registry: format name -> adapter instance, filled by `@register`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from normalize.discovery import Candidate
from normalize.sources import SourceConfig

if TYPE_CHECKING:
    from normalize.model import ArticulatedObject


class Adapter(Protocol):
    format: str

    def discover(self, source: SourceConfig) -> list[Candidate]:
        """Every candidate object of the source (any order; callers sort)."""

    def load(self, candidate: Candidate) -> ArticulatedObject:
        """The raw object of one candidate, in the source frame; raises AssetError."""

    def problems(self, candidate: Candidate) -> list:
        """Every independent problem (AssetError) of a candidate `load` refused, each with
        its file and line where known, found by reading on past each one (optional: an
        adapter without it reports the first problem only)."""


ADAPTERS: dict[str, Adapter] = {}


def register(cls):
    """Class decorator: instantiate and register an adapter under its `format`."""
    ADAPTERS[cls.format] = cls()
    return cls
