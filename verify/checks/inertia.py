"""Mass properties of the normalized object, as read back from its URDF.

Every inertial present must have mass > 0 and an inertia tensor that is symmetric (within 1e-9
of its largest entry), positive definite and obeys the triangle inequality on its principal
moments (I1 + I2 >= I3, within a relative 1e-9). A moving link without any inertial is a warning
(`inertia.missing`): the kinetic norm and simulators need a mass; intermediate frame links (no
shapes, joints below them, as multi-DOF decompositions make) are massless by design and exempt.
`inertia.origin` (info) says where the inertials came from (`Inertial.method` of the written
object: source, mesh_volume, mesh_convex_hull, box_formula, merged sums, ...).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from verify.checks import Context, aggregate, flagged, single
from verify.report import CheckResult

SYMMETRY_TOLERANCE = 1e-9
TRIANGLE_TOLERANCE = 1e-9


def run(ctx: Context) -> list[CheckResult]:
    obj = ctx.reread
    with_inertial = [link for link in obj.links if link.inertial is not None]
    out: list[CheckResult] = []

    out += aggregate(
        "inertia.mass_positive",
        "error",
        [(f"link {link.name}", link.inertial.mass) for link in with_inertial],
        0.0,
        ok=lambda v, t: v > t,
        describe=lambda e, v: f"{e}: mass {v:g} is not positive",
        passed_message=f"{len(with_inertial)} inertial(s), every mass > 0 (value: the smallest)",
        worst=min,
    )

    asymmetry, smallest, triangle = [], [], []
    for link in with_inertial:
        element = f"link {link.name}"
        tensor = link.inertial.inertia
        scale = float(np.abs(tensor).max()) or 1.0
        asymmetry.append((element, float(np.abs(tensor - tensor.T).max()) / scale))
        eig = np.linalg.eigvalsh(0.5 * (tensor + tensor.T))
        smallest.append((element, float(eig[0])))
        if eig[2] > 0:
            triangle.append((element, float((eig[0] + eig[1] - eig[2]) / eig[2])))
    out += aggregate(
        "inertia.symmetric",
        "error",
        asymmetry,
        SYMMETRY_TOLERANCE,
        ok=lambda v, t: v <= t,
        describe=lambda e, v: f"{e}: inertia tensor is not symmetric (relative {v:.3g})",
        passed_message="every inertia tensor is symmetric (value: the largest relative asymmetry)",
    )
    out += aggregate(
        "inertia.positive_definite",
        "error",
        smallest,
        0.0,
        ok=lambda v, t: v > t,
        describe=lambda e, v: (
            f"{e}: inertia tensor is not positive definite (smallest principal moment {v:.3g})"
        ),
        passed_message="every inertia tensor is positive definite (value: the smallest "
        "principal moment)",
        worst=min,
    )
    out += aggregate(
        "inertia.triangle_inequality",
        "error",
        triangle,
        -TRIANGLE_TOLERANCE,
        ok=lambda v, t: v >= t,
        describe=lambda e, v: (
            f"{e}: principal moments violate I1 + I2 >= I3 ((I1 + I2 - I3) / I3 = {v:.3g})"
        ),
        passed_message="every inertia tensor obeys the triangle inequality (value: the smallest "
        "(I1 + I2 - I3) / I3)",
        worst=min,
    )

    moving_children = {j.child for j in obj.joints if j.moving}
    parents = {j.parent for j in obj.joints}
    out += flagged(
        "inertia.missing",
        "warning",
        [
            f"link {link.name}"
            for link in obj.links
            if link.inertial is None
            and link.name in moving_children
            and not _frame_link(link, parents)
        ],
        problem="a moving link without mass (no valid source inertial and no shape enclosing "
        "volume)",
        passed_message="every moving link has an inertial",
    )

    methods: Counter = Counter()
    written = ctx.result.object.link_map
    for link in obj.links:
        inertial = written[link.name].inertial if link.name in written else link.inertial
        methods[inertial.method if inertial is not None else "none"] += 1
    summary = ", ".join(f"{method}: {count}" for method, count in sorted(methods.items()))
    out.append(
        single("inertia.origin", "info", True, f"inertials per link: {summary}", value=summary)
    )
    return out


def _frame_link(link, parents: set[str]) -> bool:
    """An intermediate frame (no shapes, joints below it), as multi-DOF decompositions make:
    massless by design."""
    return not (link.visuals or link.collisions) and link.name in parents
