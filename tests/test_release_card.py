"""The release as dataset users load it: `datasets.load_dataset(<release>)` offline on the sample
release gives train/validation/test with the objects of each split and an Image thumbnail, every
table is a config (an empty one loads with zero rows when streamed), and the card and LICENSES.md
say what the sources are, under which licenses (a note and an access request for non-commercial
ones), what the data is for and what the checks do not prove."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import PIL.Image
import pyarrow.parquet as pq
import pytest
import yaml

from export import card
from export.manifests import SCHEMAS, TABLES

datasets = pytest.importorskip("datasets")


@pytest.fixture()
def offline(tmp_path, monkeypatch):
    """datasets without network, with a private cache folder."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    return tmp_path / "hf-cache"


def front_matter(release) -> dict:
    return yaml.safe_load((release / "README.md").read_text().split("---\n")[1])


def test_load_dataset_gives_the_three_splits(sample_release, offline):
    objects = pq.read_table(sample_release / "manifest" / "objects.parquet").to_pylist()
    expected = Counter(o["split"] for o in objects)
    assert set(expected) == {"train", "validation", "test"}, "the sample has every split"
    loaded = datasets.load_dataset(str(sample_release), cache_dir=str(offline))
    assert isinstance(loaded, datasets.DatasetDict)
    assert {name: ds.num_rows for name, ds in loaded.items()} == dict(expected)
    ids = {name: set(ds["object_id"]) for name, ds in loaded.items()}
    for o in objects:
        assert o["object_id"] in ids[o["split"]]
    assert set(loaded["train"]["split"]) == {"train"}


def test_the_default_config_shows_a_thumbnail_of_every_object(sample_release, offline, gl_backend):
    loaded = datasets.load_dataset(str(sample_release), cache_dir=str(offline))
    for split in loaded.values():
        assert isinstance(split.features["thumbnail"], datasets.Image)
        for row in split:
            image = row["thumbnail"]
            assert image.size == (256, 256), row["object_id"]
            rest = sample_release / Path(row["preview_path"]).parent / "rest.png"
            assert image.tobytes() == PIL.Image.open(rest).tobytes()
    stored = pq.read_table(sample_release / "data" / "objects" / "train.parquet")
    thumbnail = stored.column("thumbnail")[0].as_py()
    assert thumbnail["path"].startswith("objects/") and thumbnail["path"].endswith("/rest.png")
    assert thumbnail["bytes"] == (sample_release / thumbnail["path"]).read_bytes()
    card = (sample_release / "README.md").read_text()
    assert "| `thumbnail` | `Image` | The object at rest" in card


def test_split_files_read_their_thumbnails_a_row_group_at_a_time(
    sample_release, tmp_path, monkeypatch
):
    """A split file is written SPLIT_ROWS objects (and thumbnails) at a time: the same rows in
    more row groups when there are more objects."""
    from export import assemble

    (tmp_path / "objects").symlink_to(sample_release / "objects")
    monkeypatch.setattr(assemble, "SPLIT_ROWS", 3)
    assemble._write_splits(pq.read_table(sample_release / "manifest" / "objects.parquet"), tmp_path)
    for split in ("train", "validation", "test"):
        written = pq.ParquetFile(tmp_path / card.split_path(split))
        shipped = pq.read_table(sample_release / card.split_path(split))
        assert written.read().equals(shipped)
        sizes = [written.metadata.row_group(k).num_rows for k in range(written.num_row_groups)]
        full, rest = divmod(shipped.num_rows, 3)
        assert sizes == [3] * full + ([rest] if rest else [])


def test_every_config_of_the_card_loads(sample_release, offline):
    configs = front_matter(sample_release)["configs"]
    rows = {
        t: pq.read_metadata(sample_release / "manifest" / f"{t}.parquet").num_rows for t in TABLES
    }
    assert [c["config_name"] for c in configs] == list(TABLES), "every table, with rows or not"
    for config in configs:
        name = config["config_name"]
        if rows[name] == 0:
            continue  # test_empty_tables_load_as_empty_datasets
        loaded = datasets.load_dataset(str(sample_release), name, cache_dir=str(offline))
        assert sum(ds.num_rows for ds in loaded.values()) == rows[name]


def test_empty_tables_load_as_empty_datasets(sample_release, offline):
    text = (sample_release / "README.md").read_text()
    # The demo reviews one object while collision meshes ship as one convex hull each: the
    # PartNet-format folding chair, whose seat folds into the hull of its one-mesh frame.
    review = pq.read_table(sample_release / "manifest" / "review.parquet").to_pylist()
    assert [r["object_id"] for r in review] == ["sample_partnet__folding_chair_0007"]
    assert "mechanism.penetration" in review[0]["reason"]
    for table in ("rejects",):
        path = sample_release / "manifest" / f"{table}.parquet"
        assert pq.read_metadata(path).num_rows == 0, "the demo refuses nothing"
        loaded = datasets.load_dataset(str(sample_release), table, streaming=True)
        assert list(loaded) == ["train"] and list(loaded["train"]) == []
        assert list(loaded["train"].features) == SCHEMAS[table].names
        builder = datasets.load_dataset_builder(str(sample_release), table, cache_dir=str(offline))
        builder.download_and_prepare()
        assert builder.info.splits["train"].num_examples == 0
        assert pq.read_table(path).schema.equals(SCHEMAS[table]), "typed, with zero rows"
    assert "Without rows in this release: `rejects`." in text


