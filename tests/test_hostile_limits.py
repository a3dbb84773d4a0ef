"""Bounds per object: an object that runs past its wall clock in a worker process is refused
with `limits.time` (never cached: a faster machine may finish it) and the worker goes on with
the next object. The object here is a 900-joint star, whose attachment check is quadratic."""

from __future__ import annotations

import time

import pyarrow.parquet as pq
from verify_assets import box, door_urdf, write

from flows.commands import build_release
from normalize.sources import load_sources
from pipeline.build import BuildConfig

JOINTS = 900


def _star() -> str:
    links = "".join(f'<link name="l{i}">{box((0.01, 0.01, 0.01))}</link>' for i in range(JOINTS))
    joints = "".join(
        f'<joint name="j{i}" type="revolute"><parent link="base"/><child link="l{i}"/>'
        f'<origin xyz="{0.02 * (i % 30)} {0.02 * (i // 30)} 0.05"/><axis xyz="0 0 1"/>'
        '<limit lower="-1" upper="1"/></joint>'
        for i in range(JOINTS)
    )
    base = f'<link name="base">{box((0.6, 0.6, 0.05), (0.3, 0.3, 0.0))}</link>'
    return f'<?xml version="1.0"?><robot name="star">{base}{links}{joints}</robot>'


def test_an_object_past_its_wall_clock_is_refused_and_the_build_goes_on(tmp_path):
    write(tmp_path / "lib", {"star/star.urdf": _star(), "door/door.urdf": door_urdf()})
    (tmp_path / "sources.yaml").write_text(
        "sources:\n  - {name: lib, format: urdf, path: lib, license: t}\n", encoding="utf-8"
    )

    def build(out):
        config = BuildConfig(
            sources=load_sources(tmp_path / "sources.yaml"),
            out=tmp_path / out,
            version="t",
            runner="local",
            workers=2,  # worker processes: where the wall clock applies
            cache_dir=tmp_path / "cache",
            live=False,
            object_seconds=10.0,
        )
        return build_release(config)

    started = time.perf_counter()
    first = build("first")
    assert time.perf_counter() - started < 60
    rejects = pq.read_table(tmp_path / "first" / "manifest" / "rejects.parquet").to_pylist()
    assert [(r["source_id"], r["code"]) for r in rejects] == [("star/star", "limits.time")]
    assert first.info["counts"]["accepted"] == 1
    second = build("second")
    assert second.computed == ["lib__star__star"], "a time-out is never cached"
