"""The release as dataset users load it: `datasets.load_dataset(<release>)` offline on the sample
release gives train/validation/test with the objects of each split, every config the card lists
loads with the rows of its table, and the card and LICENSES.md say what the sources are."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import PIL.Image
import pyarrow.parquet as pq
import pytest
import yaml

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
    for table in ("rejects", "review"):
        path = sample_release / "manifest" / f"{table}.parquet"
        assert pq.read_metadata(path).num_rows == 0, "the demo refuses nothing, reviews nothing"
        loaded = datasets.load_dataset(str(sample_release), table, streaming=True)
        assert list(loaded) == ["train"] and list(loaded["train"]) == []
        assert list(loaded["train"].features) == SCHEMAS[table].names
        builder = datasets.load_dataset_builder(str(sample_release), table, cache_dir=str(offline))
        builder.download_and_prepare()
        assert builder.info.splits["train"].num_examples == 0
        assert pq.read_table(path).schema.equals(SCHEMAS[table]), "typed, with zero rows"
    assert "Without rows in this release: `rejects`, `review`" in text


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
