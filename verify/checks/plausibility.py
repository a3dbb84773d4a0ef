"""Plausibility, with no second reader (every format): the shipped object is plausible for
what it is.

- fidelity.visual_collision: per link with both, the visual and collision boxes agree within a
  factor (an inch mesh next to a metre collision box differs by 39).
- fidelity.size: the largest extent lies in the size range the taxonomy gives the object's
  category (or supercategory).
- fidelity.density: total mass over the rest-pose box volume, when every link's mass is declared
  by the source, lies in DENSITY_RANGE.
- fidelity.computed_density: when the pipeline computed any link's mass from its shapes, the
  total mass over the rest-pose box volume lies in the category's plausible range (the
  taxonomy's `density`); outside it the object goes to review with the figures.

A failed check sends the object to review; a factor or range check more than GROSS times
outside its bound refuses it (`factor_result`).
"""

from __future__ import annotations

import math

import numpy as np

from verify.checks import Context, single
from verify.checks.shape_points import _box, shapes_points
from verify.report import CheckResult

GROSS = 10.0
VISUAL_COLLISION_FACTOR = 3.0
DENSITY_RANGE = (0.1, 30_000.0)  # kg/m^3 of the rest-pose bounding box


def _factor_result(check_id, element, factor: float, bound: float, message: str) -> CheckResult:
    """A failed factor check: a warning, an error when the factor is over GROSS."""
    severity = "error" if factor > GROSS else "warning"
    return single(
        check_id, severity, False, message, value=factor, threshold=bound, element=element
    )


def _link_box(link, shapes, meshes) -> np.ndarray | None:
    points = shapes_points(shapes, meshes)
    return None if points is None else _box(points)


def visual_collision(ctx: Context) -> list[CheckResult]:
    meshes = ctx.notes.get("meshes", {})
    rows, out = [], []
    for link in ctx.reread.links:
        if not link.visuals or not link.collisions:
            continue
        visual = _link_box(link, link.visuals, meshes)
        collision = _link_box(link, link.collisions, meshes)
        if visual is None or collision is None:
            continue
        a, b = (
            float(np.linalg.norm(np.ptp(visual, axis=0))),
            float(np.linalg.norm(np.ptp(collision, axis=0))),
        )
        if min(a, b) <= 0:
            continue
        factor = max(a, b) / min(a, b)
        rows.append((f"link {link.name}", factor, a, b))
    for element, factor, a, b in rows:
        if factor > VISUAL_COLLISION_FACTOR:
            out.append(
                _factor_result(
                    "fidelity.visual_collision",
                    element,
                    factor,
                    VISUAL_COLLISION_FACTOR,
                    f"{element}: its visual box (diagonal {a:.4g} m) and collision box ({b:.4g} m) "
                    f"differ by a factor {factor:.3g} (a unit error? tolerance "
                    f"{VISUAL_COLLISION_FACTOR:g}, refused over {GROSS:g})",
                )
            )
    if out:
        return out
    worst = max(rows, key=lambda r: r[1], default=None)
    return [
        single(
            "fidelity.visual_collision",
            "warning",
            True,
            f"{len(rows)} link(s) with both visuals and collisions, their boxes within a factor "
            f"{VISUAL_COLLISION_FACTOR:g}",
            value=None if worst is None else worst[1],
            threshold=VISUAL_COLLISION_FACTOR,
            element=None if worst is None else worst[0],
        )
    ]


def _category(ctx: Context):
    """The caller's assignment, else the object categorized here (`arena validate`)."""
    if ctx.assignment is not None:
        return ctx.assignment
    import taxonomy

    candidate = ctx.result.candidate
    return taxonomy.categorize(
        ctx.result.object,
        object_id=candidate.object_id,
        source_id=candidate.source_id,
        source_overrides=ctx.source.overrides,
    )


