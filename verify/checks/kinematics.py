"""Kinematic checks through the ArticulateArena metric.

- metric.self_distance.split / .kinetic: the source object in the canonical frame
  (`reference.transformed(placement, scale)`) and the normalized URDF read back from disk are at
  E_tree = 0 under the split norm (alpha = 1) and under the kinetic norm (per-joint Grams from
  the normalized object's child-link mass moments): normalization changed the representation,
  not the motion.
- metric.joint_self_distance: E(J, J) = 0 for every joint.
- metric.swap.joint: E(J, reversed J) = 0, the reversal flipping the axis and negating and
  swapping the limits.
- metric.swap.urdf: the URDF written with every axis flipped re-reads at E_tree = 0 from the
  original.
- metric.motion: every moving joint carries motion, E(J, J0) > 0 (a revolute [0, 0] does not).

Objects with an unbounded joint (continuous, unbounded prismatic or helical) are compared with
the compactified distance E^phi at kappa = pi, since E needs finite limits; E^phi is zero exactly
when E is. The floating tolerance is relative: 1e-9 times the total motion of the reference,
sum of E(J, J0) over its joints in the same norm (at least 1e-9).
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

import metric
from normalize.errors import AssetError
from normalize.inputs import unrecorded
from normalize.model import ArticulatedObject, Mimic
from normalize.urdf import read_object
from normalize.urdf_writer import urdf_text
from verify.checks import Context, aggregate, single
from verify.report import CheckResult

KAPPA = math.pi
RELATIVE_TOLERANCE = 1e-9
#: Search nodes allowed to the exact tree distance; the value found is an upper bound either way.
TREE_BUDGET = 5000
SPLIT = metric.split_norm(1.0)


def metric_tree(obj: ArticulatedObject) -> metric.Tree:
    """The metric's tree of an object: one edge (parent link, child link) per joint, with the
    world-frame screw twists and limits at rest."""
    screws = obj.screws()
    joints = metric.Joints(screws.twist, screws.lower, screws.upper)
    return metric.Tree([(j.parent, j.child) for j in obj.joints], joints)


def kappa_for(*trees: metric.Tree) -> float | None:
    """KAPPA when any joint of the trees is unbounded, else None (plain E)."""
    return KAPPA if any((~t.joints.bounded).any() for t in trees) else None


def tolerance(tree: metric.Tree, norm, kappa) -> float:
    """RELATIVE_TOLERANCE times the total motion of `tree` (sum of E(J, J0)), at least
    RELATIVE_TOLERANCE."""
    if len(tree) == 0:
        return RELATIVE_TOLERANCE
    total = float(metric.distance_to_fixed(tree.joints, norm, kappa).sum())
    return RELATIVE_TOLERANCE * max(1.0, total)


def kinetic_grams(obj: ArticulatedObject) -> tuple[np.ndarray, int]:
    """(Grams (N, 6, 6) per joint of `obj`, count of moving joints whose child has no usable
    mass (as `metric.kinetic_norms` decides) and fall back to the split norm)."""
    if not obj.joints:
        return np.zeros((0, 6, 6)), 0
    grams, usable = metric.kinetic_norms(*obj.child_mass_moments())
    grams[~usable] = SPLIT
    moving = np.array([j.moving for j in obj.joints])
    return grams, int((moving & ~usable).sum())


def reference_grams(reference: ArticulatedObject, normalized: ArticulatedObject, grams, sources):
    """Grams for the reference's joints: the Gram of the normalized joint with the same source
    name (joints sharing one source name, as after a multi-DOF decomposition, in order); the
    split norm for reference joints that have none (fixed joints, contracted away)."""
    queues: dict[str, list[int]] = {}
    for k, joint in enumerate(normalized.joints):
        queues.setdefault(sources.get(joint.name, joint.source_name), []).append(k)
    out = np.repeat(SPLIT[None], len(reference.joints), axis=0)
    for i, joint in enumerate(reference.joints):
        if not joint.moving:
            continue
        queue = queues.get(joint.source_name)
        if queue:
            out[i] = grams[queue.pop(0)]
    return out


def _tree_check(check_id: str, t1, t2, norm, kappa, tol: float, what: str) -> CheckResult:
    found = metric.tree_distance(t1, t2, norm, kappa=kappa, budget=TREE_BUDGET)
    which = "E^phi_tree (kappa = pi)" if kappa else "E_tree"
    passed = found.value <= tol
    message = f"{which} = {found.value:.3g} between {what} (tolerance {tol:.3g})"
    if not passed and not found.exact:
        message += f"; the search stopped at its budget, lower bound {found.lower_bound:.3g}"
    return single(check_id, "error", passed, message, value=found.value, threshold=tol)


def flipped(obj: ArticulatedObject) -> ArticulatedObject:
    """`obj` with every moving joint's axis and coordinate negated (limits negated and swapped,
    mimic offsets negated: with both ends flipped q' = m q_target' - b) and no geometry."""
    joints = []
    for joint in obj.joints:
        mimic = joint.mimic
        if mimic is not None:
            mimic = Mimic(mimic.joint, mimic.multiplier, -mimic.offset + 0.0)
        if joint.moving:
            joint = replace(
                joint, axis=-joint.axis + 0.0, lower=-joint.upper, upper=-joint.lower, mimic=mimic
            )
        joints.append(joint)
    links = tuple(replace(link, visuals=(), collisions=()) for link in obj.links)
    return obj.replace(links=links, joints=tuple(joints))


def run(ctx: Context) -> list[CheckResult]:
    out: list[CheckResult] = []
    normalized = ctx.reread
    reference = ctx.placed
    t_ref, t_norm = metric_tree(reference), metric_tree(normalized)
    kappa = kappa_for(t_ref, t_norm)

    # Self-distance under the split norm.
    tol = tolerance(t_ref, SPLIT, kappa)
    out.append(
        _tree_check(
            "metric.self_distance.split",
            t_ref,
            t_norm,
            SPLIT,
            kappa,
            tol,
            "the source in the canonical frame and the normalized URDF read back (split norm, "
            "alpha = 1)",
        )
    )

    # Self-distance under the kinetic norm.
    grams, massless = kinetic_grams(normalized)
    sources = {j.name: j.source_name for j in ctx.result.object.joints}
    ref_grams = reference_grams(reference, normalized, grams, sources)
    tol_kinetic = tolerance(t_ref, ref_grams, kappa)
    check = _tree_check(
        "metric.self_distance.kinetic",
        t_ref,
        t_norm,
        (ref_grams, grams),
        kappa,
        tol_kinetic,
        "the source in the canonical frame and the normalized URDF read back (kinetic norm)",
    )
    if massless:
        check.message += (
            f"; {massless} joint(s) whose child has no mass are measured in the split norm"
        )
    out.append(check)

    moving = np.array([i for i, j in enumerate(normalized.joints) if j.moving], dtype=np.int64)
    joints = t_norm.joints[moving]
    names = [f"joint {normalized.joints[i].name}" for i in moving]
    jk = kappa_for(t_norm)
    tol_norm = tolerance(t_norm, SPLIT, jk)

    self_distance = metric.joint_distance(joints, joints, SPLIT, jk) if len(moving) else []
    out += aggregate(
        "metric.joint_self_distance",
        "error",
        zip(names, np.asarray(self_distance, dtype=float).tolist(), strict=True),
        tol_norm,
        ok=lambda v, t: v <= t,
        describe=lambda e, v: f"{e}: E(J, J) = {v:.3g}, not 0",
        passed_message="E(J, J) = 0 for every moving joint (value: the largest)",
    )

    if len(moving):
        reversed_joints = metric.Joints(-joints.twist, -joints.upper, -joints.lower)
        swapped = metric.joint_distance(joints, reversed_joints, SPLIT, jk).tolist()
    else:
        swapped = []
    out += aggregate(
        "metric.swap.joint",
        "error",
        zip(names, swapped, strict=True),
        tol_norm,
        ok=lambda v, t: v <= t,
        describe=lambda e, v: f"{e}: E(J, reversed J) = {v:.3g}, not 0",
        passed_message="E(J, reversed J) = 0 for every moving joint: axis flipped, limits "
        "negated and swapped (value: the largest)",
    )

    out.append(_swap_urdf(normalized, t_norm, tol_norm))

    motion = metric.distance_to_fixed(joints, SPLIT, jk).tolist() if len(moving) else []
    out += aggregate(
        "metric.motion",
        "warning",
        zip(names, motion, strict=True),
        0.0,
        ok=lambda v, t: v > t,
        describe=lambda e, v: f"{e}: E(J, J0) = 0: its range is [0, 0], so it is effectively fixed",
        passed_message="every moving joint carries motion, E(J, J0) > 0 (value: the smallest)",
        worst=min,
    )
    return out


def _swap_urdf(normalized: ArticulatedObject, t_norm, tol: float) -> CheckResult:
    """Write the axis-flipped object with the project's writer, read it back, compare."""
    check_id = "metric.swap.urdf"
    handle, name = tempfile.mkstemp(prefix="arena-swap-", suffix=".urdf")
    path = Path(name)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(urdf_text(flipped(normalized)))
        with unrecorded():  # the check's own file, not an input of the object
            reread = read_object(path)
    except AssetError as exc:
        return single(check_id, "error", False, f"the axis-flipped URDF cannot be read back: {exc}")
    finally:
        path.unlink(missing_ok=True)
    t_flip = metric_tree(reread)
    count = len(normalized.moving_joints)
    return _tree_check(
        check_id,
        t_norm,
        t_flip,
        SPLIT,
        kappa_for(t_norm, t_flip),
        tol,
        f"the normalized object and its URDF written with all {count} moving axes flipped",
    )
