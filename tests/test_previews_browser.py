"""The release browser's files: index.html, its data file and its details files at the release
root, holding every decided object with what the page lists and shows (the page itself:
test_browser_chromium.py)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from conftest import DOORS_SOURCE
from lxml import html as lxml_html

from previews.browser import CHUNK, DATA, DETAILS, INDEX, read_data, revision_link, write_browser

#: Each test builds a release: part of `make test`, not of `make test-fast`.
pytestmark = pytest.mark.slow


def manifest(release, name: str) -> pd.DataFrame:
    return pd.read_parquet(release / "manifest" / f"{name}.parquet")


def test_the_browser_lists_every_accepted_object_with_its_tree_and_files(
    decided_release, gl_backend
):
    data = read_data(decided_release)
    objects = manifest(decided_release, "objects").set_index("object_id")
    joints = manifest(decided_release, "joints")
    assert [o["id"] for o in data["objects"]] == sorted(objects.index)
    for o in data["objects"]:
        row = objects.loc[o["id"]]
        for key, column in (("bytes", "total_bytes"), ("split", "split"), ("eval200", "eval200")):
            assert o[key] == row[column]
        assert (o["category"], o["supercategory"], o["status"], o["source"]) == (
            row["category"],
            row["supercategory"],
            row["status"],
            row["source"],
        )
        counts = {t: int(row[f"n_{t}"]) for t in ("revolute", "prismatic", "continuous", "helical")}
        assert o["types"] == {t: n for t, n in counts.items() if n}
        d = o["details"]
        assert (d["source_id"], d["source_path"]) == (row["source_id"], row["source_path"])
        own = joints[joints["object_id"] == o["id"]].sort_values("joint_index")
        assert [j[0] for j in d["joints"]] == own["joint_name"].tolist()
        for j, lower in zip(d["joints"], own["lower"], strict=True):
            assert j[4] == (lower if math.isfinite(lower) else None)
        children = {j[3] for j in d["joints"]}
        assert len(set(d["links"]) - children) == 1, "one root link"
        folder = decided_release / "objects" / o["id"]
        assert (folder / d["urdf"]).is_file()
        assert o["preview"] and d["groups"] is not None
        for name, _ in d["groups"]:
            for end in ("lower", "upper"):
                assert (folder / "preview" / f"{name}-{end}.png").is_file()
        if o["source"] != "doors":  # the doors are boxes, without meshes
            assert d["meshes"] and all((folder / m).is_file() for m in d["meshes"])


def test_rejects_review_items_and_provenance_are_in_the_data(decided_release):
    data = read_data(decided_release)
    rejects = manifest(decided_release, "rejects")
    assert [r["id"] for r in data["rejects"]] == sorted(rejects["object_id"])
    assert {r["id"]: r["code"] for r in data["rejects"]} == {
        "doors__broken__cabinet": "xml.malformed",
        "doors__reversed__cabinet": "limits.reversed",
    }
    for r in data["rejects"]:
        row = rejects.set_index("object_id").loc[r["id"]]
        for key in ("source", "source_id", "source_path", "stage", "message", "path"):
            assert r[key] == row[key]
        assert r["path"] == r["source_path"] and not r["path"].startswith("/")

    review = manifest(decided_release, "review").set_index("object_id")
    listed = {o["id"]: o for o in data["objects"] if "review" in o}
    assert set(listed) == set(review.index)
    assert set(listed) == {"doors__far__cabinet", "sample_partnet__folding_chair_0007"}
    far = listed["doors__far__cabinet"]
    assert far["review"] == review.loc["doors__far__cabinet", "reason"]
    assert "attachment.axis" in far["review"]
    assert far["details"]["review"]["method"] == review.loc["doors__far__cabinet", "method"]

    files = manifest(decided_release, "source_files")
    for o in data["objects"]:
        own = files[files["object_id"] == o["id"]].sort_values("path")
        assert o["details"]["source_files"] == own[["path", "sha256"]].values.tolist()
    doors = data["sources"]["doors"]
    assert (doors["license"], doors["url"], doors["revision"]) == (
        DOORS_SOURCE["license"],
        DOORS_SOURCE["url"],
        DOORS_SOURCE["revision"],
    )
    assert doors["link"] == DOORS_SOURCE["url"] + "/tree/" + DOORS_SOURCE["revision"]
    assert data["sources"]["sample_mjcf"]["link"] is None


def test_the_page_loads_only_files_of_the_release(decided_release):
    page = lxml_html.fromstring((decided_release / INDEX).read_bytes())
    scripts = page.xpath("//script/@src")
    assert scripts == [DATA]
    assert not page.xpath("//link[@href] | //img[@src] | //iframe")
    text = (decided_release / INDEX).read_text()
    assert "http://" not in text and "https://" not in text and "fetch(" not in text
    listed = (decided_release / "checksums.sha256").read_text()
    assert f"  {INDEX}\n" in listed and f"  {DATA}\n" in listed
    assert f"  {DETAILS}/0.js\n" in listed


def test_details_files_hold_chunks_of_the_listed_objects(tmp_path):
    objects = [{"id": f"o{i:04d}", "details": {"n": i}} for i in range(2 * CHUNK + 1)]
    data = {"version": "v", "sources": {}, "objects": objects, "rejects": []}
    write_browser(tmp_path, data)
    assert sorted(p.name for p in (tmp_path / DETAILS).iterdir()) == ["0.js", "1.js", "2.js"]
    listed = (tmp_path / DATA).read_text(encoding="utf-8")
    assert '"details"' not in listed and json.dumps(f"o{2 * CHUNK:04d}") in listed
    assert read_data(tmp_path) == data


@pytest.mark.parametrize(
    ("url", "revision", "link"),
    [
        ("https://github.com/a/b", "abc", "https://github.com/a/b/tree/abc"),
        ("https://github.com/a/b.git", "abc", "https://github.com/a/b/tree/abc"),
        ("https://gitlab.com/a/b/", "v1", "https://gitlab.com/a/b/-/tree/v1"),
        ("https://github.com/a/b", None, "https://github.com/a/b"),
        ("https://example.org/data", "v2", "https://example.org/data"),
        ("javascript:alert(1)", "v2", None),
        (None, "v2", None),
    ],
)
def test_a_source_links_its_revision_where_the_forge_is_known(url, revision, link):
    assert revision_link(url, revision) == link