def test_card_metadata_licenses_and_citation(sample_release):
    front = front_matter(sample_release)
    assert front["license"] == "cc0-1.0", "every sample source gives SPDX CC0-1.0"
    assert front["task_categories"] == ["robotics"]
    assert front["pretty_name"] and "articulated-objects" in front["tags"]
    text = (sample_release / "README.md").read_text()
    assert "## Dataset structure" in text and "## Citation" in text
    for table in TABLES:
        assert f"### {table} (" in text
    licenses = (sample_release / "LICENSES.md").read_text()
    for name in ("sample_partnet", "sample_urdf", "sample_mjcf", "sample_sdf"):
        assert f"## {name}" in licenses
    names = ["sample_partnet", "sample_urdf", "sample_urdf_yup", "sample_mjcf", "sample_sdf"]
    assert front["source_datasets"] == names, "one per source library, none shares an upstream"
    assert "extra_gated_prompt" not in front, "no sample source is non-commercial"
    licenses_section = text.split("## Licenses")[1].split("\n## ")[0]
    assert "| source | license (as stated) | SPDX | non-commercial | objects |" in licenses_section
    stated = "CC0-1.0 (procedurally generated by `arena generate`)"
    for name in names:
        assert f"| {name} | {stated} | CC0-1.0 | no |" in licenses_section
    assert "Non-commercial sources" not in text
    for section in ("## Links", "### Direct use", "### Out-of-scope use", "## Limitations"):
        assert section in text
    assert f"]({card.PAPER_URL})" in text and card.PROJECT_PAGE in text
    # where the objects load, counted over the manifest's loads_in
    objects = pq.read_table(sample_release / "manifest" / "objects.parquet").to_pylist()
    mujoco = sum("mujoco" in o["loads_in"] for o in objects)
    assert mujoco == len(objects) == 40
    assert f"| MuJoCo (object.urdf) | {mujoco}/{len(objects)} |" in text


def card_info(sources: list[dict]) -> dict:
    """release.json's content as the card reads it, for `sources` (name, license, spdx and
    provenance), each with one accepted object."""
    counts = {"discovered": 1, "accepted": 1, "rejected": 0}
    return {
        "version": "1",
        "convention_version": "1",
        "taxonomy_version": "1",
        "content_hash": "0" * 64,
        "sources": [{"format": "urdf", **counts, **s} for s in sources],
        "counts": {
            "accepted": len(sources),
            "rejected": 0,
            "moving_joints": 1,
            "eval200": 1,
            "by_status": {"pass": len(sources)},
            "rejects_by_stage": {},
        },
    }


def test_a_non_commercial_source_gets_a_note_and_an_access_request():
    partnet = {
        "name": "partnet_mobility",
        "license": "PartNet-Mobility / SAPIEN terms of use (non-commercial research)",
        "url": "https://github.com/haosulab/SAPIEN",
    }
    shapes = {"name": "shapes", "license": "CC BY-NC 4.0", "spdx": "CC-BY-NC-4.0"}
    drake = {"name": "drake", "license": "BSD-3-Clause", "spdx": "BSD-3-Clause"}
    pybullet = {"name": "pybullet_data", "license": "zlib", "spdx": "Zlib", "url": "https://p"}
    pybullet_sdf = {**pybullet, "name": "pybullet_data_sdf"}
    cited = {**drake, "name": "cited", "citation": "@misc{cited, title={C}}"}
    sources = [partnet, shapes, drake, pybullet, pybullet_sdf, cited]
    objects = [{"split": "train", "warnings": []}] * len(sources)
    text = card.card_markdown(card_info(sources), objects, [], "", {"objects": len(objects)})
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["source_datasets"] == [
        "partnet_mobility",
        "shapes",
        "drake",
        "pybullet_data",
        "cited",
    ], "pybullet_data_sdf is the same library as pybullet_data (same url)"
    assert front["license"] == "other", "partnet_mobility gives no SPDX id"
    assert (
        "partnet_mobility, shapes are licensed for non-commercial use only"
        in (front["extra_gated_prompt"])
    )
    assert list(front["extra_gated_fields"].values()) == ["checkbox"]
    assert "| partnet_mobility | PartNet-Mobility / SAPIEN terms of use (non-commercial " in text
    assert "| shapes | CC BY-NC 4.0 | CC-BY-NC-4.0 | **yes** | 1 |" in text
    assert "| drake | BSD-3-Clause | BSD-3-Clause | no | 1 |" in text
    assert "**Non-commercial sources.** The 2 objects of `partnet_mobility`, `shapes`" in text
    assert "| partnet_mobility | urdf | https://github.com/haosulab/SAPIEN | 1 | 1 | 0 |" in text
    citation = text.split("## Citation")[1]
    assert "@article{he2026articulatearena" in citation
    assert "`cited`:\n\n```bibtex\n@misc{cited, title={C}}\n```" in citation
    licenses = card.licenses_markdown(card_info(sources))
    assert licenses.count("- non-commercial use only") == 2


def test_licenses_that_allow_commercial_use_get_no_note():
    sources = [
        {"name": "a", "license": "MIT", "spdx": "MIT"},
        {"name": "b", "license": "unstated"},
        {"name": "c", "license": "Apache License 2.0 (Foo Inc.)", "spdx": "Apache-2.0"},
        {"name": "d", "license": "CC-BY-4.0", "spdx": "CC-BY-4.0"},
    ]
    assert not any(card.non_commercial(s) for s in sources)
    objects = [{"split": "train", "warnings": []}] * len(sources)
    text = card.card_markdown(card_info(sources), objects, [], "", {"objects": len(objects)})
    assert "extra_gated_prompt" not in text and "Non-commercial sources" not in text
    assert "please cite them too" not in text, "no source declares a citation"
