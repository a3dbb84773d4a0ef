"""Regular files only: a FIFO, a device node or a huge sparse file inside a source root is
refused with a code, never opened blocking nor read in full, by the build (whose cache key
hashes a marker for it), by `arena validate`, and for PartNet-Mobility labels. Each run is a
subprocess with a timeout, so a hang fails the test instead of blocking it."""

from __future__ import annotations

import faulthandler
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
from hostile_library import SPARSE_BYTES, _special, build
from verify_assets import door_urdf, mesh, write

from normalize import files
from normalize.errors import AssetError
from pipeline.cache import NOT_REGULAR, OVER_LIMIT, hash_inputs, input_digest

TIMEOUT = 120  # seconds; a FIFO opened blocking would wait for ever
ARENA = [sys.executable, "-m", "flows.cli"]
REPO = Path(__file__).resolve().parents[1]


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ARENA + args, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, env=_env()
    )


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def test_special_files_are_refused_without_reading_them(tmp_path):
    fifo, device, sparse = tmp_path / "fifo", tmp_path / "zero", tmp_path / "sparse.obj"
    _special(fifo, "fifo")
    has_device = _special(device, "device")
    _special(sparse, "sparse")
    started = time.perf_counter()
    for path in (fifo, device) if has_device else (fifo,):
        try:
            files.read_regular(path, 1024)
            raise AssertionError("read")
        except AssetError as exc:
            assert exc.code == "file.not_regular"
        assert input_digest(path).startswith(NOT_REGULAR)
    try:
        files.read_regular(sparse, 1024, too_large="mesh.too_large")
        raise AssertionError("read")
    except AssetError as exc:
        assert exc.code == "mesh.too_large"
    assert input_digest(sparse) == f"{OVER_LIMIT}{SPARSE_BYTES}"
    assert time.perf_counter() - started < 5, "a special file was read"


def test_a_file_growing_past_its_limit_is_cut(tmp_path):
    path = tmp_path / "a.urdf"
    path.write_bytes(b"x" * 100)
    assert files.read_regular(path, 100) == b"x" * 100
    try:
        files.read_regular(path, 99)
        raise AssertionError("read")
    except AssetError as exc:
        assert exc.code == "file.too_large"
    digests = hash_inputs([path], tmp_path, max_bytes=99)
    assert digests == {str(path): f"{OVER_LIMIT}100"}


def test_validate_refuses_a_fifo_entry_and_mesh_without_hanging(tmp_path):
    lib = tmp_path / "lib"
    write(lib / "good", {"door.urdf": door_urdf()})
    _special(lib / "fifo" / "m.urdf", "fifo")
    write(lib / "mesh", {"m.urdf": door_urdf(door_geometry=mesh("p.obj"))})
    _special(lib / "mesh" / "p.obj", "fifo")
    _special(lib / "x" / "m.xml", "fifo")  # sniffed for its root element: not opened blocking
    done = _run(["validate", str(lib), "--json"], tmp_path)
    assert done.returncode == 1, done.stderr
    reports = {r["source_id"]: r for r in json.loads(done.stdout)["objects"]}
    assert reports["good/door"]["status"] != "fail"
    failed = {k: {c["id"] for c in r["checks"] if not c["passed"]} for k, r in reports.items()}
    assert "file.not_regular" in failed["fifo/m"]
    assert "file.not_regular" in failed["mesh/m"]
    assert "x/m" not in reports  # not an MJCF, SDF or URDF file


def test_a_fifo_meta_json_leaves_the_labels_empty_and_says_so(builds, tmp_path):
    lib = tmp_path / "partnet"
    write(lib / "100", {"mobility.urdf": door_urdf()})
    write(lib / "control", {"mobility.urdf": door_urdf()})
    _special(lib / "100" / "meta.json", "fifo")
    sources = tmp_path / "sources.yaml"
    sources.write_text(
        "sources:\n  - {name: p, format: partnet_mobility, path: partnet, license: test}\n",
        encoding="utf-8",
    )
    faulthandler.dump_traceback_later(TIMEOUT, exit=True)  # a FIFO opened blocking: fail
    try:
        for out in ("cold", "warm"):  # the cache key never reads the FIFO either
            assert build(builds, sources, tmp_path / out, tmp_path / "cache") == 0
    finally:
        faulthandler.cancel_dump_traceback_later()
    rows = pq.read_table(tmp_path / "warm" / "manifest" / "objects.parquet").to_pylist()
    [row] = [r for r in rows if r["source_id"] == "100"]
    assert "labels.unreadable" in row["changes"]
    info = json.loads((tmp_path / "warm" / "release.json").read_text(encoding="utf-8"))
    assert info["counts"]["discovered"] == 2
