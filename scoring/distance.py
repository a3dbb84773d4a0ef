"""`arena distance`: the metric between two single objects, or between lists of joints.

Objects (URDF or MJCF files, or folders holding one) are read like predictions (no placement)
and compared by the exact unrooted tree distance (the base link is free; a matched joint on a
reversed edge is compared as its inverse): E^{phi,tree} (or E^tree with `compact=False`) under the
split norm, or under the kinetic-energy norm where B is the reference: a matched pair and B's
unmatched joints are measured with B's child link moments, A's unmatched joints with A's own.

`--joints FILE` takes the authors' reference format, {"prediction": [...], "ground_truth":
[...]} with joints {"xi_hat": [6 numbers], "a": lower, "b": upper}, and gives E and E^phi of
prediction[i] against ground_truth[i] under the split norm. The pair {a xi, b xi} is unordered,
so a > b is accepted; null, "inf" or JSON Infinity mark an unbounded end (then E is undefined
and null, E^phi is defined).

Under the split norm, identical joints (same twist and limits) are interchangeable at the same
cost; the listed matching pairs them by joint position (`break_ties`), the value is unchanged.

Each matched pair also says what differs (`pair_differences`): types, the angle between the axes,
the distance between the axis lines of two rotating joints (the metric sees a rotation's line,
not the point on it; a translation has no line) and both limit ranges. A's joint is written along
B's axis direction first (an inverted pair's joint inverted, then axis and limits negated where
the axes point apart: the same joint), so the angle is at most 90 degrees and the ranges compare
directly. E is in metres under the kinetic norm without compactification, dimensionless otherwise
(the split norm, or phi, which maps into the unit ball).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

from export import release as releases
from metric import Joints, component_scores, joint_distance, kinetic_norms, split_norm
from normalize.errors import AssetError
from normalize.files import broken_link
from scoring.compare import joint_parameters, match_trees, tie_broken
from scoring.defaults import ALPHA, KAPPA
from scoring.objects import Kinematics, kinematics, read_any

NORMS = ("split", "kinetic")
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
#: Joint types whose motion turns about an axis line (the others translate).
ROTATING = ("revolute", "continuous", "helical")
#: Differences below these are shown as none: axis angle (degrees), line distance (m), limits.
ANGLE_TOLERANCE_DEG = 1e-3
OFFSET_TOLERANCE_M = 1e-6
LIMIT_TOLERANCE = 1e-9


class DistanceError(ValueError):
    """Inputs the distance cannot use (message says why)."""


# --------------------------------------------------------------------------- joint lists
def _limit(value, end: str, where: str) -> float:
    if value is None:
        return -math.inf if end == "a" else math.inf
    if isinstance(value, str) and value.strip().lower() in ("inf", "+inf", "-inf"):
        return float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DistanceError(f"{where}.{end} must be a number, null or 'inf', got {value!r}")
    if math.isnan(value):
        raise DistanceError(f"{where}.{end} is NaN")
    return float(value)


def read_joint_lists(path: Path) -> tuple[Joints, Joints]:
    """(prediction, ground_truth) joints of a reference-format JSON file (see the module)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DistanceError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise DistanceError(f"{path}: expected an object with 'prediction' and 'ground_truth'")
    batches = []
    for side in ("prediction", "ground_truth"):
        items = data.get(side)
        if not isinstance(items, list):
            raise DistanceError(f"{path}: '{side}' must be a list of joints")
        twist, lower, upper = [], [], []
        for i, item in enumerate(items):
            where = f"{side}[{i}]"
            if not isinstance(item, dict) or not {"xi_hat", "a", "b"} <= set(item):
                raise DistanceError(f"{path}: {where} needs keys xi_hat, a and b")
            xi = item["xi_hat"]
            if (
                not isinstance(xi, list)
                or len(xi) != 6
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in xi)
            ):
                raise DistanceError(f"{path}: {where}.xi_hat must be 6 numbers")
            a, b = _limit(item["a"], "a", where), _limit(item["b"], "b", where)
            twist.append([float(v) for v in xi])
            lower.append(min(a, b))
            upper.append(max(a, b))
        try:
            batches.append(Joints(np.array(twist).reshape(-1, 6), lower, upper))
        except ValueError as exc:
            raise DistanceError(f"{path}: {side}: {exc}") from exc
    prediction, ground_truth = batches
    if len(prediction) != len(ground_truth):
        raise DistanceError(
            f"{path}: {len(prediction)} prediction joints but {len(ground_truth)} ground-truth "
            "joints; pairs are taken in input order, so the lists must have the same length"
        )
    return prediction, ground_truth


