"""One definition per manifest: the Arrow schemas are derived from the JSON Schemas in schemas/,
every column has a description, and the released Parquet files carry it in their field metadata."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import schemas
from export.manifests import SCHEMAS, TABLES


def _description(field: pa.Field) -> dict:
    meta = field.metadata or {}
    return {"description": meta[b"description"].decode()} if b"description" in meta else {}


def json_type(arrow_type: pa.DataType) -> dict:
    if pa.types.is_string(arrow_type):
        return {"type": "string"}
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
            "properties": {f.name: {**_description(f), **json_type(f.type)} for f in arrow_type},
        }
    raise AssertionError(f"no JSON counterpart for {arrow_type}")


@pytest.mark.parametrize("table", TABLES)
def test_arrow_schema_is_derived_from_the_json_schema(table):
    arrow = SCHEMAS[table]
    schema = schemas.load_schema(table)
    assert list(schema["properties"]) == arrow.names, "same columns in the same order"
    assert schema["required"] == arrow.names, "every column is present in every row"
    assert schema["additionalProperties"] is False
    for field in arrow:
        prop = schema["properties"][field.name]
        expected = json_type(field.type)
        if field.nullable:
            expected["type"] = [expected["type"], "null"]
        got = {k: prop[k] for k in expected}
        assert got == expected, f"{table}.{field.name}: JSON {got} vs Arrow {field.type}"
        assert set(prop) - set(expected) <= {"description", "enum"}, f"{table}.{field.name}"
        assert field.metadata[b"description"].decode() == prop["description"]


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
