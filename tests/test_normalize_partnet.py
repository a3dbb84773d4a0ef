"""The PartNet-Mobility adapter on the real corpus layouts: discovery (nested folders, several
URDF variants, folders named by category), labels, and the documented quirks."""

from __future__ import annotations

import pytest

from normalize import inputs
from normalize.adapters import discover, get_adapter
from normalize.errors import AssetError
from normalize.run import normalize_candidate
from normalize.sources import Allowance, SourceConfig


def partnet(root, **kwargs) -> SourceConfig:
    return SourceConfig(name=root.name, format="partnet_mobility", path=root, license="x", **kwargs)


def by_id(source) -> dict:
    return {c.source_id: c for c in discover(source)}


def test_discovery_one_candidate_per_object_folder(corpus):
    found = by_id(partnet(corpus / "partnet_mobility"))
    assert sorted(found) == [
        "102812", "102872", "10495", "179", "3763", "40147", "44781", "45001", "45940",
        "7619", "bucket", "bucket/100454", "door", "kettle", "pen",
    ]  # fmt: skip
    assert all(c.path.name == "mobility.urdf" for c in found.values())
    assert found["bucket/100454"].object_id == "partnet_mobility__bucket__100454"
    assert len(discover(partnet(corpus / "gensim2_partnet"))) == 42
    assert [c.source_id for c in discover(partnet(corpus / "gapartnet"))] == ["102442"]


def test_labels_from_meta_and_semantics(corpus):
    source = partnet(corpus / "partnet_mobility")
    obj = get_adapter("partnet_mobility").load(by_id(source)["179"])
    labels = obj.source.labels
    assert (labels["model_cat"], labels["anno_id"], labels["folder"]) == ("Chair", "179", "179")
    assert labels["semantics"][0] == {"link": "link_0", "joint_type": "hinge", "label": "caster"}
    assert len(labels["semantics"]) == 17
    assert labels["robot_name"] == "partnet_6f36520144753550f91663a74ccd2338"
    assert (labels["urdf"], labels["variants"]) == ("mobility.urdf", [])
    assert (obj.source.library, obj.source.source_path) == ("partnet_mobility", "179/mobility.urdf")


def test_variants_and_missing_meta(corpus):
    source = partnet(corpus / "partnet_mobility")
    switch = get_adapter("partnet_mobility").load(by_id(source)["102812"]).source.labels
    assert switch["variants"] == [
        "battery_switch_snap.urdf",
        "laser_station_switch.urdf",
        "switch.urdf",
    ]
    assert (switch["model_cat"], switch["anno_id"], switch["semantics"]) == (None, None, [])
    bottle = get_adapter("partnet_mobility").load(by_id(source)["3763"]).source.labels
    assert bottle["variants"] == ["mobility_vhacd.urdf"]
    camera = get_adapter("partnet_mobility").load(by_id(partnet(corpus / "gapartnet"))["102442"])
    assert camera.source.labels["anno_id"] == "2442"  # the id minus 100000, kept as written
    assert camera.source.labels["variants"] == [
        "mobility_annotation_gapartnet.urdf",
        "mobility_texture_gapartnet.urdf",
    ]


def test_uncoupled_prismatic_and_continuous_stay_two_joints(corpus, tmp_path):
    """3763's cap slides and turns with no mimic: two joints, the slider re-anchored (its
    range excludes 0), the massless helper link recorded."""
    candidate = by_id(partnet(corpus / "partnet_mobility"))["3763"]
    result = normalize_candidate(candidate, tmp_path)
    assert sorted(j.type for j in result.object.joints) == ["continuous", "prismatic"]
    assert not any(j.mimic for j in result.object.joints)
    codes = [c.code for c in result.changes]
    assert "joint.reanchored" in codes and "inertial.none" in codes
    slider = next(j for j in result.object.joints if j.type == "prismatic")
    assert slider.lower <= 0.0 <= slider.upper and slider.upper - slider.lower == pytest.approx(0.1)


def test_missing_mesh_rejects_gensim2_1011(corpus, tmp_path):
    candidate = by_id(partnet(corpus / "gensim2_partnet"))["1011"]
    with pytest.raises(AssetError) as info:
        normalize_candidate(candidate, tmp_path)
    assert (info.value.code, info.value.stage) == ("mesh.missing", "mesh")
    assert "original-5.obj" in str(info.value)
    assert not (tmp_path / "objects" / candidate.object_id).exists()


def test_gensim2_frozen_joints_are_contracted(corpus, tmp_path):
    """GenSim2 froze every joint but the task joint: the object keeps one moving joint while
    semantics.txt still lists the original ones."""
    candidate = by_id(partnet(corpus / "gensim2_partnet"))["101564"]
    result = normalize_candidate(candidate, tmp_path)
    assert len(result.object.joints) == 1
    assert len(result.raw.source.labels["semantics"]) > 1
    assert [c.code for c in result.changes].count("joint.fixed_contracted") == 13


def test_missing_label_files_are_recorded_inputs(tmp_path):
    # The build's cache keys an object on the files it read: a meta.json added later must
    # change the key, so its absence is recorded too.
    folder = tmp_path / "lib" / "7"
    folder.mkdir(parents=True)
    (folder / "mobility.urdf").write_text('<robot name="r"><link name="a"/></robot>')
    (candidate,) = discover(partnet(tmp_path / "lib"))
    with inputs.recording() as recorded:
        labels = get_adapter("partnet_mobility").load(candidate).source.labels
    assert labels["model_cat"] is None
    assert {str(folder / "meta.json"), str(folder / "semantics.txt")} <= recorded
    (folder / "meta.json").write_text('{"model_cat": "Lamp", "anno_id": "7"}')
    assert get_adapter("partnet_mobility").load(candidate).source.labels["model_cat"] == "Lamp"


def test_entry_choice_selection_and_allowances(tmp_path):
    root = tmp_path / "lib"
    robot = """<robot name="{name}"><link name="a"/><link name="b"/>
      <joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
      <limit lower="{lower}" upper="{upper}"/></joint></robot>"""
    for folder, files in {
        "chair/1": {"b_variant.urdf": (0, 1), "a_variant.urdf": (0, 1)},
        "chair/2": {"mobility.urdf": (1, -1), "other.urdf": (0, 1)},
        "lamp": {"mobility.urdf": (0, 1)},
    }.items():
        (root / folder).mkdir(parents=True)
        for name, (lower, upper) in files.items():
            text = robot.format(name=name, lower=lower, upper=upper)
            (root / folder / name).write_text(text)
    found = by_id(partnet(root))
    assert {k: c.path.name for k, c in found.items()} == {
        "chair/1": "a_variant.urdf",  # no mobility.urdf: the first in sorted order
        "chair/2": "mobility.urdf",
        "lamp": "mobility.urdf",
    }
    assert sorted(by_id(partnet(root, exclude=("chair/*",)))) == ["lamp"]
    with pytest.raises(AssetError) as info:
        normalize_candidate(found["chair/2"], tmp_path / "out")
    assert info.value.code == "limits.reversed"
    allowed = partnet(root, allowances=(Allowance("limits.reversed", "upper first", ("chair/2",)),))
    result = normalize_candidate(by_id(allowed)["chair/2"], tmp_path / "out")
    assert "limits.swapped" in [c.code for c in result.changes]
