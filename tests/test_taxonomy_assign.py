"""Category assignment on objects built here: the order of steps, evidence, review, overrides."""

from __future__ import annotations

import math

import numpy as np
import pytest

from normalize.model import ArticulatedObject, Joint, Link, Mimic, SourceInfo
from taxonomy import (
    UNASSIGNED,
    TaxonomyError,
    categorize,
    load_overrides,
    load_taxonomy,
    review_rows,
)


@pytest.fixture(scope="module")
def tax():
    return load_taxonomy()


def _origin(xyz) -> np.ndarray:
    t = np.eye(4)
    t[:3, 3] = xyz
    return t


def joint(name, type_, parent, child, axis=(0, 0, 1), xyz=(0, 0, 0), mimic=None) -> Joint:
    limits = {
        "revolute": (-1.0, 1.0),
        "prismatic": (0.0, 0.1),
        "helical": (0.0, 6.0),
        "continuous": (-math.inf, math.inf),
        "fixed": (0.0, 0.0),
    }[type_]
    return Joint(
        name,
        type_,
        parent,
        child,
        origin=_origin(xyz),
        axis=np.array(axis, dtype=float),
        lower=limits[0],
        upper=limits[1],
        pitch=0.001 if type_ == "helical" else 0.0,
        mimic=mimic,
    )


def make(joints=(), *, name="thing", labels=None, root="base", library="lib", path=""):
    """An object whose links are the root plus every joint's child."""
    links = [Link(root)] + [Link(j.child) for j in joints]
    source = SourceInfo(library=library, source_path=path, labels=labels or {})
    return ArticulatedObject(name, links, joints, source)


def run(obj, source_id="x", tax=None, **kwargs):
    return categorize(
        obj, object_id=f"lib__{source_id}", source_id=source_id, taxonomy=tax, **kwargs
    )


def chain(types, *, prefix="j", axes=None):
    """Serial joints j1..jn from base through l1..ln."""
    out, parent = [], "base"
    for i, type_ in enumerate(types, start=1):
        axis = axes[i - 1] if axes else ((0, 0, 1) if i % 2 else (0, 1, 0))
        out.append(joint(f"{prefix}{i}", type_, parent, f"l{i}", axis=axis, xyz=(0, 0, 0.1)))
        parent = f"l{i}"
    return out


# --------------------------------------------------------------------------- source labels
def test_source_label_decides_and_is_recorded_as_evidence(tax):
    obj = make(
        [joint("door", "revolute", "base", "door_link")],
        labels={"model_cat": "StorageFurniture", "folder": "45001"},
    )
    a = run(obj, "45001", tax)
    assert (a.category, a.supercategory, a.method) == (
        "storage_furniture",
        "Storage Furniture",
        "source_label",
    )
    assert a.confidence >= 0.95 and not a.needs_review
    assert any("model_cat='StorageFurniture'" in e for e in a.evidence)
    assert a.candidates[0][0] == "storage_furniture"


def test_name_refines_the_label_to_a_narrower_category(tax):
    obj = make(labels={"model_cat": "StorageFurniture", "folder": "nightstand_03"})
    a = run(obj, "nightstand_03", tax)
    assert (a.category, a.method, a.needs_review) == ("nightstand", "source_label", False)


def test_label_contradicted_by_the_task_folder_goes_to_review(tax):
    # GenSim2 7221: meta.json says Microwave, the task folder it came from says oven.
    obj = make(
        [joint("door", "revolute", "base", "door_link", axis=(0, 1, 0))],
        labels={"model_cat": "Microwave", "folder": "7221"},
    )
    a = run(obj, "oven/7221", tax)
    assert (a.category, a.method) == ("microwave", "source_label")
    assert a.needs_review
    assert any("oven" in r and "conflicting" in r for r in a.reasons)
    assert dict(a.candidates)["oven"] == pytest.approx(0.7)


def test_unmapped_label_is_reported_and_names_take_over(tax):
    obj = make(labels={"model_cat": "Spaceship", "folder": "kettle_2"})
    a = run(obj, "kettle_2", tax)
    assert (a.category, a.method) == ("kettle", "name_synonym")
    assert a.needs_review
    assert any("Spaceship" in r and "not mapped" in r for r in a.reasons)


# --------------------------------------------------------------------------- names
def test_folder_and_robot_names_decide_when_there_is_no_label(tax):
    obj = make(chain(["revolute"] * 7), name="lbr_iiwa", labels={"folder": "kuka_iiwa"})
    a = run(obj, "kuka_iiwa/model", tax)
    assert (a.category, a.supercategory, a.method) == ("robot_arm", "Robots", "name_synonym")
    assert not a.needs_review and a.confidence > 0.9
    assert any(e.startswith("folder 'kuka_iiwa'") for e in a.evidence)
    assert any(e.startswith("robot name 'lbr_iiwa'") for e in a.evidence)


