"""Release-card statistics: plots exist, the Table 9 style table, byte-identical reruns, plots
kept in the build's cache by their data."""

from __future__ import annotations

import sys

import pandas as pd
import pytest

from pipeline.cache import ResultStore
from taxonomy import load_taxonomy, stats, write_release_statistics
from taxonomy.stats import PLOTS, _share_rank

DRAWINGS = ("_plot_category_sizes", "_plot_joint_types", "_plot_supercategories")


@pytest.fixture(scope="module")
def frames():
    """Objects in every supercategory (two categories each, sizes 1..30) and their joints."""
    tax = load_taxonomy()
    rows, size = [], 1
    for supercategory in tax.supercategories:
        names = [c.name for c in tax.categories.values() if c.supercategory == supercategory][:2]
        for category in names:
            for i in range(size):
                source = ("lib_a", "lib_b", "lib_c")[i % 3]
                rows.append((f"{category}_{i}", category, supercategory, source))
            size += 1
    objects = pd.DataFrame(rows, columns=["object_id", "category", "supercategory", "source"])
    types = ["fixed", "revolute", "revolute", "prismatic", "continuous", "helical"]
    joints = pd.DataFrame(
        [(oid, types[i % len(types)]) for i, oid in enumerate(objects["object_id"])],
        columns=["object_id", "type"],
    )
    return objects, joints


def test_writes_plots_and_a_table_row_per_supercategory(tmp_path, frames):
    objects, joints = frames
    markdown = write_release_statistics(objects, joints, tmp_path / "plots")
    for name in PLOTS.values():
        assert (tmp_path / "plots" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"(plots/{name})" in markdown
    table = [line for line in markdown.splitlines() if line.startswith("| ")][1:]
    supercategory_rows = [
        line for line in table if line.split("|")[1].strip() in set(objects["supercategory"])
    ]
    assert len(supercategory_rows) == 15
    # Ordered by size; the largest supercategory holds the two largest categories (29, 30).
    last = load_taxonomy().supercategories[-1]
    largest = supercategory_rows[0].split("|")
    assert largest[1].strip() == last and largest[2].strip() == "59"
    assert largest[3].strip() == "2"
    names = [c for c in objects[objects["supercategory"] == last]["category"].unique()]
    assert largest[4].strip() == f"{names[1]} (30), {names[0]} (29)"
    assert f"{len(objects):,} objects in 30 categories and 15 supercategories" in markdown


def test_joint_type_counts_in_the_markdown(tmp_path, frames):
    objects, joints = frames
    markdown = write_release_statistics(objects, joints, tmp_path)
    counts = joints["type"].value_counts()
    for joint_type in ("fixed", "revolute", "prismatic", "continuous", "helical"):
        assert f"| {joint_type} | {counts[joint_type]:,} |" in markdown


def test_png_bytes_are_identical_across_runs(tmp_path, frames):
    objects, joints = frames
    first = write_release_statistics(objects, joints, tmp_path / "a")
    second = write_release_statistics(objects, joints, tmp_path / "b")
    assert first == second
    for name in PLOTS.values():
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_share_rank_like_figure_14():
    # 10 objects: the largest category holds half, the two largest hold 80%.
    assert _share_rank([5, 3, 1, 1], 0.5) == 1
    assert _share_rank([5, 3, 1, 1], 0.8) == 2
    assert _share_rank([1, 1, 1, 1], 0.8) == 4


def test_empty_release_gives_markdown_without_plots(tmp_path):
    objects = pd.DataFrame(columns=["object_id", "category", "supercategory", "source"])
    joints = pd.DataFrame(columns=["object_id", "type"])
    markdown = write_release_statistics(objects, joints, tmp_path)
    assert "No objects." in markdown and "No joints." in markdown
    assert list(tmp_path.iterdir()) == []


def _sizes(counts) -> pd.Series:
    return pd.Series(counts, index=[f"c{i}" for i in range(len(counts))], dtype="int64")


def test_a_small_release_gets_a_linear_size_axis_on_which_every_bar_shows(tmp_path):
    ax = stats._plot_category_sizes(_sizes([5, 4, 4, 3, 3, 3]), tmp_path / "small.png")
    assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0
    heights = [bar.get_height() for bar in ax.patches]
    assert heights == [5, 4, 4, 3, 3, 3], "a count of 3 is a bar 3 high, from 0"
    assert [t.get_text() for t in ax.texts] == ["5", "4", "4", "3", "3", "3"]


def test_a_large_release_gets_a_log_axis_starting_below_one(tmp_path):
    ax = stats._plot_category_sizes(_sizes([900, 120, 40, 3, 1, 1]), tmp_path / "large.png")
    assert ax.get_yscale() == "log"
    low, high = ax.get_ylim()
    assert low < 1 and high >= 900, "every bar, even of one object, rises above the axis start"


def _plots(folder) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in PLOTS.values()}


