"""Row builders and deterministic Parquet writing of the release manifests (no Prefect)."""

from __future__ import annotations

import math

import numpy as np
import pyarrow.parquet as pq
import pytest
import trimesh
from verify_assets import urdf_source, write

import schemas
from export.manifest_writer import RowBatches, TableWriter
from export.manifests import (
    SCHEMAS,
    bounding_box,
    folder_digests,
    joint_rows,
    link_rows,
    object_row,
    reject_row,
    to_table,
    write_table,
)
from normalize.adapters import discover
from normalize.model import ArticulatedObject, Geometry, Inertial, Joint, Link, Mimic
from normalize.run import normalize_candidate


def pose(xyz=(0, 0, 0)):
    t = np.eye(4)
    t[:3, 3] = xyz
    return t


def inertial(mass=1.0):
    return Inertial(mass, np.zeros(3), np.eye(3) * 0.01, method="source")


@pytest.fixture()
def cabinet(tmp_path):
    """A cabinet with a door (revolute), a drawer with an OBJ mesh (prismatic), a wheel
    (continuous) and a cap (helical) mimicking the wheel, written as an object folder."""
    folder = tmp_path / "obj"
    (folder / "meshes").mkdir(parents=True)
    trimesh.creation.box(extents=(0.4, 0.5, 0.1)).export(folder / "meshes" / "drawer.obj")
    (folder / "object.urdf").write_text("<robot name='cabinet'/>\n")
    links = [
        Link("body", visuals=(Geometry("box", size=(1.0, 0.6, 2.0)),), inertial=inertial(10)),
        Link(
            "door",
            visuals=(Geometry("box", origin=pose((0.25, 0, 0)), size=(0.5, 0.02, 1.0)),),
            inertial=inertial(2),
        ),
        Link(
            "drawer",
            visuals=(Geometry("mesh", filename="meshes/drawer.obj"),),
            inertial=inertial(1),
            source_names=("drawer", "drawer_handle"),
        ),
        Link("wheel", collisions=(Geometry("cylinder", size=(0.05, 0.02)),), inertial=inertial()),
        Link("cap"),
    ]
    joints = [
        Joint(
            "door_hinge",
            "revolute",
            "body",
            "door",
            origin=pose((0.5, 0.3, 0)),
            axis=np.array([0, 0, 1.0]),
            lower=0.0,
            upper=1.5,
            source_name="joint_0",
        ),
        Joint(
            "drawer_slide",
            "prismatic",
            "body",
            "drawer",
            origin=pose((0, 0, 0.5)),
            axis=np.array([0, 1.0, 0]),
            lower=0.0,
            upper=0.4,
        ),
        Joint(
            "wheel_spin",
            "continuous",
            "body",
            "wheel",
            origin=pose((0, 0, -1.0)),
            axis=np.array([1.0, 0, 0]),
            lower=-math.inf,
            upper=math.inf,
        ),
        Joint(
            "cap_screw",
            "helical",
            "body",
            "cap",
            origin=pose((0, 0, 1.1)),
            axis=np.array([0, 0, 1.0]),
            lower=0.0,
            upper=6.0,
            pitch=0.002,
            mimic=Mimic("wheel_spin", 0.5, 0.0),
        ),
    ]
    return ArticulatedObject("cabinet", links, joints), folder


ASSIGNMENT = {
    "category": "cabinet",
    "supercategory": "Storage Furniture",
    "method": "source_label",
    "confidence": 0.9,
    "needs_review": False,
}


def make_object_row(obj, folder, **overrides):
    kwargs = dict(
        object_id="lib__cab1",
        source="lib",
        source_id="cab1",
        source_path="cab1.urdf",
        license="MIT",
        object_dir=folder,
        files=folder_digests(folder),
        urdf_path="objects/lib__cab1/object.urdf",
        preview_path="objects/lib__cab1/preview/sheet.png",
        scale=1.0,
        assignment=ASSIGNMENT,
        status="warn",
        warnings=["mass.light", "inertia.recomputed"],
        changes=["axis.normalized"],
        convention_version="1.0",
        loads_in=["mujoco", "pybullet"],
    )
    kwargs.update(overrides)
    return object_row(obj, **kwargs)


def test_object_row_counts_hashes_and_bounds(cabinet):
    obj, folder = cabinet
    row = make_object_row(obj, folder)
    schemas.validate({**row, "split": "train"}, "objects")
    assert (row["n_links"], row["n_joints"], row["n_fixed"]) == (5, 4, 0)
    assert (row["n_revolute"], row["n_prismatic"], row["n_continuous"], row["n_helical"]) == (
        1,
        1,
        1,
        1,
    )
    assert row["n_mimic"] == 1
    assert row["n_files"] == 2
    assert row["warnings"] == ["inertia.recomputed", "mass.light"], "sorted"
    assert row["loads_in"] == ["mujoco", "pybullet"]
    # the body box spans z in [-1, 1]; the wheel cylinder (axis z, length 0.02) sits at z = -1
    assert row["bbox_min"][2] == pytest.approx(-1.01)
    assert row["bbox_max"][2] == pytest.approx(1.0)  # the cap has no geometry: not counted
    assert row["bbox_max"][0] == pytest.approx(1.0)  # the open door reaches x = 0.5 + 0.5
    assert row["mass"] == pytest.approx(14.0)
    # the assets hash changes with a mesh, the URDF hash does not
    before = (row["urdf_sha256"], row["assets_sha256"])
    trimesh.creation.box(extents=(3.0, 0.5, 0.1)).export(folder / "meshes" / "drawer.obj")
    after = make_object_row(obj, folder)
    assert after["urdf_sha256"] == before[0]
    assert after["assets_sha256"] != before[1]
    assert after["bbox_max"][0] == pytest.approx(1.5), "mesh vertices count exactly"