def test_cartpole_is_a_mechanism_not_a_cart(tax):
    joints = [
        joint("slider_to_cart", "prismatic", "base", "cart", axis=(1, 0, 0)),
        joint("cart_to_pole", "continuous", "cart", "pole", axis=(0, 1, 0)),
    ]
    a = run(make(joints, name="cart-pole", labels={"folder": "cartpole"}), "cartpole", tax)
    assert (a.category, a.supercategory) == ("cartpole", "Mechanisms")
    assert "cart" not in dict(a.candidates)  # the link named "cart" is a part
    assert not a.needs_review


def test_part_words_in_link_names_are_not_category_evidence(tax):
    # A link called "door" or "keyboard" is a part of something, not a door or a keyboard.
    joints = [
        joint("j0", "revolute", "base", "door", axis=(0, 1, 0)),
        joint("j1", "revolute", "base", "keyboard_panel", axis=(1, 0, 0)),
    ]
    a = run(make(joints, name="my_urdf"), "label1", tax)
    assert not {"door", "keyboard"} & set(dict(a.candidates))


def test_distinctive_link_names_alone_are_weak_evidence(tax):
    joints = chain(["revolute"] * 2)
    links = [Link("base", source_names=("panda_link0",))] + [
        Link(j.child, source_names=(f"panda_{j.child}",)) for j in joints
    ]
    obj = ArticulatedObject("robot", links, joints, SourceInfo(library="lib"))
    a = run(obj, "r", tax)
    assert (a.category, a.method) == ("robot_arm", "name_synonym")
    assert a.confidence == pytest.approx(0.4)
    assert a.needs_review and "low confidence" in a.reasons[0]


def test_close_rival_names_are_a_conflict(tax):
    # synthetic_articulated_data: a microwave scene whose MJCF model is called "cabinet".
    obj = make(
        [joint("door", "revolute", "base", "door_link")],
        name="cabinet",
        labels={"folder": "microwave_scene000000", "robot_name": "cabinet"},
    )
    a = run(obj, "microwave_scene000000/scene000000", tax)
    assert a.category == "microwave" and a.needs_review
    assert "robot name says storage_furniture" in a.reasons[0]


def test_related_names_are_not_a_conflict_and_the_narrower_wins(tax):
    obj = make(labels={"folder": "manipulator", "robot_name": "planar manipulator"})
    a = run(obj, "manipulator/manipulator", tax)
    assert (a.category, a.needs_review) == ("planar_arm", False)


# --------------------------------------------------------------------------- structure
def test_many_parallel_prismatic_keys_are_a_keyboard(tax):
    keys = [
        joint(f"key{i}", "prismatic", "base", f"key_{i}", axis=(0, 0, -1), xyz=(0.02 * i, 0, 0))
        for i in range(30)
    ]
    a = run(make(keys, name="partnet_df5e079819a96b84a4d90b04c435893"), "7619", tax)
    assert (a.category, a.method) == ("keyboard", "structure")
    assert a.needs_review  # structure alone never skips review
    assert any("30 prismatic joints" in e for e in a.evidence)


def test_serial_revolute_chain_ending_in_a_gripper_pair_is_a_robot_arm(tax):
    arm = chain(["revolute"] * 6)
    fingers = [
        joint("finger_l", "prismatic", "l6", "left", axis=(0, 1, 0)),
        joint("finger_r", "prismatic", "l6", "right", axis=(0, -1, 0), mimic=Mimic("finger_l")),
    ]
    a = run(make(arm + fingers, name="my_robot"), "r", tax)
    assert (a.category, a.method) == ("robot_arm", "structure")
    assert "two-jaw pair" in a.evidence[0]


def test_wheels_on_continuous_joints_are_a_cart(tax):
    wheels = [
        joint(f"w{i}", "continuous", "base", f"wheel_{i}", axis=(0, 1, 0), xyz=(i, 0, 0))
        for i in range(4)
    ]
    a = run(make(wheels, name="vehicle"), "v", tax)
    assert (a.category, a.supercategory, a.method) == ("cart", "Vehicles & Toys", "structure")


def test_drawers_and_doors_on_a_base_are_storage_furniture(tax):
    joints = [
        joint("d0", "prismatic", "base", "drawer0", axis=(1, 0, 0)),
        joint("d1", "prismatic", "base", "drawer1", axis=(1, 0, 0), xyz=(0, 0, 0.3)),
        joint("door", "revolute", "base", "doorL2", axis=(0, 0, 1)),
    ]
    a = run(make(joints, name="my_urdf"), "label13/output/label13", tax)
    assert (a.category, a.method) == ("storage_furniture", "structure")
    assert "parts named door, drawer" in a.evidence[0]


@pytest.mark.parametrize(
    ("joints", "expected"),
    [
        ([joint("s", "prismatic", "base", "slide", axis=(1, 0, 0))], "prismatic_slider"),
        ([joint("y", "revolute", "base", "top", axis=(0, 0, 1))], "yaw_axis_module"),
        ([joint("h", "revolute", "base", "flap", axis=(1, 0, 0))], "revolute_hinge"),
        ([joint("sc", "helical", "base", "nut")], "screw_mechanism"),
        (chain(["revolute"] * 3, axes=[(0, 0, 1)] * 3), "coaxial_rotary_stack"),
    ],
)
def test_small_mechanisms_by_structure(tax, joints, expected):
    a = run(make(joints, name="model"), "m", tax)
    assert (a.category, a.method) == (expected, "structure")


