"""Source adapters: one module (or package) per library format, registered by format name.

An adapter turns the files of one candidate into an `ArticulatedObject` in the source's own frame
(the "raw" object), raising `AssetError` with a stable code for anything it cannot read. To add a
format, write a module here with a class that has `format`, `discover(source)` and
`load(candidate)` (and optionally `problems(candidate)`, every problem of a refused candidate,
for `arena validate`), decorate it with `registry.register`, and import the module in
`_import_adapter`.
A format's module is imported when the format is first asked for: the readers import numpy and
the mesh code, which listing a PartNet-Mobility or URDF library does not need.
"""

from __future__ import annotations

from normalize.adapters.registry import ADAPTERS, Adapter
from normalize.discovery import Candidate, refuse_collisions
from normalize.paths import memoized_realpaths
from normalize.sources import SourceConfig

__all__ = ["FORMATS", "Adapter", "discover", "get_adapter"]
FORMATS = ("mjcf", "partnet_mobility", "sdf", "urdf")


def _import_adapter(format: str) -> None:
    """Import the module of `format`'s adapter, which registers it."""
    if format == "mjcf":
        from normalize.adapters import mjcf  # noqa: F401
    elif format == "partnet_mobility":
        from normalize.adapters import partnet_mobility  # noqa: F401
    elif format == "sdf":
        from normalize.adapters import sdf  # noqa: F401
    elif format == "urdf":
        from normalize.adapters import urdf  # noqa: F401


def get_adapter(format: str) -> Adapter:
    if format not in ADAPTERS:
        _import_adapter(format)
    try:
        return ADAPTERS[format]
    except KeyError:
        raise ValueError(
            f"no adapter for format {format!r} (known: {', '.join(FORMATS)})"
        ) from None


def discover(source: SourceConfig) -> list[Candidate]:
    """Every candidate of a source, sorted by source_id (delegates to the format's adapter)."""
    with memoized_realpaths():  # thousands of candidates in a few folders
        candidates = get_adapter(source.format).discover(source)
    return refuse_collisions(sorted(candidates, key=lambda c: (c.source_id, str(c.path))))
