"""A full disk stops the build (issue: a full disk published an empty release, every object
rejected as `io.error`): `--out` and the cache on a real small file system (a tmpfs mounted for
the test, which needs root: CI runs as root, elsewhere the test is skipped), filled during the
build. The build exits 4 with one line, publishes nothing and caches no object as rejected: the
same command on a larger file system then accepts every object. The Prefect builds use the
session's Prefect API (a temporary server's start is not what these tests are about)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from verify_assets import door_urdf, write

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root (CI has it)"),
]

TIMEOUT = 600
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(params=["24k", "256k"], ids=["full-during-objects", "full-during-assembly"])
def small_disk(tmp_path, request):
    mount = tmp_path / "disk"
    mount.mkdir()
    size = f"size={request.param}"
    subprocess.run(["mount", "-t", "tmpfs", "-o", size, "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def _build(sources: Path, disk: Path, runner: str, api: str | None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "flows.cli", "build", "--sources", str(sources)]
    command += ["--out", str(disk / "release"), "--cache-dir", str(disk / "cache")]
    command += ["--runner", runner, "--workers", "2", "--version", "disk"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "MUJOCO_GL": "disable"}
    if api:
        env["PREFECT_API_URL"] = api
    return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, env=env)


@pytest.mark.parametrize("runner", ["local", "process"])
def test_a_full_disk_stops_the_build_and_publishes_nothing(tmp_path, small_disk, runner, request):
    api = request.getfixturevalue("prefect_api_url") if runner == "process" else None
    for i in range(12):
        write(tmp_path / "lib" / f"door_{i}", {"cabinet.urdf": door_urdf(upper=1.0 + i / 20)})
    sources = tmp_path / "sources.yaml"
    sources.write_text(
        f"sources:\n  - {{name: doors, format: urdf, path: {tmp_path / 'lib'}, license: t}}\n",
        encoding="utf-8",
    )
    full = _build(sources, small_disk, runner, api)
    assert full.returncode == 4, full.stderr
    said = [line for line in full.stderr.splitlines() if "disk full" in line]
    assert said == [full.stderr.splitlines()[-1]], full.stderr  # one line, the last
    assert said[0].startswith("arena build: disk full writing ")
    assert said[0].endswith(": nothing published; the cache is intact")
    assert "Traceback" not in full.stderr and "ERROR" not in full.stderr
    assert not (small_disk / "release").exists()
    assert [p.name for p in small_disk.iterdir() if p.name.startswith(".release")] == []

    subprocess.run(["mount", "-o", "remount,size=256m", str(small_disk)], check=True)
    again = _build(sources, small_disk, runner, api)
    assert again.returncode == 0, again.stderr
    objects = pq.read_table(small_disk / "release" / "manifest" / "objects.parquet")
    rejects = pq.read_table(small_disk / "release" / "manifest" / "rejects.parquet")
    assert (objects.num_rows, rejects.num_rows) == (12, 0)
