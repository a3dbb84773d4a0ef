"""JSON Schemas of every file the pipeline reads or writes, and one way to validate against them."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # `validate` imports it when it runs
    import jsonschema


class SchemaValidationError(ValueError):
    """An instance does not match its schema; the message lists every problem with its location."""

    def __init__(self, schema_name: str, problems: list[str], source: str | None = None):
        self.schema_name = schema_name
        self.problems = problems
        where = f" in {source}" if source else ""
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{len(problems)} problem(s){where} (schema {schema_name}):\n{lines}")


@cache
def load_schema(name: str) -> dict:
    """The schema `schemas/<name>.schema.json` as a dict."""
    text = resources.files(__name__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def _location(error: jsonschema.ValidationError) -> str:
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return path.lstrip(".") or "(top level)"


def validate(instance, name: str, source: str | None = None) -> None:
    """Raise `SchemaValidationError` naming every mismatch of `instance` against schema `name`."""
    import jsonschema

    schema = load_schema(name)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    if errors:
        raise SchemaValidationError(
            name, [f"{_location(e)}: {e.message}" for e in errors], source=source
        )
