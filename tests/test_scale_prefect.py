"""The Prefect build with a large configuration: flow runs carry only small parameters (the
Prefect API refuses more than 512 KB of them), so the size of a source's configuration and the
number of its candidates do not matter. Before, each source subflow received its candidates,
each repeating the source configuration: a 5,000-object generated library failed (2.9 MB)."""

from __future__ import annotations

import json

import pytest
import yaml

from flows.commands import build_release
from samples.generate import generate_library

pytestmark = pytest.mark.slow


def test_prefect_build_with_a_configuration_far_above_the_parameter_limit(
    builds, prefect_harness, tmp_path
):
    from prefect.client.orchestration import get_client

    library = tmp_path / "library"
    generate_library(library, n=0, seed=0)
    sources_file = library / "sources.yaml"
    data = yaml.safe_load(sources_file.read_text(encoding="utf-8"))
    globs = [f"no_such_object_{i:05d}/*" for i in range(25_000)]  # 650 KB of configuration
    [entry] = [e for e in data["sources"] if e["name"] == "sample_urdf"]
    entry.setdefault("allowances", []).append(
        {"check": "limits.reversed", "reason": "a long list", "objects": globs}
    )
    sources_file.write_text(yaml.safe_dump(data), encoding="utf-8")
    config = builds.config(sources_file, tmp_path / "release", runner="process")
    [big] = [s for s in config.sources if s.name == "sample_urdf"]
    assert len(json.dumps(big.as_dict())) > 512 * 1024
    result = build_release(config)
    assert result.info["counts"]["accepted"] == 40 and result.internal_errors == []

    with get_client(sync_client=True) as client:
        flows = {f.id: f.name for f in client.read_flows(limit=200)}
        runs = [r for r in client.read_flow_runs(limit=200) if r.parameters.get("objects")]
    mine = {r.name: r.parameters for r in runs if flows[r.flow_id] == "arena-source"}
    names = {s.name for s in config.sources}
    assert names <= set(mine), "one arena-source run per source, named by the source"
    for name in names:
        params = mine[name]
        assert params["source_name"] == name and params["objects"] > 0
