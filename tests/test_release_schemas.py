"""The Arrow schema of every manifest and its JSON Schema in schemas/ describe the same columns."""

from __future__ import annotations

import pyarrow as pa
import pytest

import schemas
from export.manifests import SCHEMAS, TABLES


def json_type(arrow_type: pa.DataType) -> dict:
    if pa.types.is_string(arrow_type):
        return {"type": "string"}
    if pa.types.is_integer(arrow_type):
        return {"type": "integer"}
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
            "properties": {f.name: json_type(f.type) for f in arrow_type},
        }
    raise AssertionError(f"no JSON counterpart for {arrow_type}")


@pytest.mark.parametrize("table", TABLES)
def test_arrow_and_json_schema_agree(table):
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