def test_joint_rows_are_world_frame_screws(cabinet):
    obj, _ = cabinet
    rows = {r["joint_name"]: r for r in joint_rows(obj, "lib__cab1")}
    for row in rows.values():
        schemas.validate(row, "joints")
    door = rows["door_hinge"]
    assert door["source_joint_name"] == "joint_0"
    assert door["origin"] == [0.5, 0.3, 0.0]
    # revolute twist (a, o x a)
    assert door["twist"] == pytest.approx([0, 0, 1, 0.3, -0.5, 0])
    assert rows["drawer_slide"]["twist"] == pytest.approx([0, 0, 0, 0, 1, 0])
    assert rows["wheel_spin"]["lower"] == -math.inf and rows["wheel_spin"]["upper"] == math.inf
    cap = rows["cap_screw"]
    assert cap["twist"][5] == pytest.approx(0.002)
    assert (cap["mimic_joint"], cap["mimic_multiplier"]) == ("wheel_spin", 0.5)
    assert door["child_mass"] == 2.0 and door["child_com"] == pytest.approx([0.5, 0.3, 0])
    assert len(door["child_inertia"]) == 9


def test_link_rows(cabinet):
    obj, folder = cabinet
    rows = {r["link_name"]: r for r in link_rows(obj, "lib__cab1", folder)}
    for row in rows.values():
        schemas.validate(row, "links")
    assert rows["drawer"]["source_link_names"] == ["drawer", "drawer_handle"]
    assert rows["drawer"]["n_meshes"] == 1
    assert rows["drawer"]["mesh_bytes"] == (folder / "meshes" / "drawer.obj").stat().st_size
    assert rows["cap"]["mass"] is None and rows["cap"]["inertia_method"] is None


