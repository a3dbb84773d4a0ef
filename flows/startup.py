"""The Prefect build without waiting for Prefect: its temporary server starts in a background
thread while this thread discovers the sources, looks them up in the cache and hands the
batches of the objects to compute to the worker processes, all in plain Python. Only then does
the build wait for the server and run the flow (`flows.build`), whose batch tasks wait for the
batches already running.

    build_with_prefect(config, called, progress, server)
      staged_build                 lock --out, staging folder      (server starting meanwhile)
      prepare_source per source    discovery, cache lookups
      start_batches                the misses' batches, running in the worker processes
      server.wait()                the rest needs Prefect's API
      flows.build.run_flow         subflow per source with misses, assembly, artifacts

Prefect is not imported by this module: importing it (about 2 s) is part of the server's
start-up in the background thread.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from pathlib import Path

from pipeline.build import (
    BuildConfig,
    BuildResult,
    NoProgress,
    finish_build,
    prepare_source,
    source_run,
    staged_build,
    start_batches,
    worker_pool,
)

# Prefect reads its settings when it is imported: set the defaults first.
PREFECT_DEFAULTS = {
    "PREFECT_LOGGING_LEVEL": "WARNING",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
}
for _name, _value in PREFECT_DEFAULTS.items():
    os.environ.setdefault(_name, _value)


class PrefectServer:
    """The Prefect API of a build: the configured one (PREFECT_API_URL), else Prefect's
    temporary server, started in a background thread by `start()` with a watchdog process
    that stops it if this process dies without cleaning up (Prefect stops the server when the
    process exits normally, but a build killed by SIGKILL or the OOM killer left it running)."""

    def __init__(self):
        self.url: str | None = None  # None: the configured API
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._start, name="prefect-server", daemon=True)

    @classmethod
    def start(cls) -> PrefectServer:
        server = cls()
        server._thread.start()
        return server

    def _start(self) -> None:
        try:
            from prefect.settings import PREFECT_API_URL

            if PREFECT_API_URL.value():
                return
            from prefect.server.api.server import SubprocessASGIServer

            server = SubprocessASGIServer()
            done = threading.Event()
            watcher = threading.Thread(target=_watch, args=(server, done), daemon=True)
            watcher.start()
            try:
                server.start()
            finally:
                done.set()
                watcher.join()
            self.url = server.api_url
        except BaseException as exc:  # handed to the thread that waits
            self._error = exc

    def wait(self) -> float:
        """Block until the API is up (raise what its start-up raised); the seconds waited."""
        started = time.perf_counter()
        self._thread.join()
        if self._error is not None:
            raise self._error
        return time.perf_counter() - started

    @contextlib.contextmanager
    def active(self):
        """PREFECT_API_URL set to this server for the block (nothing to set for a configured
        API)."""
        if self.url is None:
            yield
            return
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings(updates={PREFECT_API_URL: self.url}):
            yield


def _watch(server, done: threading.Event) -> None:
    """Put a watchdog on every process the server's start-up launches (it relaunches uvicorn
    when the port was taken), as soon as it exists: a build killed during the start-up must
    not leave the server behind."""
    while True:
        finished = done.wait(0.05)
        process = server.server_process
        if process is not None:
            stop_with_this_process(process.pid, "prefect.server.api.server")
        if finished:
            return


def build_with_prefect(
    config: BuildConfig,
    called: float,
    progress=None,
    server: PrefectServer | None = None,
    dask_address: str | None = None,
) -> BuildResult:
    """One release build as Prefect flows (`flows.build.run_flow`), with everything that
    needs no Prefect done before waiting for `server` (None: the API is configured and up).
    A failure before the flow (a source that cannot be read) still becomes a Failed flow run.
    When every object comes from the cache, the release is published before the wait, and the
    flow run records it afterwards."""
    with (
        staged_build(config, called) as staged,
        progress or NoProgress() as shown,
        worker_pool(config),
    ):
        prepared, started, failure = [], {}, None
        try:
            for source in config.sources:
                prepared.append(prepare_source(source, staged.settings, shown))
                if config.runner == "process" and prepared[-1].misses:
                    started[source.name] = start_batches(
                        prepared[-1].misses, staged.settings, config
                    )
        except Exception as exc:  # recorded as the flow run's failure
            failure = exc
        finished = None
        if failure is None and not any(p.misses for p in prepared):
            # Nothing to compute: the release is assembled and published now, and the flow
            # run only records it once Prefect is up.
            try:
                finished = finish_build(staged, [source_run(p, [], 0.0) for p in prepared])
            except Exception as exc:
                failure = exc
        waited = server.wait() if server is not None else 0.0
        staged.seconds["orchestrator_start"] = waited
        from flows.build import local_dask_cluster, run_flow

        work = (staged, prepared, started, failure, finished, shown)
        with server.active() if server is not None else contextlib.nullcontext():
            if config.runner == "dask" and dask_address is None and finished is None:
                with local_dask_cluster(config.workers) as address:
                    result = run_flow(*work, address)
            else:
                result = run_flow(*work, dask_address)
        if finished is not None:  # the wait and the recording came after the release
            result.seconds["orchestrator_start"] = waited
            result.seconds["total"] = time.perf_counter() - called
        return result


_WATCHDOG = """
import os, signal, sys, time
parent, target, marker = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].encode()
while os.getppid() == parent:
    time.sleep(1)
for sig in (signal.SIGTERM, signal.SIGKILL):
    try:
        with open(f"/proc/{target}/cmdline", "rb") as f:
            if marker not in f.read():
                break  # gone, and the pid is not the same process any more
        os.kill(target, sig)
    except OSError:
        break
    time.sleep(3)
"""


_WATCHED: set[int] = set()


def stop_with_this_process(pid: int, marker: str) -> None:
    """Start a tiny watchdog process that ends process `pid` (whose command line contains
    `marker`) once this process is gone (Linux; elsewhere nothing is started)."""
    if pid in _WATCHED or not Path("/proc/self/cmdline").exists():
        return
    _WATCHED.add(pid)
    import subprocess

    subprocess.Popen(
        [sys.executable, "-S", "-c", _WATCHDOG, str(os.getpid()), str(pid), marker],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
