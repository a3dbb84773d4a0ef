"""Fidelity: the shipped object matches an independent reading of its source, and is plausible.

The other families prove that the written file moves like what our adapter read; they cannot see
an adapter that read the source wrong. These checks compare the object READ BACK FROM ITS FILE
with a second reader of the source (`verify/checks/readers.py`: yourdfpy for URDF, MuJoCo for
MJCF, Drake for SDF).

Both readings are compared in the canonical world frame, up to the one rigid placement of the
convention: the source is scaled by the source's scale factor, rotated by the placement's
rotation (the up axis, exact) and moved by the translation that best fits the rest pose (fitted,
so that an adapter error that shifts the bounding box is not taken for a placement). Joints are
matched by source name; a canonical coordinate q maps to the source's q0 + sign * q / s (the sign
from the world axes, q0 from the limits: the rest-pose re-anchoring and the axis-sign rule of the
convention), and the object is compared at rest and at CONFIG_FRACTIONS of every range.

- fidelity.link_poses (URDF readers): world pose of every link frame at every configuration.
- fidelity.geometry: per link, the world-space box of its shapes (visuals, else collisions) at
  every configuration: catches wrong mesh scales, dropped or misplaced shapes and wrong motion.
- fidelity.mass: per link, the mass against the source's declared masses of the links merged
  into it (only where every one declares one).

Plausibility with no second reader (size, densities, visual against collision boxes):
`verify/checks/plausibility.py`.

A failed fidelity check sends the object to review (`verify.report.REVIEW_CHECKS`); a gross one
refuses it (severity error): a reader disagreement over GROSS times its tolerance, a factor or
range check more than GROSS times outside its bound.
"""

from __future__ import annotations

import math

import numpy as np

from verify.checks import Context, single
from verify.checks.plausibility import GROSS, size_and_density, visual_collision
from verify.checks.readers import READERS, ReaderCannotRead, Reading
from verify.checks.shape_points import _box, _moved, canonical_points
from verify.report import CheckResult

POSE_TOLERANCE = 1e-4  # of the largest extent (m per m), plus ABSOLUTE
GEOMETRY_TOLERANCE = 0.01  # of the largest extent: primitives are sampled, capsules meshed
ABSOLUTE = 1e-6  # m
MASS_TOLERANCE = 1e-3  # relative
CONFIG_FRACTIONS = (0.3, 0.8)
UNBOUNDED_VALUES = (0.7, -0.4)  # rad, for continuous joints


# --------------------------------------------------------------------------- comparison
def graded(check_id: str, element, value: float, threshold: float, message: str) -> CheckResult:
    """A failed fidelity result: a warning (review), an error over GROSS times the threshold."""
    severity = "error" if value > GROSS * threshold else "warning"
    return single(
        check_id, severity, False, message, value=value, threshold=threshold, element=element
    )


def _summary(check_id, rows, passed_message, describe) -> list[CheckResult]:
    """rows: (element, value, threshold). Failed rows graded; else one pass with the worst."""
    failed = [graded(check_id, e, v, t, describe(e, v, t)) for e, v, t in rows if v > t]
    if failed:
        return failed
    if not rows:
        return [single(check_id, "warning", True, passed_message)]
    element, value, threshold = max(rows, key=lambda r: r[1] / r[2])
    return [
        single(
            check_id,
            "warning",
            True,
            passed_message,
            value=value,
            threshold=threshold,
            element=element,
        )
    ]


def _joint_map(ctx: Context, reading: Reading, rotation: np.ndarray, scale: float):
    """canonical joint -> (source joint, sign, q0, length scale) for the joints that match."""
    obj, memory = ctx.reread, ctx.result.object
    names = [memory.joint_map[j.name].source_name for j in obj.joints]
    frames = obj.joint_frames()
    out = {}
    for joint, name in zip(obj.joints, names, strict=True):
        found = reading.joints.get(name)
        if not joint.moving or found is None or names.count(name) != 1:
            continue
        prismatic = joint.type == "prismatic"
        if prismatic != (found.type == "prismatic") or joint.type == "helical":
            continue
        axis = frames[joint.name][:3, :3] @ joint.axis
        sign = 1.0 if float(axis @ (rotation @ found.axis)) >= 0 else -1.0
        length = scale if prismatic else 1.0
        if math.isfinite(found.lower) and math.isfinite(found.upper):
            q0 = (
                found.lower - joint.lower / length
                if sign > 0
                else found.upper + joint.lower / length
            )
        else:
            q0 = found.rest
        out[joint.name] = (name, sign, q0, length)
    return out