def _count_drawings(monkeypatch) -> list[str]:
    """The names of the `_plot_*` functions called from here on, in call order."""
    drawn = []
    for name in DRAWINGS:
        plot = getattr(stats, name)
        monkeypatch.setattr(
            stats,
            name,
            lambda data, path, plot=plot, name=name: drawn.append(name) or plot(data, path),
        )
    return drawn


def test_cached_plots_are_written_without_drawing_or_importing_matplotlib(
    tmp_path, frames, monkeypatch
):
    objects, joints = frames
    cache = ResultStore(tmp_path / "cache", "code")
    fresh = write_release_statistics(objects, joints, tmp_path / "fresh")
    cold = write_release_statistics(objects, joints, tmp_path / "cold", cache)

    def refuse(data, path):
        raise AssertionError(f"{path.name} drawn although the cache holds it")

    for name in DRAWINGS:
        monkeypatch.setattr(stats, name, refuse)
    for module in [m for m in sys.modules if m.split(".")[0] == "matplotlib"]:
        monkeypatch.setitem(sys.modules, module, None)  # importing it now raises ImportError
    warm = write_release_statistics(objects, joints, tmp_path / "warm", cache)
    shuffled = objects.sample(frac=1.0, random_state=0)  # same plotted data, other row order
    reordered = write_release_statistics(shuffled, joints, tmp_path / "reordered", cache)
    assert fresh == cold == warm == reordered
    plots = _plots(tmp_path / "fresh")
    for folder in ("cold", "warm", "reordered"):
        assert _plots(tmp_path / folder) == plots, f"{folder}: not the bytes drawn fresh"


def test_changed_data_redraws_only_its_plot(tmp_path, frames, monkeypatch):
    objects, joints = frames
    cache = ResultStore(tmp_path / "cache", "code")
    write_release_statistics(objects, joints, tmp_path / "first", cache)
    drawn = _count_drawings(monkeypatch)
    fewer_joints = joints[joints["type"] != "helical"]
    write_release_statistics(objects, fewer_joints, tmp_path / "joints", cache)
    assert drawn == ["_plot_joint_types"]
    drawn.clear()
    renamed = objects.assign(source=objects["source"].replace("lib_c", "lib_d"))
    write_release_statistics(renamed, fewer_joints, tmp_path / "sources", cache)
    assert drawn == ["_plot_supercategories"], "the category sizes did not change"
    drawn.clear()
    write_release_statistics(renamed, fewer_joints, tmp_path / "fresh")
    assert len(drawn) == 3
    assert _plots(tmp_path / "sources") == _plots(tmp_path / "fresh")
    first, changed = _plots(tmp_path / "first"), _plots(tmp_path / "sources")
    assert [n for n in PLOTS.values() if first[n] != changed[n]] == [
        PLOTS["joint_types"],
        PLOTS["supercategories"],
    ]


def test_without_a_cache_every_plot_is_drawn_each_time(tmp_path, frames, monkeypatch):
    objects, joints = frames
    drawn = _count_drawings(monkeypatch)
    write_release_statistics(objects, joints, tmp_path / "a")
    write_release_statistics(objects, joints, tmp_path / "b")
    assert sorted(drawn) == sorted(DRAWINGS * 2)
    assert _plots(tmp_path / "a") == _plots(tmp_path / "b")
