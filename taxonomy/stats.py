"""Statistics for the release card: category sizes by rank, joint types, supercategories.

`write_release_statistics` writes three PNG plots and returns Markdown that links them as
`plots/<name>.png` (relative to the release root). The PNG bytes depend only on the data: fixed
figure size and dpi, no timestamps or software version in the metadata. With a cache (the
build's `pipeline.cache.ResultStore`), a plot whose data was drawn before is copied from it
without importing matplotlib.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from importlib.metadata import version
from pathlib import Path

import pandas as pd

from normalize.model import JOINT_TYPES

FIGSIZE = (8.0, 4.5)
DPI = 100
PNG_METADATA = {"Software": None}
LOG_AXIS_FROM = 100  # largest category size from which the category-size axis is logarithmic
LOG_AXIS_BOTTOM = 0.7  # a log axis starts below 1: a category of one object still shows a bar
ANNOTATED_BARS = 40  # up to this many categories, each bar has its count
PLOTS = {
    "category_sizes": "category_sizes.png",
    "joint_types": "joint_types.png",
    "supercategories": "supercategories_by_source.png",
}
PLOT_VERSION = 1  # raise when a change of the drawing code changes the PNG bytes


def _share_rank(sizes: list[int], share: float) -> int:
    """How many of the largest categories hold at least `share` of the objects."""
    total, running = sum(sizes), 0
    for rank, size in enumerate(sizes, start=1):
        running += size
        if running >= share * total:
            return rank
    return len(sizes)


def _figure():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=FIGSIZE, dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=DPI, metadata=PNG_METADATA)


def _plot_category_sizes(sizes: pd.Series, path: Path):
    """Bars of category sizes by rank and the cumulative share; returns the bars' Axes. The
    size axis is logarithmic only when the largest category holds LOG_AXIS_FROM objects or
    more, and then starts below 1 so that every bar shows (a log axis fitted to the data
    started at the smallest count and drew its bars empty); a small release gets a linear axis
    from 0 with whole-number ticks and the count above each bar."""
    from matplotlib.ticker import MaxNLocator

    fig = _figure()
    ax = fig.add_subplot()
    ranks = list(range(1, len(sizes) + 1))
    values = sizes.to_list()
    few = len(values) <= ANNOTATED_BARS
    ax.bar(
        ranks,
        values,
        width=0.85 if few else 1.0,
        color="#c8553d",
        edgecolor="white" if few else "none",
    )
    if max(values) >= LOG_AXIS_FROM:
        ax.set_yscale("log")
        ax.set_ylim(bottom=LOG_AXIS_BOTTOM)
        ax.set_ylabel("objects (log scale)")
    else:
        ax.set_ylim(0, max(values) * 1.15)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("objects")
    if few:
        for rank, value in zip(ranks, values, strict=True):
            ax.annotate(f"{value:,}", (rank, value), ha="center", va="bottom", fontsize=7)
    ax.set_xlabel("category rank")
    cumulative = ax.twinx()
    share = sizes.cumsum() / max(int(sizes.sum()), 1) * 100.0
    cumulative.plot(ranks, share.to_list(), color="#28536b", linewidth=2)
    cumulative.set_ylim(0, 100)
    cumulative.set_ylabel("cumulative share of objects (%)")
    for level in (50, 80):
        rank = _share_rank(values, level / 100)
        cumulative.axhline(level, color="#888888", linewidth=0.8, linestyle=":")
        cumulative.annotate(f"{level}% in {rank}", (rank, level), fontsize=8)
    ax.set_title("Category sizes by rank")
    _save(fig, path)
    return ax


def _plot_joint_types(counts: pd.Series, path: Path) -> None:
    fig = _figure()
    ax = fig.add_subplot()
    ax.bar(counts.index.to_list(), counts.to_list(), color="#28536b")
    for x, value in enumerate(counts.to_list()):
        ax.annotate(f"{value:,}", (x, value), ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("joints")
    ax.set_title("Joint types")
    _save(fig, path)


def _plot_supercategories(table: pd.DataFrame, path: Path) -> None:
    from matplotlib import colormaps

    fig = _figure()
    ax = fig.add_subplot()
    colors = colormaps["tab20"]
    bottom = [0] * len(table)
    for i, source in enumerate(table.columns):
        values = table[source].to_list()
        ax.barh(table.index.to_list(), values, left=bottom, color=colors(i % 20), label=source)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.invert_yaxis()
    ax.set_xlabel("objects")
    ax.set_title("Objects per supercategory, by source")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="source")
    _save(fig, path)


@functools.cache
def _matplotlib_version() -> str:
    """The installed matplotlib's version, read without importing it."""
    return version("matplotlib")


