"""The release manifests: Arrow schemas, row builders and deterministic Parquet writing.

Every table is defined once, by the JSON Schema of one row in `schemas/<table>.schema.json`; its
Arrow schema (`SCHEMAS`) is derived from it, with each column's description in the field
metadata. Rows are plain dicts of JSON-friendly values (lists, floats, strings), so they survive
the result cache bit for bit.

Frames: `joints.axis`, `joints.origin`, `joints.twist`, `joints.child_com` and
`joints.child_inertia` are in the world frame of the release (the root link frame of the
normalized object, at rest). `links.com` and `links.inertia` are in the link's own frame, as in
the URDF. Inertia tensors are row-major 3x3 (9 numbers). Continuous joints have
lower = -inf and upper = +inf.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import schemas
from export.digests import sha256_file, sha256_hex
from normalize.convention import rest_bounds
from normalize.meshes import collision_fidelity
from normalize.mjcf_writer import MJCF_NAME
from normalize.model import ArticulatedObject, Geometry
from normalize.urdf_writer import SOURCE_COLLISION_NAME
from normalize.usd_writer import USD_NAME
from previews.render import REST

TABLES = ("objects", "joints", "links", "rejects", "review", "duplicates", "source_files")


# --------------------------------------------------------------------------- schemas
# The JSON Schema of a row (schemas/<table>.schema.json) is the one definition of a table: its
# columns, their order, types and descriptions. The Arrow schema is derived from it: "integer"
# is int32 unless the property says "format": "int64", "number" is float64, a "string" with a
# "contentEncoding" is binary (base64 in JSON), an array with
# minItems == maxItems is a fixed-size list, an object is a struct, and a type list with
# "null" makes the column nullable. Each field carries its description in its metadata, which
# Parquet keeps (pyarrow.parquet.read_schema shows it).
def _arrow_type(prop: dict) -> tuple[pa.DataType, bool]:
    """(Arrow type, nullable) of one JSON Schema property."""
    types = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
    nullable = "null" in types
    (kind,) = [t for t in types if t != "null"]
    if kind == "string":
        return (pa.binary() if "contentEncoding" in prop else pa.string()), nullable
    if kind == "integer":
        return (pa.int64() if prop.get("format") == "int64" else pa.int32()), nullable
    if kind == "number":
        return pa.float64(), nullable
    if kind == "boolean":
        return pa.bool_(), nullable
    if kind == "array":
        item, _ = _arrow_type(prop["items"])
        n = prop.get("maxItems")
        fixed = n is not None and prop.get("minItems") == n
        return (pa.list_(item, n) if fixed else pa.list_(item)), nullable
    if kind == "object":
        return pa.struct(_fields(prop)), nullable
    raise ValueError(f"no Arrow type for JSON Schema type {kind!r}")


def _fields(schema: dict) -> list[pa.Field]:
    fields = []
    for name, prop in schema["properties"].items():
        type_, nullable = _arrow_type(prop)
        meta = {"description": prop["description"]} if "description" in prop else None
        fields.append(pa.field(name, type_, nullable=nullable, metadata=meta))
    return fields


def arrow_schema(table: str) -> pa.Schema:
    """The Arrow schema of a manifest, from its JSON Schema (with column descriptions)."""
    schema = schemas.load_schema(table)
    return pa.schema(_fields(schema), metadata={"description": schema["description"]})


SCHEMAS: dict[str, pa.Schema] = {name: arrow_schema(name) for name in TABLES}

# The objects of one split (data/objects/<split>.parquet, the card's default config): the objects
# columns and a thumbnail, which the Parquet schema's "huggingface" metadata (what the datasets
# library writes and reads back) declares an Image, so that viewers show the picture.
IMAGE_COLUMNS = ("thumbnail",)


def split_schema() -> pa.Schema:
    """The Arrow schema of a split file: objects, then the columns of `objects_split`."""
    extra = schemas.load_schema("objects_split")
    features = {name: {"_type": "Image"} for name in IMAGE_COLUMNS}
    metadata = {
        "description": extra["description"],
        "huggingface": json.dumps({"info": {"features": features}}, sort_keys=True),
    }
    return pa.schema([*SCHEMAS["objects"], *_fields(extra)], metadata=metadata)


SPLIT_SCHEMA = split_schema()

# How each table's rows are ordered in the Parquet file (rows with equal keys keep their order).
SORT_KEYS: dict[str, tuple[str, ...]] = {
    "objects": ("object_id",),
    "joints": ("object_id", "joint_index"),
    "links": ("object_id", "link_name"),
    "rejects": ("source", "source_id"),
    "review": ("object_id",),
    "source_files": ("object_id", "path"),
    "duplicates": ("cluster_id", "object_id", "matched_to"),
}


# --------------------------------------------------------------------------- hashing
def folder_digests(folder: Path) -> dict[str, str]:
    """sha256 of every regular file under `folder`, by sorted '/'-separated relative path."""
    folder = Path(folder)
    names = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    return {name: sha256_file(folder / name) for name in names}


def checksum_lines(entries: Iterable[tuple[str, str]]) -> str:
    """`<sha256>  <path>` lines of (path, sha256) entries sorted by path (sha256sum format)."""
    return "".join(f"{digest}  {name}\n" for name, digest in sorted(entries))


def digest_listing(entries: Iterable[tuple[str, str]]) -> str:
    """sha256 over the `checksum_lines` of the entries."""
    return sha256_hex(checksum_lines(entries).encode("utf-8"))


# --------------------------------------------------------------------------- geometry
def _mesh_path(g: Geometry, object_dir: Path) -> Path:
    path = Path(g.filename)
    return path if path.is_absolute() else object_dir / path


def bounding_box(obj: ArticulatedObject, object_dir: Path | None) -> tuple[list, list]:
    """World-frame axis-aligned bounds of the written object at rest, exact for every shape, on
    the shapes its canonical placement is defined on (`normalize.convention.rest_bounds`)."""
    low, high = rest_bounds(obj, root=object_dir, folder=object_dir)
    return np.asarray(low, dtype=float).tolist(), np.asarray(high, dtype=float).tolist()


# --------------------------------------------------------------------------- row builders
def _floats(values) -> list[float]:
    return [float(v) for v in np.asarray(values, dtype=float).ravel()]


def joint_rows(obj: ArticulatedObject, object_id: str) -> list[dict]:
    """One row per joint (fixed ones included, in the object's joint order)."""
    screws = obj.screws()
    mass, com, inertia = obj.child_mass_moments()
    rows = []
    for i, joint in enumerate(obj.joints):
        rows.append(
            {
                "object_id": object_id,
                "joint_index": i,
                "joint_name": joint.name,
                "source_joint_name": joint.source_name,
                "type": joint.type,
                "parent": joint.parent,
                "child": joint.child,
                "axis": _floats(screws.axis[i]),
                "origin": _floats(screws.point[i]),
                "lower": float(joint.lower),
                "upper": float(joint.upper),
                "pitch": float(joint.pitch),
                "twist": _floats(screws.twist[i]),
                "child_mass": float(mass[i]),
                "child_com": _floats(com[i]),
                "child_inertia": _floats(inertia[i]),
                "mimic_joint": joint.mimic.joint if joint.mimic else None,
                "mimic_multiplier": float(joint.mimic.multiplier) if joint.mimic else None,
                "mimic_offset": float(joint.mimic.offset) if joint.mimic else None,
            }
        )
    return rows


def link_rows(obj: ArticulatedObject, object_id: str, object_dir: Path) -> list[dict]:
    """One row per link with its inertial (link frame), the meshes it references and how well
    its collision shapes match its visual ones (`normalize.meshes.collision_fidelity`)."""
    rows = []
    for link in obj.links:
        shapes, hausdorff, volume_ratio = collision_fidelity(link, object_dir)
        meshes = [g for g in (*link.visuals, *link.collisions) if g.kind == "mesh"]
        files = {_mesh_path(g, object_dir) for g in meshes}
        inertial = link.inertial
        rows.append(
            {
                "object_id": object_id,
                "link_name": link.name,
                "source_link_names": list(link.source_names),
                "mass": float(inertial.mass) if inertial else None,
                "com": _floats(inertial.com) if inertial else None,
                "inertia": _floats(inertial.inertia) if inertial else None,
                "inertia_method": inertial.method if inertial else None,
                "n_meshes": len(meshes),
                "mesh_bytes": sum(p.stat().st_size for p in files if p.is_file()),
                "collision_shapes": shapes,
                "collision_hausdorff": hausdorff,
                "collision_volume_ratio": volume_ratio,
            }
        )
    return rows


def object_row(
    obj: ArticulatedObject,
    *,
    object_id: str,
    source: str,
    source_id: str,
    source_path: str,
    license: str,
    source_url: str | None = None,
    source_revision: str | None = None,
    object_dir: Path,
    files: Mapping[str, str],
    urdf_path: str,
    preview_path: str | None,
    scale: float,
    assignment: Mapping,
    status: str,
    warnings: list[str],
    changes: list[str],
    convention_version: str,
    loads_in: list[str],
) -> dict:
    """The objects-table row of one accepted object. `urdf_path` and `preview_path` (the
    contact sheet, None when previews were skipped) are relative to the release root;
    `object_dir` is where the object's files are now and `files` the digests of its asset files
    (`folder_digests(object_dir)` before previews are rendered: previews count in neither
    assets_sha256, n_files nor total_bytes). `split`, `eval200`, `cluster_id` and
    `is_canonical` are filled in when the release is assembled (they depend on the whole
    release)."""
    object_dir = Path(object_dir)
    urdf_name = Path(urdf_path).name
    assets = [(name, d) for name, d in files.items() if name != urdf_name]
    types = [j.type for j in obj.joints]
    bbox_min, bbox_max = bounding_box(obj, object_dir)
    return {
        "object_id": object_id,
        "source": source,
        "source_id": source_id,
        "source_path": source_path,
        "license": license,
        "source_url": source_url,
        "source_revision": source_revision,
        "category": assignment["category"],
        "supercategory": assignment["supercategory"],
        "category_method": assignment["method"],
        "category_confidence": float(assignment["confidence"]),
        "needs_review": bool(assignment["needs_review"]),
        "n_links": len(obj.links),
        "n_joints": sum(t != "fixed" for t in types),
        "n_fixed": types.count("fixed"),
        "n_revolute": types.count("revolute"),
        "n_prismatic": types.count("prismatic"),
        "n_continuous": types.count("continuous"),
        "n_helical": types.count("helical"),
        "n_mimic": sum(j.mimic is not None for j in obj.joints),
        "urdf_path": urdf_path,
        "urdf_sha256": files[urdf_name],
        "mjcf_path": _beside(urdf_path, MJCF_NAME) if MJCF_NAME in files else None,
        "mjcf_sha256": files.get(MJCF_NAME),
        "usd_path": _beside(urdf_path, USD_NAME) if USD_NAME in files else None,
        "usd_sha256": files.get(USD_NAME),
        "source_collision_path": (
            _beside(urdf_path, SOURCE_COLLISION_NAME) if SOURCE_COLLISION_NAME in files else None
        ),
        "assets_sha256": digest_listing(assets),
        "n_files": len(files),
        "total_bytes": sum((object_dir / name).stat().st_size for name in files),
        "preview_path": preview_path,
        "bbox_min": bbox_min,
        "bbox_max": bbox_max,
        "scale": float(scale),
        "mass": float(sum(link.inertial.mass for link in obj.links if link.inertial)),
        "status": status,
        "warnings": sorted(warnings),
        "loads_in": list(loads_in),
        "changes": list(changes),
        "split": "",
        "eval200": False,
        "cluster_id": object_id,
        "is_canonical": True,
        "convention_version": convention_version,
    }


def _beside(urdf_path: str, name: str) -> str:
    return (Path(urdf_path).parent / name).as_posix()


def reject_row(
    *,
    source: str,
    source_id: str,
    source_path: str,
    object_id: str,
    stage: str,
    code: str,
    message: str,
    path: str | None = None,
    element: str | None = None,
) -> dict:
    return {
        "source": source,
        "source_id": source_id,
        "source_path": source_path,
        "object_id": object_id,
        "stage": stage,
        "code": code,
        "message": message,
        "path": path,
        "element": element,
    }


# --------------------------------------------------------------------------- tables
def to_table(name: str, rows: list[dict]) -> pa.Table:
    """Rows as an Arrow table of the table's schema, sorted by its sort key."""
    keys = SORT_KEYS[name]
    ordered = sorted(rows, key=lambda r: tuple(r[k] for k in keys))
    schema = SCHEMAS[name]
    columns = {f.name: [r[f.name] for r in ordered] for f in schema}
    return pa.Table.from_pydict(columns, schema=schema)


PARQUET_SETTINGS = {
    "compression": "zstd",
    "compression_level": 3,
    "use_dictionary": True,
    "write_statistics": True,
    "data_page_size": 1 << 20,
}


def with_thumbnails(objects: pa.Table, root: Path) -> pa.Table:
    """The objects table as a split file holds it: with each object's rest view (the PNG beside
    its contact sheet `preview_path`, read under the release `root`) as an Image thumbnail."""
    thumbnails = []
    for sheet in objects["preview_path"].to_pylist():
        path = sheet and (Path(sheet).parent / REST).as_posix()
        thumbnails.append(path and {"bytes": (Path(root) / path).read_bytes(), "path": path})
    columns = [*objects.columns, pa.array(thumbnails, SPLIT_SCHEMA.field("thumbnail").type)]
    return pa.Table.from_arrays(columns, schema=SPLIT_SCHEMA)


def write_table(table: pa.Table, path: Path) -> None:
    """Write Parquet deterministically: the same rows give the same bytes (no timestamps are
    written; compression and page settings are fixed). A table without rows is written without
    row groups: the `datasets` library fails on an empty row group, not on none."""
    if table.num_rows == 0:
        with pq.ParquetWriter(str(path), table.schema, **PARQUET_SETTINGS):
            return
    pq.write_table(table, str(path), row_group_size=1 << 20, **PARQUET_SETTINGS)