def _configurations(obj) -> list[dict[str, float]]:
    configs = [{}]
    for k, fraction in enumerate(CONFIG_FRACTIONS):
        q = {}
        for joint in obj.joints:
            if not joint.moving or joint.mimic is not None:
                continue
            if math.isfinite(joint.lower) and math.isfinite(joint.upper):
                q[joint.name] = joint.lower + fraction * (joint.upper - joint.lower)
            elif joint.type != "prismatic":
                q[joint.name] = UNBOUNDED_VALUES[k % len(UNBOUNDED_VALUES)]
        configs.append(q)
    return configs


def compare(ctx: Context, reading: Reading) -> list[CheckResult]:
    obj, memory = ctx.reread, ctx.result.object
    extent = ctx.notes.get("extent") or 1.0
    rotation = np.asarray(ctx.result.placement, float)[:3, :3]
    scale = float(ctx.result.scale)
    similarity = np.eye(4)
    similarity[:3, :3] = scale * rotation
    ours = canonical_points(obj, ctx.notes.get("meshes", {}))
    joints = _joint_map(ctx, reading, rotation, scale)

    def source_configuration(q: dict[str, float]) -> dict[str, float]:
        """The source coordinates of canonical coordinates `q` (mimic couplings applied)."""
        resolved = obj.resolve_configuration(q)
        return {
            source_name: q0 + sign * resolved[name] / length
            for name, (source_name, sign, q0, length) in joints.items()
        }

    rest_source = reading.poses(source_configuration({}))  # re-anchored rest poses included
    members = {
        link.name: [n for n in memory.link_map[link.name].source_names if n in rest_source]
        for link in obj.links
    }

    def source_points(link: str, poses) -> np.ndarray | None:
        """World points of the source links merged into `link`: their visuals, else (when none
        of them has any) their collisions, as the convention represents a link."""
        names = members[link]
        shapes = reading.visuals if any(m in reading.visuals for m in names) else reading.collisions
        parts = [_moved(shapes[m], poses[m]) for m in names if m in shapes]
        return _moved(np.concatenate(parts), similarity) if parts else None

    # The placement's translation, fitted at rest.
    ours_rest = obj.link_poses()
    offsets = []
    for link in obj.links:
        theirs = source_points(link.name, rest_source)
        if theirs is not None and link.name in ours:
            offsets.append(
                _box(_moved(ours[link.name], ours_rest[link.name])).mean(axis=0)
                - _box(theirs).mean(axis=0)
            )
        if reading.frames_comparable and link.name != obj.root and members[link.name]:
            source_frame = similarity @ rest_source[members[link.name][0]]
            offsets.append(ours_rest[link.name][:3, 3] - source_frame[:3, 3])
    shift = np.mean(offsets, axis=0) if offsets else np.zeros(3)
    similarity[:3, 3] = shift

    pose_rows: dict[str, tuple] = {}
    geometry_rows: dict[str, tuple] = {}
    pose_threshold = POSE_TOLERANCE * extent + ABSOLUTE
    geometry_threshold = GEOMETRY_TOLERANCE * extent + ABSOLUTE
    for q in _configurations(obj):
        q = {name: value for name, value in q.items() if name in joints}
        theirs_poses = reading.poses(source_configuration(q))
        our_poses = obj.link_poses(q)
        label = (
            "rest"
            if not q
            else "q = " + ", ".join(f"{k} {v:.4g}" for k, v in sorted(q.items())[:3])
        )
        for link in obj.links:
            element = f"link {link.name}"
            if reading.frames_comparable and link.name != obj.root and members[link.name]:
                source_frame = similarity @ theirs_poses[members[link.name][0]]
                error = float(np.linalg.norm(our_poses[link.name][:3, 3] - source_frame[:3, 3]))
                turned = source_frame[:3, :3] / scale
                error += extent * float(np.abs(our_poses[link.name][:3, :3] - turned).max())
                if element not in pose_rows or error > pose_rows[element][1]:
                    pose_rows[element] = (element, error, pose_threshold, label)
            theirs = source_points(link.name, theirs_poses)
            if theirs is None:
                continue
            if link.name in ours:
                error = float(
                    np.abs(_box(_moved(ours[link.name], our_poses[link.name])) - _box(theirs)).max()
                )
            else:  # the source has shapes here, the shipped object none
                error = float(np.linalg.norm(np.ptp(theirs, axis=0))) + geometry_threshold
            if element not in geometry_rows or error > geometry_rows[element][1]:
                geometry_rows[element] = (element, error, geometry_threshold, label)

    who = reading.reader
    unmatched = sum(1 for j in obj.joints if j.moving and j.mimic is None and j.name not in joints)
    note = f"; {unmatched} moving joint(s) without a {who} match kept at rest" if unmatched else ""
    out = []
    if reading.frames_comparable:
        out += _summary(
            "fidelity.link_poses",
            [r[:3] for r in pose_rows.values()],
            f"every link frame where {who} puts it, at rest and over the ranges{note}",
            lambda e, v, t: (
                f"{e}: {v:.4g} m from where {who} reading the source puts it at "
                f"{pose_rows[e][3]} (position error plus extent times rotation error; "
                f"tolerance {t:.3g} m)"
            ),
        )
    if not (reading.visuals or reading.collisions):  # a reader without shapes (Drake's plant)
        return out + _mass_rows(ctx, members, reading, scale)
    out += _summary(
        "fidelity.geometry",
        [r[:3] for r in geometry_rows.values()],
        f"every link's shapes where {who} puts them, at rest and over the ranges{note}",
        lambda e, v, t: (
            f"{e}: its shapes' box is {v:.4g} m off {who}'s reading of the source at "
            f"{geometry_rows[e][3]} (tolerance {t:.3g} m)"
        ),
    )
    out += _mass_rows(ctx, members, reading, scale)
    return out


