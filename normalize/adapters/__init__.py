"""Source adapters: one module (or package) per library format, registered by format name.

An adapter turns the files of one candidate into an `ArticulatedObject` in the source's own frame
(the "raw" object), raising `AssetError` with a stable code for anything it cannot read. To add a
format, write a module here with a class that has `format`, `discover(source)` and
`load(candidate)`, decorate it with `registry.register`, and import the module here.
"""

from __future__ import annotations

from normalize.adapters import mjcf, partnet_mobility, sdf, urdf  # each registers its adapter
from normalize.adapters.registry import ADAPTERS, Adapter
from normalize.discovery import Candidate, refuse_collisions
from normalize.paths import memoized_realpaths
from normalize.sources import SourceConfig

__all__ = ["Adapter", "discover", "get_adapter", "mjcf", "partnet_mobility", "sdf", "urdf"]


def get_adapter(format: str) -> Adapter:
    try:
        return ADAPTERS[format]
    except KeyError:
        raise ValueError(
            f"no adapter for format {format!r} (known: {', '.join(sorted(ADAPTERS))})"
        ) from None


def discover(source: SourceConfig) -> list[Candidate]:
    """Every candidate of a source, sorted by source_id (delegates to the format's adapter)."""
    with memoized_realpaths():  # thousands of candidates in a few folders
        candidates = get_adapter(source.format).discover(source)
    return refuse_collisions(sorted(candidates, key=lambda c: (c.source_id, str(c.path))))
