"""The taxonomy file: schema, structure, coverage, and word-boundary synonym matching."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

import schemas
from taxonomy import TaxonomyError, load_taxonomy, match_synonyms, words
from taxonomy.data import DEFAULT_PATH

SIX = (
    "Storage Furniture",
    "Mechanisms",
    "Kitchen & Cooking",
    "Tools",
    "Electronics",
    "Architectural Fixtures",
)
PARTNET_MOBILITY_MODEL_CATS = [
    "Bottle",
    "Box",
    "Bucket",
    "Camera",
    "Cart",
    "Chair",
    "Clock",
    "CoffeeMachine",
    "Dishwasher",
    "Dispenser",
    "Display",
    "Door",
    "Eyeglasses",
    "Fan",
    "Faucet",
    "FoldingChair",
    "Globe",
    "Kettle",
    "Keyboard",
    "KitchenPot",
    "Knife",
    "Lamp",
    "Laptop",
    "Lighter",
    "Microwave",
    "Mouse",
    "Oven",
    "Pen",
    "Phone",
    "Pliers",
    "Printer",
    "Refrigerator",
    "Remote",
    "Safe",
    "Scissors",
    "Stapler",
    "StorageFurniture",
    "Suitcase",
    "Switch",
    "Table",
    "Toaster",
    "Toilet",
    "TrashCan",
    "USB",
    "WashingMachine",
    "Window",
]
# Categories the issue names, with the supercategory the paper's Table 9 puts them in.
ISSUE_CATEGORIES = {
    "nightstand": "Storage Furniture",
    "chest_of_drawers": "Storage Furniture",
    "storage_furniture": "Storage Furniture",
    "branching_tree": "Mechanisms",
    "prismatic_slider": "Mechanisms",
    "yaw_axis_module": "Mechanisms",
    "refrigerator": "Kitchen & Cooking",
    "oven": "Kitchen & Cooking",
    "dishwasher": "Kitchen & Cooking",
    "scissors": "Tools",
    "pliers": "Tools",
    "stapler": "Tools",
    "laptop": "Electronics",
    "remote_control": "Electronics",
    "switch": "Electronics",
    "faucet": "Architectural Fixtures",
    "door": "Architectural Fixtures",
    "window": "Architectural Fixtures",
}
# Robots and mechanisms of the shared corpus.
CORPUS_KINDS = {
    "robot_arm": "Robots",
    "planar_arm": "Robots",
    "humanoid": "Robots",
    "quadruped": "Robots",
    "wheeled_robot": "Robots",
    "mobile_manipulator": "Robots",
    "gripper": "Robots",
    "robot_finger": "Robots",
    "swimmer": "Robots",
    "legged_walker": "Robots",
    "pendulum": "Mechanisms",
    "double_pendulum": "Mechanisms",
    "cartpole": "Mechanisms",
    "acrobot": "Mechanisms",
    "rack_and_pinion": "Mechanisms",
    "four_bar_linkage": "Mechanisms",
    "screw_mechanism": "Mechanisms",
    "coaxial_rotary_stack": "Mechanisms",
    "joint_test_fixture": "Mechanisms",
    "bicycle": "Vehicles & Toys",
    "race_car": "Vehicles & Toys",
}


@pytest.fixture(scope="module")
def tax():
    return load_taxonomy()


@pytest.fixture(scope="module")
def raw():
    return yaml.safe_load(DEFAULT_PATH.read_text(encoding="utf-8"))


def test_taxonomy_file_validates_against_its_schema(raw):
    schemas.validate(raw, "taxonomy")
    assert re.fullmatch(r"\d+\.\d+\.\d+", raw["version"])


def test_fifteen_supercategories_including_the_six_of_table_9(tax):
    assert len(tax.supercategories) == 15
    assert set(SIX) <= set(tax.supercategories)


def test_no_category_is_orphaned_or_under_two_supercategories(tax, raw):
    names = [c["name"] for c in raw["categories"]]
    assert len(names) == len(set(names)) >= 150
    for entry in raw["categories"]:
        assert entry["supercategory"] in tax.supercategories, entry["name"]
        assert re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", entry["name"])
    for supercategory in tax.supercategories:
        assert any(c.supercategory == supercategory for c in tax.categories.values())


def test_every_category_has_synonyms_and_a_label_mapping_field(raw):
    for entry in raw["categories"]:
        assert entry["synonyms"], entry["name"]
        assert isinstance(entry["source_labels"], dict), entry["name"]


def test_every_partnet_mobility_model_cat_is_mapped(tax):
    for model_cat in PARTNET_MOBILITY_MODEL_CATS:
        category = tax.category_for_label("partnet_model_cat", model_cat)
        assert category is not None, model_cat
        # Matching is on words: the snake_case spelling is the same label.
        assert tax.category_for_label("partnet_model_cat", "_".join(words(model_cat))) == category
    assert tax.category_for_label("partnet_model_cat", "Spaceship") is None


def test_issue_and_corpus_categories_exist_under_the_right_supercategory(tax):
    for name, supercategory in {**ISSUE_CATEGORIES, **CORPUS_KINDS}.items():
        assert tax.supercategory_of(name) == supercategory, name


def test_generated_sample_library_categories_exist_and_match_their_model_cat(tax):
    from samples.kinds import KINDS

    for kind, (_, category, model_cat) in KINDS.items():
        assert category in tax.categories, kind
        assert tax.category_for_label("partnet_model_cat", model_cat) == category, kind


def test_broader_links_form_no_cycles_and_stay_in_the_taxonomy(tax):
    assert tax.ancestors("kitchen_cabinet") == ("storage_furniture",)
    assert tax.ancestors("folding_chair") == ("chair",)
    assert tax.related("nightstand", "storage_furniture")
    assert not tax.related("oven", "microwave")


# --------------------------------------------------------------------------- loader errors
def _write(tmp_path: Path, raw: dict, change) -> Path:
    data = yaml.safe_load(yaml.safe_dump(raw))
    change(data)
    path = tmp_path / "taxonomy.yaml"
    # a round trip, so a change sharing lists with another category is written out in full:
    # the loader refuses YAML aliases
    path.write_text(yaml.safe_dump(json.loads(json.dumps(data))), encoding="utf-8")
    return path


def _category(data: dict, name: str) -> dict:
    return next(c for c in data["categories"] if c["name"] == name)


@pytest.mark.parametrize(
    ("change", "code", "mentions"),
    [
        (
            lambda d: d["categories"].append({**_category(d, "oven"), "supercategory": "Tools"}),
            "taxonomy.duplicate",
            "oven",
        ),
        (
            lambda d: _category(d, "oven").update(supercategory="Ovens"),
            "taxonomy.orphan",
            "Ovens",
        ),
        (
            lambda d: _category(d, "oven").update(synonyms=["fridge"]),
            "taxonomy.ambiguous_synonym",
            "fridge",
        ),
        (
            lambda d: _category(d, "oven").update(
                source_labels={"partnet_model_cat": ["Microwave"]}
            ),
            "taxonomy.ambiguous_label",
            "Microwave",
        ),
        (
            lambda d: _category(d, "storage_furniture").update(broader="nightstand"),
            "taxonomy.broader",
            "cycle",
        ),
        (lambda d: _category(d, "oven").update(name="Oven-2"), "taxonomy.schema", "categories"),
        (lambda d: d.pop("version"), "taxonomy.schema", "version"),
        (lambda d: d["supercategories"][0].pop("size"), "taxonomy.schema", "size"),
        (lambda d: _category(d, "oven").update(size=[2.0, 0.5]), "taxonomy.size", "oven"),
        (lambda d: _category(d, "oven").update(size=[0.0, 1.0]), "taxonomy.schema", "size"),
    ],
)
def test_loader_rejects_inconsistent_files(tmp_path, raw, change, code, mentions):
    path = _write(tmp_path, raw, change)
    with pytest.raises(TaxonomyError) as info:
        load_taxonomy(path)
    assert info.value.code == code
    assert mentions in str(info.value) and str(path) in str(info.value)


def test_unreadable_taxonomy_file_is_a_clear_error(tmp_path):
    with pytest.raises(TaxonomyError) as info:
        load_taxonomy(tmp_path / "missing.yaml")
    assert info.value.code == "taxonomy.unreadable"


# --------------------------------------------------------------------------- words and synonyms
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("TwoJointRobot_w_fixedJoints", ("two", "joint", "robot", "w", "fixed", "joints")),
        ("RomeoH37", ("romeo", "h", "37")),
        ("cart-pole", ("cart", "pole")),
        ("r2d2", ("r", "2", "d", "2")),
        ("USB", ("usb",)),
        ("StorageFurniture", ("storage", "furniture")),
        ("partnet_5b844d6f4d064a52ce6c3e73b818a2cc", ("partnet",)),
        ("partnet_39af8db4-de8a-4236-83dd-f2fbeea69b8e", ("partnet", "4236")),
    ],
)
def test_words_split_snake_camel_and_digits_and_drop_hashes(text, expected):
    assert words(text) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("cartpole", {"cartpole"}),  # one word: not a shopping cart
        ("cart-pole", {"cartpole"}),  # "cart" inside the longer match "cart pole" is dropped
        ("shopping_cart_03", {"cart"}),
        ("carton", {"box"}),  # not "cart"
        ("indoor_scene", set()),  # no "door" inside a word
        ("doorway", {"door"}),
        ("pencil_case", {"pencil_case"}),  # not "pen"
        ("spanner", {"wrench"}),  # not "pan"
        ("microwave_oven", {"microwave"}),
        ("toaster_oven", {"toaster_oven"}),
        ("bedside_table", {"nightstand"}),
        ("lbr_iiwa_link_3", {"robot_arm"}),
        ("FoldingChair", {"folding_chair"}),
        ("partnet_d440abd3ea98676f877975b30c3a0670", set()),
        ("ant", {"legged_walker"}),
        ("plant_pot", {"kitchen_pot"}),  # "ant" is not inside "plant"
    ],
)
def test_synonyms_match_whole_words_only(tax, name, expected):
    assert {category for category, _ in match_synonyms(name, tax)} == expected


def test_every_category_has_a_size_range_its_own_or_inherited(tax):
    """fidelity.size reads these: a category's own range, else its broader category's, else its
    supercategory's; every supercategory declares one."""
    for name in tax.categories:
        low, high = tax.size_range(name)
        assert 0 < low < high
    assert tax.size_range("door") == (0.2, 5.0)  # its own
    assert tax.size_range("faucet") == tax.supercategory_sizes["Architectural Fixtures"]
    assert tax.size_range("unassigned") is None