def _mass_rows(ctx: Context, members, reading: Reading, scale: float) -> list[CheckResult]:
    """Masses against the declared ones. A link whose inertial the adapter read and
    normalization recomputed (an invalid source inertia, recorded as a change and in
    inertia.origin) is only reviewed: the repair is known, the lost mass still worth a look.
    A declared mass the adapter did not read at all is graded like any disagreement."""
    obj, memory, reference = ctx.reread, ctx.result.object, ctx.result.reference
    rows, details = [], {}
    for link in obj.links:
        names = members[link.name]
        if not names or not all(n in reading.masses for n in names):
            continue
        expected = scale**3 * sum(reading.masses[n] for n in names)
        mass = link.inertial.mass if link.inertial is not None else 0.0
        kept = memory.link_map[link.name].inertial
        read = [reference.link_map[n].inertial for n in names if n in reference.link_map]
        repaired = (  # the adapter read an inertial, normalization replaced it (recorded)
            kept is not None
            and not set(kept.method.split("+")) <= {"source", "merged"}
            and all(inertial is not None for inertial in read)
        )
        element = f"link {link.name}"
        rows.append((element, abs(mass - expected) / expected, MASS_TOLERANCE))
        details[element] = (mass, expected, repaired)
    out = []
    for element, value, threshold in rows:
        if value <= threshold:
            continue
        mass, expected, repaired = details[element]
        message = (
            f"{element}: mass {mass:.6g} kg, the source declares {expected:.6g} kg "
            f"({reading.reader}; relative difference {value:.3g}, tolerance {threshold:g})"
        )
        if repaired:
            message += "; normalization recomputed this inertial (see inertia.origin)"
            out.append(
                single(
                    "fidelity.mass",
                    "warning",
                    False,
                    message,
                    value=value,
                    threshold=threshold,
                    element=element,
                )
            )
        else:
            out.append(graded("fidelity.mass", element, value, threshold, message))
    if out:
        return out
    return _summary(
        "fidelity.mass", rows, f"every mass the source declares is kept ({reading.reader})", None
    )


# --------------------------------------------------------------------------- family
def run(ctx: Context) -> list[CheckResult]:
    out = visual_collision(ctx) + size_and_density(ctx)
    reader = READERS.get(ctx.source.format)
    if reader is None:
        out.append(
            single(
                "fidelity.reader",
                "info",
                True,
                f"no independent reader of {ctx.source.format} is installed: plausibility only",
            )
        )
        return out
    try:
        reading = reader(ctx)
    except ImportError as exc:
        return out + [single("fidelity.reader", "info", True, f"reader not installed: {exc}")]
    except ReaderCannotRead as exc:
        return out + [single("fidelity.reader", "info", True, str(exc))]
    except Exception as exc:  # the second reader refusing what ours accepted is a finding
        return out + [
            single(
                "fidelity.reader",
                "warning",
                False,
                f"the independent reader cannot read the source: {type(exc).__name__}: {exc}",
            )
        ]
    out.append(single("fidelity.reader", "info", True, f"compared with {reading.reader}"))
    return out + compare(ctx, reading)
