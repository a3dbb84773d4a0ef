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
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

from export import release as releases
from metric import Joints, joint_distance, kinetic_norms, split_norm
from normalize.errors import AssetError
from normalize.files import broken_link
from scoring.compare import match_trees, tie_broken
from scoring.defaults import ALPHA, KAPPA
from scoring.objects import Kinematics, kinematics, read_any

NORMS = ("split", "kinetic")
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


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
    return {
        "a": str(a),
        "b": str(b),
        "norm": norm,
        "alpha": alpha if norm == "split" else None,
        "kappa": kappa,
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
            }
            for (i, k), cost, flip in zip(match.pairs, match.pair_cost, match.inverted, strict=True)
        ],
        "unmatched_a": [
            {"joint": first.names[i], "E": float(cost)}
            for i, cost in zip(match.unmatched_pred, match.unmatched_pred_cost, strict=True)
        ],
        "unmatched_b": [
            {"joint": second.names[k], "E": float(cost)}
            for k, cost in zip(match.unmatched_gt, match.unmatched_gt_cost, strict=True)
        ],
    }


def distance_text(d: dict) -> str:
    """Human-readable form of `object_distance`'s result."""
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
    lines = [
        f"{symbol}(A, B) = {d['E_tree']:.6g}  ({d['norm']} norm, {setting})",
        status,
        "matched joints (A -> B):" if d["pairs"] else "no matched joints",
    ]
    lines += [
        f"  {p['a_joint']} -> {p['b_joint']}  E = {p['E']:.6g}"
        + ("  (edge reversed: A's joint inverted)" if p["inverted"] else "")
        for p in d["pairs"]
    ]
    for key, what in (("unmatched_a", "of A (contracted)"), ("unmatched_b", "of B (expanded)")):
        if d[key]:
            lines.append(f"unmatched joints {what}:")
            lines += [f"  {u['joint']}  E(J, J0) = {u['E']:.6g}" for u in d[key]]
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