def test_tables_are_sorted_and_parquet_is_byte_identical(cabinet, tmp_path):
    obj, folder = cabinet
    rows = joint_rows(obj, "lib__b") + joint_rows(obj, "lib__a")
    table = to_table("joints", rows)
    assert table.schema == SCHEMAS["joints"]
    assert table.column("object_id").to_pylist()[:4] == ["lib__a"] * 4
    assert table.column("joint_index").to_pylist()[:4] == [0, 1, 2, 3]
    write_table(table, tmp_path / "a.parquet")
    write_table(to_table("joints", list(reversed(rows))), tmp_path / "b.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    back = pq.read_table(tmp_path / "a.parquet")
    assert back.schema.equals(SCHEMAS["joints"])
    assert back.column("upper").to_pylist()[2] == math.inf
    metadata = pq.read_metadata(tmp_path / "a.parquet")
    assert b"pandas" not in (metadata.metadata or {}), "no pandas metadata"


def test_a_table_written_object_by_object_holds_the_sorted_rows(cabinet, tmp_path, monkeypatch):
    """TableWriter: rows handed over one object at a time (object ids in order, each object's
    rows in any order) make the table `to_table` sorts, in row groups of about ROWS_PER_GROUP
    rows (Arrow batches of about BATCH_ROWS); with fewer rows, the very bytes of
    `write_table`."""
    obj, _ = cabinet
    objects = [joint_rows(obj, f"lib__{i:02d}") for i in range(12)]
    whole = to_table("joints", [r for rows in objects for r in rows])
    write_table(whole, tmp_path / "whole.parquet")
    monkeypatch.setattr(TableWriter, "BATCH_ROWS", 3)
    for size, name in ((10, "grouped"), (TableWriter.ROWS_PER_GROUP, "one")):
        monkeypatch.setattr(TableWriter, "ROWS_PER_GROUP", size)
        writer = TableWriter("joints", tmp_path / f"{name}.parquet")
        for rows in objects:
            writer.add(list(reversed(rows)))
        writer.close()
        assert writer.count == whole.num_rows
        assert pq.read_table(tmp_path / f"{name}.parquet").equals(whole)
    grouped = pq.read_metadata(tmp_path / "grouped.parquet")
    sizes = [grouped.row_group(k).num_rows for k in range(grouped.num_row_groups)]
    assert len(sizes) > 1 and max(sizes) < 10 + 3 + len(objects[0]), sizes
    assert (tmp_path / "one.parquet").read_bytes() == (tmp_path / "whole.parquet").read_bytes()
    empty = TableWriter("joints", tmp_path / "empty.parquet")
    empty.close()
    assert (tmp_path / "empty.parquet").read_bytes() == _empty_bytes("joints", tmp_path)


def test_the_objects_table_from_rows_kept_as_arrow_batches(cabinet, tmp_path, monkeypatch):
    """The assembly keeps the accepted objects' rows as Arrow batches (`RowBatches`) and makes
    the objects table of them (`_objects_table`): the table `to_table` makes of the same rows
    with their cluster, split and eval200, without the objects moved out as duplicates, to
    the byte."""
    from duplicates import DuplicateResult
    from export.assemble import _ROW_SCHEMA, _Decided, _objects_table
    from export.selection import assign_splits
    from taxonomy import UNASSIGNED_SUPERCATEGORY

    obj, folder = cabinet
    monkeypatch.setattr(TableWriter, "BATCH_ROWS", 3)
    ids = [f"lib__{k:02d}" for k in (7, 3, 11, 0, 5, 9, 1, 10, 2, 8, 4, 6)]
    rows = [make_object_row(obj, folder, object_id=i, source_id=i[5:]) for i in ids]
    kept = RowBatches(_ROW_SCHEMA)
    for row in rows:
        kept.add(row)
    assert len(kept.batches) == 4
    with pytest.raises(KeyError, match="lacks"):
        kept.add({k: v for k, v in rows[0].items() if k != "category"})
    found = DuplicateResult(
        cluster_of={**{i: i for i in ids}, "lib__09": "lib__03", "lib__05": "lib__03"},
        rows=[],
        moved_out={"lib__05": "lib__03"},
    )
    accepted = [
        _Decided(i, 0, k, "lib", i[5:], None, True, None, None)
        for k, i in enumerate(ids)
        if i not in found.moved_out
    ]
    table = _objects_table(kept.table(), accepted, found)

    expected = assign_splits(
        [
            {**r, "cluster_id": found.cluster_of[i], "is_canonical": found.is_canonical(i)}
            for i, r in zip(ids, rows, strict=True)
            if i not in found.moved_out
        ],
        last={UNASSIGNED_SUPERCATEGORY},
    )
    assert table.equals(to_table("objects", expected))
    assert table["object_id"].to_pylist() == sorted(set(ids) - {"lib__05"})
    cluster = {r["object_id"]: r["cluster_id"] for r in table.to_pylist()}
    assert cluster["lib__09"] == "lib__03" and cluster["lib__07"] == "lib__07"
    write_table(table, tmp_path / "kept.parquet")
    write_table(to_table("objects", expected), tmp_path / "listed.parquet")
    assert (tmp_path / "kept.parquet").read_bytes() == (tmp_path / "listed.parquet").read_bytes()


def _empty_bytes(name, tmp_path):
    write_table(to_table(name, []), tmp_path / "written_empty.parquet")
    return (tmp_path / "written_empty.parquet").read_bytes()


def test_reject_row_and_empty_tables(tmp_path):
    row = reject_row(
        source="lib",
        source_id="x",
        source_path="x.urdf",
        object_id="lib__x",
        stage="parse",
        code="xml.malformed",
        message="unclosed tag",
    )
    schemas.validate(row, "rejects")
    for name in SCHEMAS:
        table = to_table(name, [])
        write_table(table, tmp_path / f"{name}.parquet")
        assert pq.read_table(tmp_path / f"{name}.parquet").num_rows == 0


def test_bounding_box_of_an_object_without_geometry():
    obj = ArticulatedObject(
        "bare",
        [Link("a"), Link("b")],
        [
            Joint(
                "j",
                "prismatic",
                "a",
                "b",
                origin=pose((0, 2, 0)),
                axis=np.array([1.0, 0, 0]),
                lower=0,
                upper=1,
            )
        ],
    )
    lo, hi = bounding_box(obj, None)
    assert lo == [0, 0, 0] and hi == [0, 2, 0]


def test_bounding_box_is_the_box_the_canonical_placement_centres(tmp_path):
    # Visuals on the base only, a collision-only link (a caster) below it: each link counts by
    # its visuals, else its collisions, in the placement as in the manifest, so the object stands
    # on the caster: the bbox sits on z = 0, centred in x and y.
    urdf = """<robot name="mixed">
      <link name="base"><visual><origin xyz="3 0 5"/><geometry><box size="1 2 1"/></geometry>
      </visual></link>
      <link name="arm"><collision><origin xyz="0 0 -2"/><geometry><box size="0.2 0.2 0.2"/>
      </geometry></collision></link>
      <joint name="j" type="prismatic"><parent link="base"/><child link="arm"/>
        <axis xyz="1 0 0"/><limit lower="0" upper="0.1" effort="1" velocity="1"/></joint>
    </robot>"""
    root = write(tmp_path / "src", {"mixed.urdf": urdf})
    [candidate] = discover(urdf_source(root))
    result = normalize_candidate(candidate, tmp_path / "out")
    low, high = bounding_box(result.object, result.urdf_path.parent)
    assert low == pytest.approx([-1.8, -1.0, 0.0], abs=1e-12)
    assert high == pytest.approx([1.8, 1.0, 7.6], abs=1e-12)
