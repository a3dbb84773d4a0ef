"""Structure of the normalized object as read back from its URDF file.

The canonical model refuses most structural faults at construction (and normalization turns them
into rejections with `model.*` codes), so on an object that was read back these checks pass;
they are recomputed here from the links and joints themselves, independently of the model's own
validation, so that the report states each property and its measured value.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from normalize.errors import AssetError
from normalize.model import JOINT_TYPES
from normalize.urdf import read_object
from verify.checks import Context, aggregate, flagged, single
from verify.report import CheckResult

#: Largest accepted | |axis| - 1 | (the model's own tolerance).
AXIS_UNIT_TOLERANCE = 1e-9


def read_back(ctx: Context) -> CheckResult:
    """Read the written URDF from disk into `ctx.reread`."""
    try:
        ctx.reread = read_object(ctx.result.urdf_path)
    except AssetError as exc:
        return single(
            "structure.read_back",
            "error",
            False,
            f"the normalized URDF cannot be read back: {exc}",
            value=exc.code,
            element=exc.element or f"file {ctx.result.urdf_path.name}",
        )
    return single(
        "structure.read_back",
        "error",
        True,
        "the normalized URDF reads back into the canonical model",
        element=f"file {ctx.result.urdf_path.name}",
    )


def run(ctx: Context) -> list[CheckResult]:
    obj = ctx.reread
    link_names = [link.name for link in obj.links]
    joint_names = [joint.name for joint in obj.joints]
    out: list[CheckResult] = []

    children = [j.child for j in obj.joints]
    has_parent = set(children)
    roots = [name for name in link_names if name not in has_parent]
    out.append(
        single(
            "structure.single_root",
            "error",
            len(roots) == 1,
            f"{len(roots)} root link(s): {', '.join(roots[:5]) or 'none'}",
            value=len(roots),
            threshold=1,
            element=f"link {roots[0]}" if roots else None,
        )
    )

    reached = _reachable(obj, roots[0]) if len(roots) == 1 else set()
    parents = Counter(children)
    is_tree = (
        len(roots) == 1
        and len(reached) == len(link_names)
        and len(obj.joints) == len(link_names) - 1
        and all(n == 1 for n in parents.values())
    )
    out.append(
        single(
            "structure.tree",
            "error",
            is_tree,
            f"{len(reached)} of {len(link_names)} links reached from the root through "
            f"{len(obj.joints)} joints, each link with at most one parent",
            value=len(link_names) - len(reached),
            threshold=0,
        )
    )

    duplicates = [n for n, c in Counter(link_names).items() if c > 1]
    duplicates += [n for n, c in Counter(joint_names).items() if c > 1]
    out.append(
        single(
            "structure.unique_names",
            "error",
            not duplicates,
            "link and joint names are unique"
            if not duplicates
            else f"duplicate names: {', '.join(duplicates[:5])}",
            value=len(duplicates),
            threshold=0,
        )
    )

    out += flagged(
        "structure.joint_types",
        "error",
        [f"joint {j.name}" for j in obj.joints if j.type not in JOINT_TYPES],
        problem="unsupported joint type",
        passed_message=f"every joint type is one of {', '.join(JOINT_TYPES)}",
    )

    def axis_error(joint) -> float:
        if not np.all(np.isfinite(joint.axis)):
            return math.inf
        return abs(float(np.linalg.norm(joint.axis)) - 1.0)

    out += aggregate(
        "structure.axes",
        "error",
        [(f"joint {j.name}", axis_error(j)) for j in obj.joints if j.moving],
        AXIS_UNIT_TOLERANCE,
        ok=lambda v, t: v <= t,
        describe=lambda e, v: f"{e}: axis is not a finite unit vector (| |a| - 1 | = {v:.3g})",
        passed_message="every moving joint has a finite unit axis (value: largest | |a| - 1 |)",
    )

    out += flagged(
        "structure.limits",
        "error",
        [f"joint {j.name}" for j in obj.joints if not _limits_suit(j)],
        problem="limits are not ordered, or not finite where required",
        passed_message="limits are ordered, finite for revolute joints, (-inf, inf) for "
        "continuous joints, and finite or unbounded both ways for prismatic and helical joints",
    )

    by_name = {j.name: j for j in obj.joints}
    mimics = [j for j in obj.joints if j.mimic is not None]
    out += flagged(
        "structure.mimic_targets",
        "error",
        [f"joint {j.name}" for j in mimics if j.mimic.joint not in by_name],
        problem="mimics a joint that does not exist",
        passed_message=f"{len(mimics)} mimic joint(s), every target exists",
    )
    looping = _mimic_loops(mimics, by_name)
    out += flagged(
        "structure.mimic_loops",
        "error",
        [f"joint {j.name}" for j in mimics if j.name in looping],
        problem="its mimic chain comes back to itself",
        passed_message="no mimic chain loops",
    )

    out += flagged(
        "structure.mimic_frozen",
        "warning",
        [f"joint {j.name}" for j in mimics if j.mimic.multiplier == 0.0],
        problem="mimics with multiplier 0, so it never moves (held at its offset)",
        passed_message="every mimic coupling moves its joint (multiplier not 0)",
    )

    moving = len(obj.moving_joints)
    out.append(
        single(
            "structure.moving_joints",
            "warning",
            moving > 0,
            f"{moving} moving joint(s)" if moving else "the object has no moving joint",
            value=moving,
            threshold=1,
        )
    )
    return out


def _reachable(obj, root: str) -> set[str]:
    below: dict[str, list[str]] = {}
    for joint in obj.joints:
        below.setdefault(joint.parent, []).append(joint.child)
    seen, stack = {root}, [root]
    while stack:
        for child in below.get(stack.pop(), []):
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return seen


def _limits_suit(joint) -> bool:
    """Whether the limits are ordered and suit the joint type."""
    lower, upper = joint.lower, joint.upper
    if math.isnan(lower) or math.isnan(upper) or lower > upper:
        return False
    finite = math.isfinite(lower) and math.isfinite(upper)
    unbounded = (lower, upper) == (-math.inf, math.inf)
    if joint.type == "revolute":
        return finite
    if joint.type == "continuous":
        return unbounded
    if joint.type == "fixed":
        return (lower, upper) == (0.0, 0.0)
    return finite or unbounded


def _mimic_loops(mimics, by_name) -> set[str]:
    """Names of the mimic joints whose chain runs into a loop (each chain walked once, its
    verdict remembered for every joint on it: linear in the joints)."""
    verdict: dict[str, bool] = {}  # joint name -> its chain runs into a loop
    for joint in mimics:
        chain, on_chain, current = [], set(), joint
        while True:
            if current.name in verdict:
                loops = verdict[current.name]
                break
            if current.name in on_chain:
                loops = True
                break
            chain.append(current.name)
            on_chain.add(current.name)
            if current.mimic is None or current.mimic.joint not in by_name:
                loops = False
                break
            current = by_name[current.mimic.joint]
        for name in chain:
            verdict[name] = loops
    return {name for name, loops in verdict.items() if loops}
