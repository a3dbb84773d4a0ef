"""The one way the pipeline reads YAML (sources, overrides, allowances, taxonomy files).

Safe tags only, a size cap, and no aliases: an alias (`*name`) lets a few hundred bytes expand
into gigabytes (a "billion laughs"), and no file of the project needs one. The document is
scanned for alias events first (libyaml's parser: fast, no expansion; skipped for a document
without a `*`, which every alias needs), then loaded.
"""

from __future__ import annotations

import os
from pathlib import Path

from normalize import files

MAX_YAML_BYTES = 16 * 1024 * 1024


class YamlError(ValueError):
    """A YAML file that cannot be used: `code` is yaml.alias, yaml.too_large, yaml.invalid or
    yaml.unreadable."""

    def __init__(self, message: str, code: str):
        super().__init__(f"[{code}] {message}")
        self.code = code


def parse_yaml(text: str | bytes, where: str = "YAML document") -> object:
    """The document in `text`; YamlError for aliases or invalid YAML."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader when built
    try:
        if (b"*" if isinstance(text, bytes) else "*") in text:  # every alias is written *name
            for event in yaml.parse(text, Loader=loader):
                if isinstance(event, yaml.AliasEvent):
                    mark = event.start_mark
                    line = f" (line {mark.line + 1})" if mark is not None else ""
                    raise YamlError(
                        f"{where} uses a YAML alias (*{event.anchor}){line}; aliases are refused",
                        "yaml.alias",
                    )
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        raise YamlError(f"{where} is not valid YAML: {exc}", "yaml.invalid") from exc
    except UnicodeDecodeError as exc:
        raise YamlError(f"{where} is not UTF-8: {exc}", "yaml.invalid") from exc


def load_yaml(path: str | os.PathLike, max_bytes: int = MAX_YAML_BYTES) -> object:
    """The document in the regular file `path` (at most `max_bytes`); YamlError otherwise."""
    from normalize.errors import AssetError

    try:
        data = files.read_regular(path, max_bytes, too_large="yaml.too_large")
    except FileNotFoundError as exc:
        raise YamlError(f"cannot read {path}: {exc.strerror or exc}", "yaml.unreadable") from exc
    except AssetError as exc:
        code = exc.code if exc.code == "yaml.too_large" else "yaml.unreadable"
        raise YamlError(f"cannot read {path}: {exc.message}", code) from exc
    return parse_yaml(data, str(Path(path)))
