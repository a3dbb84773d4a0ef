"""Figure 4 calibration as a curve: E_B against the material-motion discrepancy, by swept angle.

    .venv/bin/python bench/calibration_curve.py

For every revolute joint of the shared corpus (tests/corpus_sources.yaml, loaded through the
project's adapters) whose moved link has a mass distribution (`child_mass_moments`, world
frame), the joint is given the range [0, theta] for swept angles theta from 5 to 180 degrees
and compared with three perturbations of itself:

- axis: the axis tilted by 5 degrees about a random direction perpendicular to it (same pivot);
- origin: the pivot moved perpendicular to the axis by 10 % of the link's RMS radius
  (sqrt(tr I / 2 m), the spread of its material about its centre of mass);
- limit: the range widened by 10 % ([0, 1.1 theta]).

E_B is the joint distance in the link's kinetic norm, the material motion is
`material_motion_distance` (both endpoint twists exponentiated, RMS displacement of the link's
material, swap minimum). Left panel: E_B against the material motion of every joint,
perturbation and angle (log-log, coloured by swept angle; the paper's Figure 4 colours by
perturbation only). Right panel: the median and interquartile band of E_B / material motion
over the joints against theta, one curve per perturbation, with the closed form theta / (2 sin
(theta / 2)) of a hinge against the fixed joint for reference. Writes
bench/results/calibration_curve.png and bench/results/calibration_curve.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import metric  # noqa: E402
from normalize.adapters import (
    discover,  # noqa: E402
    get_adapter,  # noqa: E402
)
from normalize.sources import load_sources  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "tests" / "corpus_sources.yaml"
RESULTS = ROOT / "bench" / "results"
ANGLES_DEG = np.arange(5, 181, 5)
AXIS_TILT = np.radians(5.0)
ORIGIN_SHIFT = 0.10  # of the link's RMS radius
LIMIT_WIDENING = 1.10


def corpus_hinges():
    """(names, axis (N, 3), point (N, 3), mass (N,), com (N, 3), inertia (N, 3, 3)) of every
    corpus revolute joint whose moved link has mass, all in the world frame at rest."""
    names, axes, points, moments = [], [], [], []
    for source in load_sources(SOURCES):
        adapter = get_adapter(source.format)
        for candidate in discover(source):
            try:
                obj = adapter.load(candidate)
            except Exception:  # noqa: BLE001 - refused assets are simply not part of the pool
                continue
            joints = tuple(j for j in obj.joints if j.type == "revolute")
            if not joints:
                continue
            screws = obj.screws(joints)
            mass, com, inertia = obj.child_mass_moments(joints)
            for i in np.flatnonzero(mass > 0.0):
                names.append(f"{source.name}/{candidate.source_id}/{screws.names[i]}")
                axes.append(screws.axis[i])
                points.append(screws.point[i])
                moments.append((mass[i], com[i], inertia[i]))
    mass, com, inertia = (np.array(x) for x in zip(*moments, strict=True))
    return names, np.array(axes), np.array(points), mass, com, inertia


def hinge_twists(axis, point):
    axis = axis / np.linalg.norm(axis, axis=1, keepdims=True)
    return np.hstack([axis, np.cross(point, axis)])


def perpendicular(axis, rng):
    """A random unit direction perpendicular to each axis."""
    r = rng.normal(size=axis.shape)
    r -= (r * axis).sum(axis=1, keepdims=True) * axis
    return r / np.linalg.norm(r, axis=1, keepdims=True)


def tilted(axis, direction, angle):
    """Each axis rotated by `angle` towards `direction` (a unit vector perpendicular to it)."""
    return np.cos(angle) * axis + np.sin(angle) * direction


def main() -> None:
    rng = np.random.default_rng(2026)
    names, axis, point, mass, com, inertia = corpus_hinges()
    axis = axis / np.linalg.norm(axis, axis=1, keepdims=True)
    grams, valid = metric.kinetic_norms(mass, com, inertia)
    keep = np.flatnonzero(valid)
    names = [names[i] for i in keep]
    axis, point, mass, com, inertia, grams = (
        x[keep] for x in (axis, point, mass, com, inertia, grams)
    )
    n = len(names)
    radius = np.sqrt(np.trace(inertia, axis1=1, axis2=2) / (2.0 * mass))
    twist = hinge_twists(axis, point)
    perturbed_twist = {
        "axis": hinge_twists(tilted(axis, perpendicular(axis, rng), AXIS_TILT), point),
        "origin": hinge_twists(
            axis, point + ORIGIN_SHIFT * radius[:, None] * perpendicular(axis, rng)
        ),
        "limit": twist,
    }
    zeros = np.zeros(n)
    points = []  # (E_B, material motion, theta in degrees) of every joint, kind and angle
    curves: dict = {k: {"median": [], "q25": [], "q75": [], "max": []} for k in perturbed_twist}
    for theta in np.radians(ANGLES_DEG):
        base = metric.Joints(twist, zeros, np.full(n, theta))
        for kind, other_twist in perturbed_twist.items():
            upper = theta * (LIMIT_WIDENING if kind == "limit" else 1.0)
            other = metric.Joints(other_twist, zeros, np.full(n, upper))
            e_b = metric.joint_distance(base, other, grams)
            motion = metric.material_motion_distance(base, other, mass, com, inertia)
            ratio = e_b / motion
            points.append((e_b, motion, np.full(n, np.degrees(theta))))
            q25, median, q75 = np.percentile(ratio, [25, 50, 75])
            curve = curves[kind]
            curve["median"].append(float(median))
            curve["q25"].append(float(q25))
            curve["q75"].append(float(q75))
            curve["max"].append(float(ratio.max()))
    hinge = np.radians(ANGLES_DEG) / (2.0 * np.sin(np.radians(ANGLES_DEG) / 2.0))

    figure, (scatter, ax) = plt.subplots(1, 2, figsize=(13.0, 4.8), dpi=110)
    e_b, motion, swept = (np.concatenate(x) for x in zip(*points, strict=True))
    dots = scatter.scatter(motion, e_b, c=swept, s=3, cmap="viridis", alpha=0.6)
    span = [min(motion.min(), e_b.min()), max(motion.max(), e_b.max())]
    scatter.plot(span, span, "k--", linewidth=0.8, label="E_B = material motion")
    scatter.set_xscale("log")
    scatter.set_yscale("log")
    scatter.set_xlabel("material-motion discrepancy (m)")
    scatter.set_ylabel("E_B (m)")
    scatter.set_title("axis, pivot and limit perturbations, every joint and angle")
    scatter.legend(loc="upper left")
    figure.colorbar(dots, ax=scatter, label="swept angle θ (degrees)")
    styles = {"axis": ("tab:blue", "-", None), "origin": ("tab:orange", ":", "o")}
    styles["limit"] = ("tab:green", "-", None)
    for kind, (colour, line, marker) in styles.items():
        curve = curves[kind]
        ax.plot(
            ANGLES_DEG,
            curve["median"],
            color=colour,
            linestyle=line,
            marker=marker,
            markersize=3,
            label=f"{kind} perturbation (median)",
        )
        ax.fill_between(ANGLES_DEG, curve["q25"], curve["q75"], color=colour, alpha=0.2)
    ax.plot(ANGLES_DEG, hinge, "k--", linewidth=0.8, label="hinge against fixed: θ / (2 sin(θ/2))")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xlabel("swept angle θ of the joint (degrees)")
    ax.set_ylabel("E_B / material-motion discrepancy")
    ax.set_title(f"E_B / material motion on {n} corpus hinges (band: interquartile range)")
    ax.legend(loc="upper left")
    ax.grid(alpha=0.3)
    figure.tight_layout()
    RESULTS.mkdir(parents=True, exist_ok=True)
    figure.savefig(RESULTS / "calibration_curve.png")

    report = {
        "joints": n,
        "perturbations": {
            "axis": "axis tilted by 5 degrees, same pivot",
            "origin": "pivot moved perpendicular to the axis by 10 % of the link's RMS radius",
            "limit": "range [0, theta] widened to [0, 1.1 theta]",
        },
        "angles_deg": ANGLES_DEG.tolist(),
        "ratio_e_b_over_material_motion": curves,
        "hinge_against_fixed_closed_form": hinge.tolist(),
    }
    (RESULTS / "calibration_curve.json").write_text(json.dumps(report, indent=2) + "\n")
    for kind, curve in curves.items():
        at = {d: curve["median"][list(ANGLES_DEG).index(d)] for d in (10, 30, 90, 180)}
        print(kind, " ".join(f"{d} deg: {v:.3f}" for d, v in at.items()))
    print(f"{n} joints; wrote {RESULTS / 'calibration_curve.png'}")


if __name__ == "__main__":
    main()
