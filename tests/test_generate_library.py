"""`arena generate`: determinism, layout, sources.yaml, coverage and well-formed truth.json."""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from normalize.sources import load_sources
from samples.generate import generate_library

KINDS = {
    "cabinet",
    "refrigerator",
    "laptop",
    "scissors",
    "faucet",
    "bottle",
    "cart",
    "folding_chair",
    "window",
    "keyboard",
}
SOURCE_FORMATS = {
    "sample_partnet": "partnet_mobility",
    "sample_urdf": "urdf",
    "sample_urdf_yup": "urdf",
    "sample_mjcf": "mjcf",
    "sample_sdf": "sdf",
}


def tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def truths(root: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(root.glob("sample_*/*/truth.json"))]


@pytest.fixture(scope="module")
def many(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("many")
    generate_library(out, n=400, seed=5)
    return out


def test_same_seed_gives_identical_files_and_another_seed_differs(tmp_path):
    hashes = {}
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        generate_library(tmp_path / name, n=60, seed=seed)
        hashes[name] = tree_hash(tmp_path / name)
    assert hashes["a"] == hashes["b"]
    assert hashes["a"] != hashes["c"]
    generate_library(tmp_path / "d")
    generate_library(tmp_path / "e")
    assert tree_hash(tmp_path / "d") == tree_hash(tmp_path / "e")


def test_demo_set_composition(sample_library):
    counts = Counter((t["format"], t["category"]) for t in truths(sample_library))
    per_source = {s: len(list((sample_library / s).iterdir())) for s in SOURCE_FORMATS}
    assert per_source == {
        "sample_partnet": 10,
        "sample_urdf": 10,
        "sample_urdf_yup": 3,
        "sample_mjcf": 9,
        "sample_sdf": 8,
    }
    assert sum(counts.values()) == 40
    kinds_in = {
        s: {p.name.rsplit("_", 1)[0] for p in (sample_library / s).iterdir()}
        for s in SOURCE_FORMATS
    }
    assert kinds_in["sample_partnet"] == KINDS
    assert kinds_in["sample_urdf"] == KINDS
    assert kinds_in["sample_mjcf"] == KINDS - {"bottle"}  # MuJoCo has no helical joint
    assert "bottle" in kinds_in["sample_sdf"] and "bottle" in kinds_in["sample_urdf_yup"]


def test_n_objects_cycle_through_formats_and_kinds(tmp_path):
    summary = generate_library(tmp_path, n=83, seed=1)
    folders = [p for s in SOURCE_FORMATS for p in (tmp_path / s).iterdir()]
    assert len(folders) == 83
    assert "83 objects" in summary and str(tmp_path) in summary
    assert {p.parent.name for p in folders} == set(SOURCE_FORMATS)
    assert {p.name.rsplit("_", 1)[0] for p in folders} == KINDS
    assert sorted(int(p.name.rsplit("_", 1)[1]) for p in folders) == list(range(83))


def test_sources_yaml_validates_and_lists_every_source_folder(sample_library, many):
    for root in (sample_library, many):
        sources = {s.name: s for s in load_sources(root / "sources.yaml")}
        assert {name: s.format for name, s in sources.items()} == SOURCE_FORMATS
        assert sources["sample_urdf_yup"].up_axis == "y"
        assert all(s.up_axis == "z" for n, s in sources.items() if n != "sample_urdf_yup")
        assert all(s.path == (root / s.name).resolve() for s in sources.values())
        # The limits.reversed allowance covers exactly the objects written upper-first.
        for name, source in sources.items():
            upper_first = {
                t["object"]
                for t in truths(root)
                if "limits_upper_first" in t["quirks"] and (root / name / t["object"]).is_dir()
            }
            for obj in {p.name for p in (root / name).iterdir()}:
                entry = json.loads((root / name / obj / "truth.json").read_text())["entry"]
                source_id = obj if source.format == "partnet_mobility" else f"{obj}/{entry}"
                allowed = source.allowance("limits.reversed", source_id.rsplit(".", 1)[0])
                assert (allowed is not None) == (obj in upper_first), (name, obj)


def test_refuses_a_foreign_folder_and_replaces_an_earlier_library(tmp_path):
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not empty"):
        generate_library(tmp_path / "foreign", n=3)
    assert (tmp_path / "foreign" / "notes.txt").read_text() == "keep me"
    generate_library(tmp_path / "lib", n=45)
    generate_library(tmp_path / "lib", n=3)
    assert len(list((tmp_path / "lib").glob("sample_*/*/truth.json"))) == 3


def test_negative_n_is_refused(tmp_path):
    with pytest.raises(ValueError, match="--n"):
        generate_library(tmp_path, n=-1)


def test_truth_json_is_well_formed(sample_library, many):
    for root in (sample_library, many):
        for path in sorted(root.glob("sample_*/*/truth.json")):
            t = json.loads(path.read_text())
            assert t["object"] == path.parent.name
            assert t["format"] == SOURCE_FORMATS[path.parent.parent.name]
            assert (path.parent / t["entry"]).is_file()
            assert t["frame"] == "source"
            assert (t["model_cat"] is not None) == (t["format"] == "partnet_mobility")
            assert t["quirks"] == sorted(set(t["quirks"]))
            assert t["joints"], path
            names = [j["name"] for j in t["joints"]]
            assert len(names) == len(set(names))
            for j in t["joints"]:
                w, v = np.array(j["twist"][:3]), np.array(j["twist"][3:])
                if j["type"] == "prismatic":
                    assert np.allclose(w, 0) and math.isclose(np.linalg.norm(v), 1, abs_tol=1e-9)
                else:
                    assert math.isclose(np.linalg.norm(w), 1, abs_tol=1e-9)
                    # v = o x a + pitch a: its component along a is the pitch.
                    assert math.isclose(float(v @ w), j["pitch"], abs_tol=1e-9)
                assert (j["pitch"] != 0) == (j["type"] == "helical")
                if j["type"] == "continuous":
                    assert j["lower"] is None and j["upper"] is None
                if j["type"] in ("revolute", "prismatic"):
                    assert j["lower"] <= 0.0 <= j["upper"] and j["lower"] < j["upper"]
                if j["lower"] is not None:
                    assert j["lower"] <= j["upper"]


def test_every_joint_type_kind_and_quirk_is_covered(sample_library, many):
    for root in (sample_library, many):
        records = truths(root)
        types = Counter(j["type"] for t in records for j in t["joints"])
        assert set(types) == {"revolute", "prismatic", "continuous", "helical"}
        # Fixed joints are not listed as truth; they are the helper-link quirk.
        quirks = Counter(q for t in records for q in t["quirks"])
        assert {
            "helper_links",
            "y_up",
            "non_unit_axis",
            "limits_upper_first",
            "mimic_helical_pair",
            "screw_thread_pitch",
            "deprecated_thread_pitch",
            "angle_degree",
            "include_fragment",
            "body_fragment",
            "placement_offset",
            "rotated_joint_frames",
            "relative_to",
            "helical_pair_rotation_first",
            "helical_pair_revolute_driver",
        } <= set(quirks)
        assert {t["category"] for t in records} == KINDS - {"cabinet"} | {"storage_furniture"}
        for t in records:
            moving = Counter(j["type"] for j in t["joints"])
            if t["category"] == "keyboard":
                assert moving["prismatic"] >= 31
            if t["category"] == "faucet":
                assert moving["continuous"] >= 1
            if t["category"] == "cart":
                assert moving["continuous"] >= 4
            if t["category"] == "bottle":
                assert moving == {"helical": 1}
    demo_cabinets = [t for t in truths(sample_library) if t["category"] == "storage_furniture"]
    for t in demo_cabinets:
        moving = Counter(j["type"] for j in t["joints"])
        assert moving["prismatic"] >= 3 and moving["revolute"] >= 2
