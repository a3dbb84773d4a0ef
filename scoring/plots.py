"""The PNG plots of `arena score`, drawn on matplotlib's Agg canvas (imported when drawing, so
importing the scoring modules stays cheap).

- `distribution_plot`: one method's E over objects, as empirical distribution functions of
  E_alpha^{phi,tree} (per joint, dimensionless) and E_B (metres), with the summary's mean and
  bootstrap interval;
- `supercategory_plot`: every method's means per supercategory with their bootstrap intervals,
  as the summary holds them (`summary["methods"][m]["supercategories"]`).

Fixed size and dpi and no software version in the metadata: the same scores give the same bytes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

DPI = 100
PNG_METADATA = {"Software": None}
#: The plotted scores: column of scores.parquet and its axis label (with the unit).
PLOTTED = (
    ("e_tree", r"$E_\alpha^{\varphi,\mathrm{tree}}$ per joint (dimensionless)"),
    ("e_b_m", r"$E_B$ (m)"),
)
INTERVAL_COLOR = "#9ecae1"
LINE_COLOR = "#28536b"
#: A distribution whose largest E exceeds this many times its median positive E is drawn on a
#: symmetric log axis (linear near 0), so that one outlier does not squeeze the rest.
HEAVY_TAIL = 20.0


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=DPI, metadata=PNG_METADATA)


def distribution_plot(path: Path, method: str, rows: list[dict], scores: dict):
    """One method's E over its objects (`rows`, its rows of scores.parquet): per score of
    PLOTTED, the share of objects with at most a given E, the mean (line) and its bootstrap
    interval (band) from `scores` (the summary's scores of the method). Returns the figure."""
    fig = _figure(10.0, 4.0)
    for column, (key, label) in enumerate(PLOTTED):
        ax = fig.add_subplot(1, len(PLOTTED), column + 1)
        values = np.sort([r[key] for r in rows if r["gen"] and r[key] is not None])
        stat = scores[key]
        if len(values):
            x = np.concatenate([[values[0]], values])
            y = np.arange(len(values) + 1) / len(values)
            ax.step(x, y, where="post", color=LINE_COLOR, linewidth=1.5)
            ax.plot(values, np.arange(1, len(values) + 1) / len(values), ".", color=LINE_COLOR)
            if stat["low"] is not None:
                ax.axvspan(stat["low"], stat["high"], color=INTERVAL_COLOR, alpha=0.5)
            ax.axvline(stat["mean"], color="#c8553d", linestyle="--", linewidth=1.2)
            ax.set_title(f"{len(values)} objects; mean {stat['mean']:.4g} (dashed)", fontsize=9)
        else:
            ax.text(0.5, 0.5, "not defined on any object", ha="center", transform=ax.transAxes)
        positive = values[values > 0]
        if len(positive) and positive[-1] > HEAVY_TAIL * np.median(positive):
            ax.set_xscale("symlog", linthresh=float(np.percentile(positive, 5)))
            ax.set_xlim(0.0, positive[-1] * 1.5)
            label += ", symmetric log axis"
        ax.set_ylim(0.0, 1.02)
        ax.set_xlabel(label)
        ax.set_ylabel("share of objects with E at most x")
        ax.grid(alpha=0.3)
    valid = sum(1 for r in rows if r["gen"])
    fig.suptitle(
        f"{method}: E over objects ({valid} of {len(rows)} with a valid output; "
        "band: bootstrap interval of the mean)",
        fontsize=10,
    )
    _save(fig, path)
    return fig


def supercategory_plot(path: Path, summary: dict) -> None:
    """Per supercategory (rows) and method (markers), the mean of each PLOTTED score with its
    bootstrap interval, as `summary` holds them."""
    from matplotlib import colormaps

    methods = summary["methods"]
    names = sorted({s for m in methods.values() for s in m["supercategories"]})
    objects = {
        s: max(
            m["supercategories"][s]["objects"]
            for m in methods.values()
            if s in m["supercategories"]
        )
        for s in names
    }
    height = 1.6 + 0.35 * len(names) * max(1.0, len(methods) / 2)
    fig = _figure(11.0, height)
    colors = colormaps["tab10"]
    offsets = np.linspace(-0.3, 0.3, len(methods)) if len(methods) > 1 else [0.0]
    for column, (key, label) in enumerate(PLOTTED):
        ax = fig.add_subplot(1, len(PLOTTED), column + 1)
        for m, (method, data) in enumerate(methods.items()):
            ys, means, errors = [], [], [[], []]
            for row, name in enumerate(names):
                stat = data["supercategories"].get(name, {}).get("scores", {}).get(key)
                if stat is None or stat["mean"] is None:
                    continue
                ys.append(row + offsets[m])
                means.append(stat["mean"])
                low = stat["low"] if stat["low"] is not None else stat["mean"]
                high = stat["high"] if stat["high"] is not None else stat["mean"]
                errors[0].append(stat["mean"] - low)
                errors[1].append(high - stat["mean"])
            ax.errorbar(
                means,
                ys,
                xerr=errors if ys else None,
                fmt="o",
                color=colors(m % 10),
                capsize=3,
                markersize=4,
                label=method,
            )
        ax.set_yticks(range(len(names)))
        ax.set_yticklabels([f"{s} ({objects[s]})" for s in names] if column == 0 else [])
        ax.set_ylim(len(names) - 0.5, -0.5)
        ax.set_xlabel(label)
        ax.grid(axis="x", alpha=0.3)
    fig.axes[0].set_ylabel("supercategory (objects)")
    fig.axes[-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="method")
    fig.suptitle("Means per supercategory with bootstrap intervals", fontsize=10)
    _save(fig, path)
