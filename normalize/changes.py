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


#: The change code of a shape that has a surface but no equivalent in the model (a MuJoCo
#: height field, an SDF heightmap...): verification warns with the count, and sends the object
#: to review when such shapes are a large share of its surface (`verify.checks.geometry`).
SHAPE_DROPPED = "geometry.shape_dropped"


def box_surface(extent) -> float | None:
    """Surface area of a box of `extent` (x, y, z), the yardstick for a shape's share of an
    object's surface; None when the extent is unknown or not finite."""
    if extent is None:
        return None
    x, y, z = (float(v) for v in extent)
    area = 2.0 * (x * y + y * z + x * z)
    return area if area == area and area != float("inf") else None


def shape_dropped(kind: str, element: str, why: str, extent=None) -> tuple[Change, dict]:
    """(the `geometry.shape_dropped` change, the record for `extra["dropped_shapes"]`) of a
    shape that cannot be converted; `extent`: its box (x, y, z) in the link frame, if known."""
    area = box_surface(extent)
    size = "" if extent is None else " (box " + " x ".join(f"{float(v):.4g}" for v in extent) + ")"
    change = Change(SHAPE_DROPPED, f"{kind} shape{size} dropped: {why}", element=element)
    return change, {"element": element, "kind": kind, "area": area}
