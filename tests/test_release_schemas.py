"""One definition per manifest: the Arrow schemas are derived from the JSON Schemas in schemas/,
every column has a description, and the released Parquet files carry it in their field metadata."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import schemas
from export.manifests import SCHEMAS, SPLIT_SCHEMA, TABLES


def _description(field: pa.Field) -> dict:
    meta = field.metadata or {}
    return {"description": meta[b"description"].decode()} if b"description" in meta else {}


def _nullable(expected: dict, field: pa.Field) -> dict:
    return {**expected, "type": [expected["type"], "null"]} if field.nullable else expected


def json_type(arrow_type: pa.DataType) -> dict:
    if pa.types.is_string(arrow_type):
        return {"type": "string"}
    if pa.types.is_binary(arrow_type):
        return {"type": "string", "contentEncoding": "base64"}
    if pa.types.is_integer(arrow_type):
        return {"type": "integer", **({"format": "int64"} if arrow_type == pa.int64() else {})}
    if pa.types.is_floating(arrow_type):
        return {"type": "number"}
    if pa.types.is_boolean(arrow_type):
        return {"type": "boolean"}
    if pa.types.is_fixed_size_list(arrow_type):
        n = arrow_type.list_size
        return {
            "type": "array",
            "items": json_type(arrow_type.value_type),
            "minItems": n,
            "maxItems": n,
        }
    if pa.types.is_list(arrow_type):
        return {"type": "array", "items": json_type(arrow_type.value_type)}
    if pa.types.is_struct(arrow_type):
        return {
            "type": "object",
            "additionalProperties": False,
            "required": [f.name for f in arrow_type],
            "properties": {
                f.name: {**_description(f), **_nullable(json_type(f.type), f)} for f in arrow_type
            },
        }
    raise AssertionError(f"no JSON counterpart for {arrow_type}")


def assert_derived(name: str, arrow: list[pa.Field], schema: dict) -> None:
    names = [f.name for f in arrow]
    assert list(schema["properties"]) == names, "same columns in the same order"
    assert schema["required"] == names, "every column is present in every row"
    assert schema["additionalProperties"] is False
    for field in arrow:
        prop = schema["properties"][field.name]
        expected = _nullable(json_type(field.type), field)
        got = {k: prop.get(k) for k in expected}
        assert got == expected, f"{name}.{field.name}: JSON {got} vs Arrow {field.type}"
        assert set(prop) - set(expected) <= {"description", "enum"}, f"{name}.{field.name}"
        assert field.metadata[b"description"].decode() == prop["description"]


@pytest.mark.parametrize("table", TABLES)
def test_arrow_schema_is_derived_from_the_json_schema(table):
    assert_derived(table, list(SCHEMAS[table]), schemas.load_schema(table))


def test_split_files_add_a_thumbnail_typed_as_an_image():
    objects = list(SCHEMAS["objects"])
    assert list(SPLIT_SCHEMA)[: len(objects)] == objects
    added = list(SPLIT_SCHEMA)[len(objects) :]
    assert_derived("objects_split", added, schemas.load_schema("objects_split"))
    thumbnail = SPLIT_SCHEMA.field("thumbnail")
    assert thumbnail.type == pa.struct({"bytes": pa.binary(), "path": pa.string()})
    features = json.loads(SPLIT_SCHEMA.metadata[b"huggingface"])["info"]["features"]
    assert features == {"thumbnail": {"_type": "Image"}}


def test_derived_types():
    objects, links = SCHEMAS["objects"], SCHEMAS["links"]
    assert objects.field("total_bytes").type == pa.int64()
    assert objects.field("n_joints").type == pa.int32()
    assert objects.field("bbox_min").type == pa.list_(pa.float64(), 3)
    assert objects.field("warnings").type == pa.list_(pa.string())
    assert not objects.field("object_id").nullable
    assert links.field("com").nullable and links.field("com").type == pa.list_(pa.float64(), 3)
    assert SCHEMAS["review"].field("candidates").type.value_type.field("score").type == (
        pa.float64()
    )


def test_every_released_parquet_field_has_a_description(sample_release):
    files = sorted((sample_release / "manifest").glob("*.parquet"))
    files += sorted((sample_release / "data").rglob("*.parquet"))
    assert len(files) == len(TABLES) + 3
    for path in files:
        schema = pq.read_schema(path)
        assert schema.metadata[b"description"], path.name
        for field in schema:
            text = (field.metadata or {}).get(b"description", b"").decode()
            assert len(text) > 5, f"{path.name}: {field.name} has no description"


def test_every_written_table_has_a_schema_file():
    for table in TABLES:
        assert schemas.load_schema(table)["title"].startswith(table)
    assert schemas.load_schema("release")["properties"]["format"]["const"]


def test_row_schema_rejects_wrong_rows():
    row = {
        "source": "s",
        "source_id": "a/b",
        "source_path": "a/b.urdf",
        "object_id": "s__a__b",
        "stage": "parse",
        "code": "xml.malformed",
        "message": "bad",
        "path": None,
        "element": None,
    }
    schemas.validate(row, "rejects")
    with pytest.raises(schemas.SchemaValidationError, match="code"):
        schemas.validate({**row, "code": 3}, "rejects")
    with pytest.raises(schemas.SchemaValidationError, match="extra"):
        schemas.validate({**row, "extra": 1}, "rejects")
    joint = {name: None for name in SCHEMAS["joints"].names}
    with pytest.raises(schemas.SchemaValidationError):
        schemas.validate(joint, "joints")
