"""Bounds on the size of one object, checked as early as the format allows: before MuJoCo
compiles an MJCF (bodies and joints counted with `<replicate>` multiplied out), while SDFormat
includes are expanded (links, joints and include elements counted as they are added), and on
every object an adapter returns. A tiny file that expands into a huge model is refused with
`model.too_large` instead of taking the worker's time and memory. The link and joint bound is
the source's `max_links` (sources file; default MAX_LINKS); docs/limits.md lists every limit.
"""

from __future__ import annotations

import re

from normalize.errors import AssetError

MAX_LINKS = 1000  # links (MJCF bodies) and joints of one object; real objects have up to ~120
MAX_INCLUDES = 1000  # SDFormat <include> elements expanded for one object


def check_count(what: str, count: int, limit: int, path=None, stage: str = "parse") -> None:
    """Raise `model.too_large` when `count` of `what` exceeds `limit`."""
    if count > limit:
        raise AssetError(
            f"the model has more than {limit} {what} ({count} so far); the limit is the "
            "source's max_links (see docs/limits.md)",
            code="model.too_large",
            stage=stage,
            path=None if path is None else str(path),
        )


#: The largest magnitude of any number of an object once the source's scale is applied
#: (lengths times the scale, masses times its cube, inertias times its fifth power): positions
#: and sizes, limits, mesh scales, masses, inertias, mimic couplings, efforts and velocities.
#: Real objects stay below 1e4; a literal like 1e300 would overflow the metric.
MAX_MAGNITUDE = 1e9
#: The longest name (characters) of an object, link, joint or shape, and the longest path
#: component of a file an object names; longer ones are refused with `name.too_long`.
MAX_NAME_CHARS = 255
MAX_PATH_CHARS = 4096  # a whole file name an object refers to


def _numbers(obj):
    """(element, what, values, length dimension) of every number of an object that has a unit
    or a scale; the dimension is the power of the source's scale that the values take on."""
    for link in obj.links:
        element = f"link {link.name}"
        if link.inertial is not None:
            yield element, "mass", [link.inertial.mass], 3
            yield element, "centre of mass", link.inertial.com, 1
            yield element, "inertia", link.inertial.inertia, 5
        for geometry in (*link.visuals, *link.collisions):
            shape = f"{element} shape {geometry.name or geometry.filename or geometry.kind}"
            yield shape, "origin", geometry.origin[:3, 3], 1
            yield shape, "size", geometry.size, 1
            yield shape, "mesh scale", geometry.scale, 1
    for joint in obj.joints:
        element = f"joint {joint.name}"
        yield element, "origin", joint.origin[:3, 3], 1
        yield element, "limits", [joint.lower, joint.upper], 1 if joint.type == "prismatic" else 0
        yield element, "pitch", [joint.pitch], 1
        yield element, "effort and velocity", [joint.effort or 0.0, joint.velocity or 0.0], 0
        if joint.mimic is not None:
            yield element, "mimic coupling", [joint.mimic.multiplier, joint.mimic.offset], 0


def check_values(obj, path=None, scale: float = 1.0, limit: float = MAX_MAGNITUDE) -> None:
    """Raise `parse.out_of_range` for a finite number beyond `limit` once the source's `scale`
    is applied (a millimetre source's masses are 1e9 times its kilogram ones); infinite limits
    are the adapters' business: refused as `parse.infinite` or allowed where unbounded."""
    import numpy as np

    for element, what, values, dimension in _numbers(obj):
        values = np.asarray(values, dtype=float).ravel()
        finite = values[np.isfinite(values)]
        bound = limit / float(scale) ** dimension
        if finite.size and float(np.abs(finite).max()) > bound:
            worst = float(finite[np.argmax(np.abs(finite))])
            raise AssetError(
                f"{element}: {what} {worst:g} is beyond the plausible magnitude {bound:g} "
                f"({limit:g} after the source's scale {scale:g}; see docs/limits.md)",
                code="parse.out_of_range",
                stage="parse",
                path=None if path is None else str(path),
                element=element,
            )


def check_name(name: str | None, what: str, path=None, element: str | None = None) -> None:
    """Raise `name.too_long` for a name longer than MAX_NAME_CHARS."""
    if name is not None and len(name) > MAX_NAME_CHARS:
        raise AssetError(
            f"the {what} name is {len(name)} characters long ({name[:40]!r}...); the limit is "
            f"{MAX_NAME_CHARS} (see docs/limits.md)",
            code="name.too_long",
            stage="parse",
            path=None if path is None else str(path),
            element=element,
        )


def check_file_name(name: str, what: str, path=None, element: str | None = None) -> None:
    """Raise `name.too_long` for a file reference whose whole or any component is longer
    than a file system allows (MAX_PATH_CHARS, MAX_NAME_CHARS), before anything opens it."""
    if len(name) > MAX_PATH_CHARS or any(len(p) > MAX_NAME_CHARS for p in re.split(r"[/\\]", name)):
        raise AssetError(
            f"the {what} file name is too long ({len(name)} characters, {name[:40]!r}...); "
            f"the limits are {MAX_NAME_CHARS} per folder or file name and {MAX_PATH_CHARS} in "
            "all (see docs/limits.md)",
            code="name.too_long",
            stage="parse",
            path=None if path is None else str(path),
            element=element,
        )


def check_names(obj, path=None) -> None:
    """`check_name` on the object, its links, joints and shapes; `check_file_name` on meshes."""
    check_name(obj.name, "object", path)
    for link in obj.links:
        check_name(link.name, "link", path, f"link {link.name[:40]}")
        for geometry in (*link.visuals, *link.collisions):
            element = f"link {link.name}"
            check_name(geometry.name, "shape", path, element)
            if geometry.filename is not None:
                check_file_name(geometry.filename, "mesh", path, element)
    for joint in obj.joints:
        check_name(joint.name, "joint", path, f"joint {joint.name[:40]}")


#: The deepest chain of links of an object (links from the base): MuJoCo's XML reader refuses
#: an MJCF nesting its bodies deeper than about 500 elements, and real objects stay below 50
MAX_DEPTH = 250


def check_depth(obj, path=None, limit: int = MAX_DEPTH) -> None:
    """Raise `model.too_deep` when a chain of links from the base is longer than `limit`."""
    depth = {obj.root: 0}
    for joint in obj.joints_topological:
        depth[joint.child] = depth.get(joint.parent, 0) + 1
        if depth[joint.child] > limit:
            raise AssetError(
                f"link {joint.child} lies {depth[joint.child]} joints below the base, deeper "
                f"than the limit of {limit} (see docs/limits.md)",
                code="model.too_deep",
                stage="parse",
                path=None if path is None else str(path),
                element=f"joint {joint.name}",
            )