def joint_list_distances(path: Path, alpha: float = ALPHA, kappa: float = KAPPA) -> list[dict]:
    """[{"E": ..., "E_phi": ...}] per pair prediction[i] vs ground_truth[i] under the split
    norm (E is None where a limit is infinite)."""
    prediction, ground_truth = read_joint_lists(path)
    gram = split_norm(alpha)
    e_phi = joint_distance(prediction, ground_truth, gram, kappa)
    bounded = prediction.bounded & ground_truth.bounded
    e = np.full(len(prediction), np.nan)
    if bounded.any():
        e[bounded] = joint_distance(prediction[bounded], ground_truth[bounded], gram)
    return [
        {"E": None if math.isnan(x) else float(x), "E_phi": float(y)}
        for x, y in zip(e, e_phi, strict=True)
    ]


# --------------------------------------------------------------------------- objects
def _kinetic(kin: Kinematics, label: str) -> np.ndarray:
    grams, valid = kinetic_norms(kin.mass, kin.com, kin.inertia)
    bad = np.flatnonzero(kin.moving & ~valid)
    if len(bad):
        links = ", ".join(kin.tree.edges[i][1] for i in bad[:5])
        raise DistanceError(
            f"the kinetic norm needs a positive mass and a positive definite inertia for the "
            f"child link of every moving joint; {label} lacks them for {len(bad)} links ({links})"
        )
    return grams


def _finite(value: float) -> float | None:
    return float(value) + 0.0 if math.isfinite(value) else None  # + 0.0: no -0.0


def pair_differences(first: Kinematics, second: Kinematics, pairs, inverted) -> list[dict]:
    """Per matched pair (A index, B index): both types, the axis angle (degrees, at most 90),
    the distance between the axis lines when both joints rotate (else None), and both limit
    ranges, A's taken along B's axis direction (see the module; `a_limits_negated` says when
    that negated A's own range). Infinite limits are None."""
    if not pairs:
        return []
    a_index = [i for i, _ in pairs]
    b_index = [k for _, k in pairs]
    scores = component_scores(
        joint_parameters(first, a_index), joint_parameters(second, b_index), parallel="line"
    )
    out = []
    for t, ((i, k), flip) in enumerate(zip(pairs, inverted, strict=True)):
        apart = float(first.axis[i] @ second.axis[k]) < 0.0
        lower, upper = float(first.joints.lower[i]), float(first.joints.upper[i])
        negated = bool(flip) != apart  # an inverted joint moves the other way along its axis
        if negated:
            lower, upper = -upper, -lower
        rotating = first.types[i] in ROTATING and second.types[k] in ROTATING
        out.append(
            {
                "a_type": first.types[i],
                "b_type": second.types[k],
                "axis_angle_deg": math.degrees(float(scores.axis_error[t])),
                "origin_offset_m": float(scores.origin_error[t]) if rotating else None,
                "a_limits": [_finite(lower), _finite(upper)],
                "b_limits": [
                    _finite(float(second.joints.lower[k])),
                    _finite(float(second.joints.upper[k])),
                ],
                "a_limits_negated": negated,
            }
        )
    return out


def _unit(norm: str, kappa: float | None) -> str:
    """E's unit: metres for the kinetic norm without compactification, else dimensionless."""
    return "m" if norm == "kinetic" and kappa is None else "dimensionless"


