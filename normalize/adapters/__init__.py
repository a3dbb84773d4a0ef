"""Source adapters: one module per library format, registered by format name.

An adapter turns the files of one candidate into an `ArticulatedObject` in the source's own frame
(the "raw" object), raising `AssetError` with a stable code for anything it cannot read. To add a
format, write a module here with a class that has `format`, `discover(source)` and
`load(candidate)`, decorate it with `registry.register`, and import the module here.
"""

from __future__ import annotations

from normalize.adapters import mjcf, partnet_mobility, sdf, urdf  # each registers its adapter
from normalize.adapters.registry import ADAPTERS, Adapter

__all__ = ["Adapter", "get_adapter", "mjcf", "partnet_mobility", "sdf", "urdf"]


def get_adapter(format: str) -> Adapter:
    try:
        return ADAPTERS[format]
    except KeyError:
        raise ValueError(
            f"no adapter for format {format!r} (known: {', '.join(sorted(ADAPTERS))})"
        ) from None