def size_and_density(ctx: Context) -> list[CheckResult]:
    import taxonomy

    extent = ctx.notes.get("extent")
    if extent is None:
        return [single("fidelity.size", "warning", True, "not measured: no finite geometry")]
    assignment = _category(ctx)
    tax = taxonomy.load_taxonomy()
    size = tax.size_range(assignment.category)
    out = []
    if size is None:
        out.append(
            single(
                "fidelity.size",
                "warning",
                True,
                f"no size range for category {assignment.category}",
                value=extent,
            )
        )
    else:
        low, high = size
        factor = max(low / extent, extent / high)
        message = (
            f"largest extent {extent:.4g} m for category {assignment.category} "
            f"({assignment.supercategory}), whose size range is [{low:g}, {high:g}] m"
        )
        if factor > 1.0:
            out.append(
                _factor_result(
                    "fidelity.size",
                    f"robot {ctx.reread.name}",
                    factor,
                    1.0,
                    f"{message}: {factor:.3g} times outside it (refused over {GROSS:g})",
                )
            )
        else:
            out.append(
                single("fidelity.size", "warning", True, message, value=factor, threshold=1.0)
            )
    out.append(_density(ctx))
    out.append(_computed_density(ctx, assignment, tax))
    return out


def _mass_computed(inertial) -> bool:
    """Whether the pipeline computed this inertial's mass from shapes (it did not for a source
    inertial, nor for a declared mass with a computed tensor, `source_mass+...`)."""
    method = inertial.method or ""
    return not method.startswith("source_mass+") and any(
        part != "source" for part in method.split("+")
    )


def _computed_density(ctx: Context, assignment, tax) -> CheckResult:
    """The computed masses against the category's plausible effective density: outside it, the
    object goes to review with the figures (never refused: the mass is ours, not the source's)."""
    computed = [
        link
        for link in ctx.result.object.links
        if link.inertial is not None and _mass_computed(link.inertial)
    ]
    low, high = ctx.notes.get("box", (None, None))
    plausible = tax.density_range(assignment.category)
    if not computed or low is None or plausible is None:
        why = "no mass was computed from shapes" if not computed else "no box or no range"
        return single("fidelity.computed_density", "warning", True, f"not measured: {why}")
    volume = float(np.prod(np.maximum(high - low, 1e-3)))
    mass = sum(link.inertial.mass for link in ctx.reread.links if link.inertial is not None)
    density = mass / volume
    lo, hi = plausible
    models = ", ".join(sorted({link.inertial.method for link in computed}))
    message = (
        f"{len(computed)} computed link mass(es) ({models}): {mass:.4g} kg in a {volume:.4g} m^3 "
        f"rest-pose box, {density:.4g} kg/m^3, for {assignment.category} "
        f"({assignment.supercategory}) plausible [{lo:g}, {hi:g}]"
    )
    factor = max(lo / density, density / hi) if density > 0 else math.inf
    if factor > 1.0:
        return single(
            "fidelity.computed_density",
            "warning",
            False,
            f"{message}: {factor:.3g} times outside it",
            value=factor,
            threshold=1.0,
            element=f"robot {ctx.reread.name}",
        )
    return single(
        "fidelity.computed_density", "warning", True, message, value=factor, threshold=1.0
    )


def _density(ctx: Context) -> CheckResult:
    memory = ctx.result.object
    declared = [
        link.inertial is not None and link.inertial.method == "source" for link in memory.links
    ]
    low, high = ctx.notes.get("box", (None, None))
    if not all(declared) or low is None:
        return single(
            "fidelity.density",
            "warning",
            True,
            "not measured: not every link's mass is declared by the source",
        )
    volume = float(np.prod(np.maximum(high - low, 1e-3)))
    mass = sum(link.inertial.mass for link in ctx.reread.links if link.inertial is not None)
    density = mass / volume
    lo, hi = DENSITY_RANGE
    factor = max(lo / density, density / hi) if density > 0 else math.inf
    message = (
        f"total mass {mass:.4g} kg in a {volume:.4g} m^3 rest-pose box: {density:.4g} kg/m^3 "
        f"(plausible: [{lo:g}, {hi:g}])"
    )
    if factor > 1.0:
        return _factor_result(
            "fidelity.density",
            f"robot {ctx.reread.name}",
            factor,
            1.0,
            f"{message}, {factor:.3g} times outside (refused over {GROSS:g})",
        )
    return single("fidelity.density", "warning", True, message, value=density)