def object_distance(
    a: Path, b: Path, norm: str = "split", alpha: float = ALPHA, kappa: float | None = KAPPA
) -> dict:
    """The exact tree distance from object A to object B with its matching (see the module).
    kappa None: no compactification (every limit must then be finite)."""
    if norm not in NORMS:
        raise DistanceError(f"--norm must be one of {', '.join(NORMS)}, not {norm!r}")
    objects = []
    for label, path in (("A", a), ("B", b)):
        try:
            objects.append(kinematics(read_any(Path(path))))
        except AssetError as exc:
            raise DistanceError(f"cannot read {label} ({path}): {exc}") from exc
    first, second = objects
    kinetic = norm == "kinetic"
    gram = (_kinetic(first, "A"), _kinetic(second, "B")) if kinetic else split_norm(alpha)
    try:
        match = match_trees(first, second, gram, kappa)
    except ValueError as exc:  # unbounded joints without compactification
        raise DistanceError(str(exc)) from exc
    if not kinetic:  # identical joints are interchangeable: show them paired by position
        match = tie_broken(match, first, second, gram, kappa)
    result = match.result
    differences = pair_differences(first, second, match.pairs, match.inverted)
    return {
        "a": str(a),
        "b": str(b),
        "norm": norm,
        "alpha": alpha if norm == "split" else None,
        "kappa": kappa,
        "unit": _unit(norm, kappa),
        "E_tree": result.value,
        "exact": result.exact,
        "certified": result.certified,
        "relaxation": result.relaxation,
        "lower_bound": result.lower_bound,
        "nodes_explored": result.nodes_explored,
        "pairs": [
            {
                "a_joint": first.names[i],
                "b_joint": second.names[k],
                "E": float(cost),
                "inverted": bool(flip),
                "differences": diff,
            }
            for (i, k), cost, flip, diff in zip(
                match.pairs, match.pair_cost, match.inverted, differences, strict=True
            )
        ],
        "unmatched_a": _unmatched(first, match.unmatched_pred, match.unmatched_pred_cost),
        "unmatched_b": _unmatched(second, match.unmatched_gt, match.unmatched_gt_cost),
    }


def _unmatched(kin: Kinematics, index, cost) -> list[dict]:
    return [
        {
            "joint": kin.names[i],
            "type": kin.types[i],
            "limits": [_finite(float(kin.joints.lower[i])), _finite(float(kin.joints.upper[i]))],
            "E": float(c),
        }
        for i, c in zip(index, cost, strict=True)
    ]


def _range(limits: list, joint_type: str) -> str:
    low = "-inf" if limits[0] is None else f"{limits[0]:.6g}"
    high = "inf" if limits[1] is None else f"{limits[1]:.6g}"
    return f"[{low}, {high}] {'m' if joint_type == 'prismatic' else 'rad'}"


def _same_limits(a: list, b: list) -> bool:
    return all(
        (x is None and y is None)
        or (x is not None and y is not None and abs(x - y) <= LIMIT_TOLERANCE * max(1.0, abs(y)))
        for x, y in zip(a, b, strict=True)
    )


def difference_lines(d: dict) -> list[str]:
    """What differs in one matched pair (`pair_differences`), one line each."""
    lines = []
    if d["a_type"] != d["b_type"]:
        lines.append(f"type: A {d['a_type']}, B {d['b_type']}")
    if d["axis_angle_deg"] >= ANGLE_TOLERANCE_DEG:
        lines.append(f"axis angle: {d['axis_angle_deg']:.4g} deg")
    if d["origin_offset_m"] is not None and d["origin_offset_m"] >= OFFSET_TOLERANCE_M:
        lines.append(f"origin offset: {d['origin_offset_m']:.4g} m between the axis lines")
    if not _same_limits(d["a_limits"], d["b_limits"]):
        note = " (A's own range negated: taken along B's axis)" if d["a_limits_negated"] else ""
        lines.append(
            f"limits: A {_range(d['a_limits'], d['a_type'])}{note}, "
            f"B {_range(d['b_limits'], d['b_type'])}"
        )
    return lines or ["no difference in type, axis, origin or limits"]


