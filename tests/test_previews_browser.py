"""The release browser's files: index.html and its one data file at the release root, holding
every object with what the page lists and shows (the page itself: test_browser_chromium.py)."""

from __future__ import annotations

import math

import pandas as pd
from lxml import html as lxml_html

from previews.browser import DATA, INDEX, read_data


def test_the_browser_lists_every_object_with_its_tree_and_files(sample_release, gl_backend):
    data = read_data(sample_release)
    objects = pd.read_parquet(sample_release / "manifest" / "objects.parquet")
    joints = pd.read_parquet(sample_release / "manifest" / "joints.parquet")
    assert [o["id"] for o in data["objects"]] == sorted(objects["object_id"])
    assert data["supercategories"] == sorted(objects["supercategory"].unique())
    for o in data["objects"]:
        row = objects.set_index("object_id").loc[o["id"]]
        assert (o["category"], o["supercategory"], o["status"]) == (
            row["category"],
            row["supercategory"],
            row["status"],
        )
        counts = {t: int(row[f"n_{t}"]) for t in ("revolute", "prismatic", "continuous", "helical")}
        assert o["types"] == {t: n for t, n in counts.items() if n}
        own = joints[joints["object_id"] == o["id"]].sort_values("joint_index")
        assert [j[0] for j in o["joints"]] == own["joint_name"].tolist()
        for j, lower in zip(o["joints"], own["lower"], strict=True):
            assert j[4] == (lower if math.isfinite(lower) else None)
        children = {j[3] for j in o["joints"]}
        assert len(set(o["links"]) - children) == 1, "one root link"
        folder = sample_release / "objects" / o["id"]
        assert (folder / o["urdf"]).is_file()
        assert o["meshes"] and all((folder / m).is_file() for m in o["meshes"])
        assert o["groups"] is not None
        for name, _ in o["groups"]:
            for end in ("lower", "upper"):
                assert (folder / "preview" / f"{name}-{end}.png").is_file()


def test_the_page_loads_only_files_of_the_release(sample_release):
    page = lxml_html.fromstring((sample_release / INDEX).read_bytes())
    scripts = page.xpath("//script/@src")
    assert scripts == [DATA]
    assert not page.xpath("//link[@href] | //img[@src] | //iframe")
    text = (sample_release / INDEX).read_text()
    assert "http://" not in text and "https://" not in text and "fetch(" not in text
    listed = (sample_release / "checksums.sha256").read_text()
    assert f"  {INDEX}\n" in listed and f"  {DATA}\n" in listed