def test_rack_and_pinion_by_mimic_coupling(tax):
    joints = [
        joint("pinion", "continuous", "base", "gear", axis=(0, 0, 1)),
        joint("rack", "prismatic", "base", "bar", axis=(1, 0, 0), mimic=Mimic("pinion", 0.02)),
    ]
    a = run(make(joints, name="model"), "m", tax)
    assert a.category == "rack_and_pinion"


def test_nothing_to_go_on_is_unassigned_and_flagged(tax):
    a = run(make(name="model_7"), "model_7", tax)
    assert (a.category, a.supercategory, a.method) == (UNASSIGNED, "Unassigned", "unassigned")
    assert a.confidence == 0.0 and a.needs_review and a.candidates == ()


# --------------------------------------------------------------------------- overrides and review
def test_overrides_file_beats_source_config_beats_label(tax):
    obj = make(labels={"model_cat": "Microwave"})
    a = run(obj, "7221", tax, source_overrides={"7221": "oven"})
    assert (a.category, a.method, a.confidence, a.needs_review) == ("oven", "override", 1.0, False)
    assert a.evidence[0].startswith("source config override for 7221")
    b = run(
        obj, "7221", tax, overrides={"lib__7221": "toaster_oven"}, source_overrides={"7221": "oven"}
    )
    assert (b.category, b.method) == ("toaster_oven", "override")
    assert b.evidence[0].startswith("overrides file entry lib__7221")


def test_override_with_an_unknown_category_names_the_object(tax):
    with pytest.raises(TaxonomyError) as info:
        run(make(), "7221", tax, source_overrides={"7221": "time_machine"})
    assert info.value.code == "overrides.unknown_category"
    assert "lib__7221" in str(info.value) and "time_machine" in str(info.value)


def test_review_rows_list_only_flagged_objects_with_candidates_and_evidence(tax):
    flagged = run(make(name="model_7"), "model_7", tax)
    keys = [
        joint(f"k{i}", "prismatic", "base", f"key{i}", axis=(0, 0, 1), xyz=(0.02 * i, 0, 0))
        for i in range(25)
    ]
    weak = run(make(keys, name="object"), "a_keys", tax)
    fine = run(make(labels={"model_cat": "Oven"}), "oven_1", tax)
    rows = review_rows([weak, fine, flagged])
    assert [r["object_id"] for r in rows] == ["lib__a_keys", "lib__model_7"]
    row = rows[0]
    assert row["category"] == "keyboard" and row["method"] == "structure"
    assert row["candidates"][0] == {"category": "keyboard", "score": 0.55}
    assert row["evidence"] and "low confidence" in row["reason"]
    assert set(row) == {
        "object_id",
        "source",
        "source_id",
        "category",
        "supercategory",
        "method",
        "confidence",
        "candidates",
        "evidence",
        "reason",
    }


def test_an_overrides_file_moves_an_object_out_of_the_review_queue(tax, tmp_path):
    obj = make(name="model_7")
    before = run(obj, "model_7", tax)
    assert [r["object_id"] for r in review_rows([before])] == ["lib__model_7"]
    path = tmp_path / "overrides.yaml"
    path.write_text("version: 1\noverrides:\n  lib__model_7: turntable\n", encoding="utf-8")
    after = run(obj, "model_7", tax, overrides=load_overrides(path, tax))
    assert (after.category, after.supercategory, after.method) == (
        "turntable",
        "Mechanisms",
        "override",
    )
    assert review_rows([after]) == []


@pytest.mark.parametrize(
    ("text", "code", "mentions"),
    [
        (
            "version: 1\noverrides:\n  lib__a: flux_capacitor\n",
            "overrides.unknown_category",
            "lib__a",
        ),
        ("version: 2\noverrides: {}\n", "overrides.schema", "version"),
        ("version: 1\noverrides:\n  lib__a: Not-Snake\n", "overrides.schema", "lib__a"),
        ("version: 1\noverrides: [\n", "overrides.unreadable", "YAML"),
    ],
)
def test_bad_overrides_files_are_clear_errors(tax, tmp_path, text, code, mentions):
    path = tmp_path / "overrides.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TaxonomyError) as info:
        load_overrides(path, tax)
    assert info.value.code == code
    assert mentions in str(info.value) and str(path) in str(info.value)


def test_assignment_is_deterministic_and_serializable(tax):
    obj = make(chain(["revolute"] * 3), labels={"folder": "double_pendulum"})
    a, b = run(obj, "dp", tax), run(obj, "dp", tax)
    assert a == b
    d = a.as_dict()
    assert d["candidates"][0]["category"] == "double_pendulum"
    assert d["taxonomy_version"] == tax.version


def test_a_normalized_objects_own_name_is_its_object_id_and_no_evidence(tax):
    # Normalized objects are renamed to their object_id, whose prefix is the source's name.
    obj = make(name="door_parts__model_7")
    a = categorize(obj, object_id="door_parts__model_7", source_id="model_7", taxonomy=tax)
    assert a.category == UNASSIGNED