def distance_text(d: dict) -> str:
    """Human-readable form of `object_distance`'s result: the total, the matching with each
    pair's contribution (its unit, its share of the total) and what differs, the unmatched
    joints."""
    symbol = "E_alpha" if d["norm"] == "split" else "E_B"
    symbol += "^{phi,tree}" if d["kappa"] is not None else "^tree"
    setting = f"alpha = {d['alpha']:g}" if d["norm"] == "split" else "B's child link moments"
    if d["kappa"] is not None:
        setting += f", kappa = {d['kappa']:.6g}"
    if d["certified"]:
        status = "exact: certified by the assignment relaxation"
    elif not d["exact"]:
        status = (
            f"NOT exact: the search stopped at its budget of {d['nodes_explored']} nodes; "
            f"E lies between {d['lower_bound']:.6g} and the value shown"
        )
    else:
        status = (
            f"exact: proven by search over {d['nodes_explored']} nodes "
            f"(relaxation {d['relaxation']:.6g})"
        )
    unit = " m" if d["unit"] == "m" else ""
    total = d["E_tree"]

    def contribution(e: float) -> str:
        notes = [] if unit else [d["unit"]]
        if total > 0:
            notes.append(f"{100.0 * e / total:.1f} % of the total")
        return f"{e:.6g}{unit}" + (f" ({', '.join(notes)})" if notes else "")

    n = len(d["pairs"])
    lines = [
        f"{symbol}(A, B) = {total:.6g}{unit}  ({d['norm']} norm, {setting}; "
        + ("in metres)" if unit else "dimensionless)"),
        status,
        f"matching (A -> B), {n} pair{'s' * (n != 1)}:" if n else "no matched joints",
    ]
    for p in d["pairs"]:
        lines.append(
            f"  {p['a_joint']} -> {p['b_joint']}  E = {contribution(p['E'])}"
            + ("  (edge reversed: A's joint inverted)" if p["inverted"] else "")
        )
        lines += [f"      {line}" for line in difference_lines(p["differences"])]
    for key, what in (("unmatched_a", "of A (contracted)"), ("unmatched_b", "of B (expanded)")):
        if d[key]:
            lines.append(f"unmatched joints {what}, each against the fixed joint J0:")
            lines += [
                f"  {u['joint']} ({u['type']}, limits {_range(u['limits'], u['type'])})  "
                f"E(J, J0) = {contribution(u['E'])}"
                for u in d[key]
            ]
    return "\n".join(lines)


def _checked_input(name: str, path: Path, accept_modified: bool) -> list[str]:
    """DistanceError when `path` does not exist (a broken link named as such), or when it is an
    object of a release whose files no longer match the release's checksums (the warnings when
    `accept_modified`)."""
    if not path.exists():
        raise DistanceError(f"{name} {path} {broken_link(path) or 'does not exist'}")
    found = releases.containing_object(path)
    if found is None:
        return []
    root, object_id = found
    try:
        return releases.check_integrity(
            root,
            lambda n: n.startswith(f"objects/{object_id}/"),
            accept_modified=accept_modified,
        )
    except releases.ReleaseError as exc:
        raise DistanceError(f"{name}: {exc}") from exc


def distance_command(
    *,
    a: Path | None,
    b: Path | None,
    norm: str = "split",
    alpha: float = ALPHA,
    kappa: float = KAPPA,
    joints: Path | None = None,
    json_output: bool = False,
    compact: bool = True,
    accept_modified: bool = False,
) -> int:
    """`arena distance`: exit 0 with the result printed, 1 when an object cannot be read or
    compared, 2 on a usage error: a missing A or B, or an object of a release whose files no
    longer match its checksums.sha256 (unless `accept_modified`, which warns)."""
    try:
        if not (math.isfinite(alpha) and alpha > 0 and math.isfinite(kappa) and kappa > 0):
            raise DistanceError("--alpha and --kappa must be finite numbers > 0")
        if joints is not None:
            if a is not None or b is not None:
                raise DistanceError("give either two objects A B or --joints FILE, not both")
            if norm != "split":
                raise DistanceError(
                    "--joints supports the split norm only: joint lists carry no mass "
                    "distribution for the kinetic norm"
                )
            pairs = joint_list_distances(joints, alpha, kappa)
        elif a is None or b is None:
            raise DistanceError("give two objects A B, or --joints FILE")
        elif norm not in NORMS:
            raise DistanceError(f"--norm must be one of {', '.join(NORMS)}, not {norm!r}")
        for name, path in (("A", a), ("B", b), ("--joints", joints)):
            if path is not None:
                for warning in _checked_input(name, Path(path), accept_modified):
                    print(f"arena distance: warning: {warning}", file=sys.stderr)
    except DistanceError as exc:
        print(f"arena distance: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if joints is not None:
        if json_output:
            print(json.dumps({"pairs": pairs}))
        else:
            for i, p in enumerate(pairs):
                e = "undefined (unbounded limits)" if p["E"] is None else f"{p['E']:.6g}"
                print(f"pair {i}: E = {e}  E_phi = {p['E_phi']:.6g}")
        return EXIT_OK
    try:
        result = object_distance(a, b, norm, alpha, kappa if compact else None)
    except DistanceError as exc:
        print(f"arena distance: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps(result, indent=2) if json_output else distance_text(result))
    return EXIT_OK