def _plot_key(name: str, data: pd.Series | pd.DataFrame) -> str:
    """sha256 of what plot `name` draws: the data's index, columns, dtypes and values, the
    drawing code's PLOT_VERSION and matplotlib's version (which may change the pixels)."""
    frame = data.to_frame() if isinstance(data, pd.Series) else data
    drawn = {
        "plot": name,
        "version": PLOT_VERSION,
        "matplotlib": _matplotlib_version(),
        "index": frame.index.to_list(),
        "columns": frame.columns.to_list(),
        "dtypes": [str(dtype) for dtype in frame.dtypes],
        "values": frame.to_numpy().tolist(),
    }
    return hashlib.sha256(json.dumps(drawn, sort_keys=True).encode("utf-8")).hexdigest()


def _draw(name: str, plot, data, out_dir: Path, cache) -> None:
    """Write plot `name` of `data` into `out_dir`: the PNG kept in `cache` for the same data,
    else drawn by `plot` (and kept there)."""
    path = out_dir / PLOTS[name]
    if cache is None:
        plot(data, path)
        return
    key = _plot_key(name, data)
    stored = cache.get(key)
    if stored is not None:
        path.write_bytes(base64.b64decode(stored["png"]))
        return
    plot(data, path)
    cache.put(key, {"png": base64.b64encode(path.read_bytes()).decode("ascii")})


def write_release_statistics(
    objects: pd.DataFrame, joints: pd.DataFrame, out_dir: Path, cache=None
) -> str:
    """Write the release plots into `out_dir` and return the Markdown section that shows them.

    objects: one row per object with columns object_id, category, supercategory, source;
    joints: one row per joint with columns object_id, type (fixed joints included).
    cache: where the plots' PNG bytes are kept by `_plot_key` (`get(key) -> dict | None`,
    `put(key, dict)`: `pipeline.cache.ResultStore`), or None to draw every plot.
    The Markdown has the per-supercategory table (objects, categories, three largest
    categories with counts, ordered by size), joint-type counts, and image links
    `plots/<file>.png`."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    n_objects = len(objects)
    counts = objects.groupby("category").size()
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))  # largest first, then by name
    sizes = pd.Series([n for _, n in ranked], index=[c for c, _ in ranked], dtype="int64")
    type_counts = joints.groupby("type").size() if len(joints) else pd.Series(dtype=int)
    order = [t for t in JOINT_TYPES if t in type_counts.index] + sorted(
        t for t in type_counts.index if t not in JOINT_TYPES
    )
    type_counts = type_counts.reindex(order)

    rows = []
    for supercategory, group in objects.groupby("supercategory"):
        per_category = group.groupby("category").size()
        largest = sorted(per_category.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        rows.append((supercategory, len(group), len(per_category), largest))
    rows.sort(key=lambda r: (-r[1], r[0]))

    by_source = (
        objects.groupby(["supercategory", "source"]).size().unstack(fill_value=0)
        if n_objects
        else pd.DataFrame()
    )
    by_source = by_source.reindex([r[0] for r in rows]).reindex(sorted(by_source.columns), axis=1)

    if n_objects:
        _draw("category_sizes", _plot_category_sizes, sizes, out_dir, cache)
        _draw("supercategories", _plot_supercategories, by_source, out_dir, cache)
    if len(type_counts):
        _draw("joint_types", _plot_joint_types, type_counts, out_dir, cache)

    lines = ["## Categories", ""]
    if n_objects:
        half, most = _share_rank(sizes.to_list(), 0.5), _share_rank(sizes.to_list(), 0.8)
        lines += [
            f"{n_objects:,} objects in {len(sizes):,} categories and {len(rows)} supercategories. "
            f"The largest {half:,} categories hold half of the objects and the largest "
            f"{most:,} hold 80%.",
            "",
            f"![Category sizes by rank](plots/{PLOTS['category_sizes']})",
            "",
            "| Supercategory | Objects | Categories | Largest categories |",
            "| --- | ---: | ---: | --- |",
        ]
        for supercategory, count, n_categories, largest in rows:
            top = ", ".join(f"{c} ({n:,})" for c, n in largest)
            lines.append(f"| {supercategory} | {count:,} | {n_categories:,} | {top} |")
        lines += ["", f"![Objects per supercategory, by source](plots/{PLOTS['supercategories']})"]
    else:
        lines.append("No objects.")
    lines += ["", "## Joints", ""]
    if len(type_counts):
        total = int(type_counts.sum())
        lines += ["| Joint type | Joints | Share |", "| --- | ---: | ---: |"]
        for joint_type, count in type_counts.items():
            lines.append(f"| {joint_type} | {int(count):,} | {100.0 * count / total:.1f}% |")
        lines += ["", f"![Joint types](plots/{PLOTS['joint_types']})"]
    else:
        lines.append("No joints.")
    return "\n".join(lines) + "\n"
