"""What the normalizer did to an asset. Every change is recorded per object, never silent."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Change:
    """code: stable dotted id (e.g. ``axis.normalized``); message: what and why, for people;
    element: the link, joint or file it concerns."""

    code: str
    message: str
    element: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)
