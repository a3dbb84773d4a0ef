"""`arena build --runner dask --dask-address` on an existing cluster: a `dask scheduler` and a
`dask worker` with two worker processes, started as real subprocesses and kept across builds.
Each build starts its own temporary Prefect server (another port each time), as separate
`arena build` commands do. Three builds in a row succeed with the release of the local build;
a build whose Dask worker process is killed with SIGKILL ends with that release too, or with a
clear message after which a rerun finishes it from the cache."""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
pytest.importorskip("prefect_dask")

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """The scheduler's address; the scheduler and the workers end with the module."""
    from distributed import Client

    root = tmp_path_factory.mktemp("dask_cluster")
    scheduler_file = root / "scheduler.json"
    env = {**os.environ, "PREFECT_LOGGING_LEVEL": "WARNING"}
    env.pop("PREFECT_API_URL", None)
    with open(root / "cluster.log", "wb") as logs:  # the processes keep their own copy
        common = dict(stdout=logs, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        started = [
            subprocess.Popen(
                [BIN / "dask", "scheduler", "--host", "127.0.0.1", "--port", "0"]
                + ["--scheduler-file", scheduler_file, "--no-dashboard"],
                **common,
            )
        ]
        deadline = time.monotonic() + 60
        while not scheduler_file.is_file() and time.monotonic() < deadline:
            time.sleep(0.2)
        started.append(
            subprocess.Popen(
                [BIN / "dask", "worker", "--scheduler-file", scheduler_file]
                + ["--nworkers", "2", "--nthreads", "1", "--no-dashboard"],
                **common,
            )
        )
    address = json.loads(scheduler_file.read_text())["address"]
    with Client(address, timeout=60) as client:
        client.wait_for_workers(2, timeout=120)
    try:
        yield address
    finally:
        for process in reversed(started):
            os.killpg(process.pid, signal.SIGTERM)
        for process in started:
            process.wait(30)


def arena_build(library: Path, out: Path, address: str, cache: Path | None = None):
    """An `arena build` subprocess on the cluster, with its own temporary Prefect server."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    cached = ["--cache-dir", str(cache)] if cache else ["--no-cache"]
    return subprocess.Popen(
        [BIN / "arena", "build", "--sources", library / "sources.yaml", "--out", out]
        + ["--version", "test", "--runner", "dask", "--dask-address", address, *cached],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        text=True,
    )


def content_hash(release: Path) -> str:
    return json.loads((release / "release.json").read_text())["content_hash"]


def test_three_builds_in_a_row_on_one_cluster(cluster, sample_library, sample_release, tmp_path):
    for k in (1, 2, 3):
        build = arena_build(sample_library, tmp_path / f"release{k}", cluster)
        output, _ = build.communicate(timeout=600)
        assert build.returncode == 0, f"build {k} failed:\n{output}"
        said = f"Dask cluster {cluster}, 2 workers; dashboard (none: the scheduler serves no "
        assert said in output, output  # started with --no-dashboard: no link that answers
        assert content_hash(tmp_path / f"release{k}") == content_hash(sample_release)


def test_a_killed_dask_worker_loses_nothing(cluster, sample_library, sample_release, tmp_path):
    from distributed import Client

    out, cache = tmp_path / "release", tmp_path / "cache"
    build = arena_build(sample_library, out, cluster, cache)
    deadline = time.monotonic() + 300
    while not list(cache.glob("v*/index/*/*.json")):  # objects are being computed
        assert build.poll() is None and time.monotonic() < deadline, build.communicate()[0]
        time.sleep(0.1)
    with Client(cluster) as client:
        victim = next(iter(client.run(os.getpid).values()))
    os.kill(victim, signal.SIGKILL)
    output, _ = build.communicate(timeout=600)
    if build.returncode != 0:  # then a one-line reason, and a rerun completes from the cache
        assert "Traceback" not in output and "FAILED" in output, output
        rerun = arena_build(sample_library, out, cluster, cache)
        output, _ = rerun.communicate(timeout=600)
        assert rerun.returncode == 0, output
    assert content_hash(out) == content_hash(sample_release)


class Answering(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()


def test_a_dashboard_link_is_printed_only_where_a_dashboard_answers():
    from flows.dask import served_dashboard

    server = http.server.HTTPServer(("127.0.0.1", 0), Answering)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        answering = f"http://127.0.0.1:{server.server_port}/status"
        assert served_dashboard(answering) == answering
    finally:
        server.shutdown()
        server.server_close()
    assert served_dashboard(answering) is None  # nothing listens there any more
    assert served_dashboard(None) is None
