"""The Prefect API of a build: the configured server (PREFECT_API_URL), else a temporary one
started as Prefect starts it (uvicorn in a process of its own), with a watchdog process that
stops it when the build's process dies without cleaning up.

Prefect is not imported at module level: `PrefectServer.start()` imports it (about 2 s) in a
background thread while the build discovers its sources.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
import threading
import time
from pathlib import Path


class PrefectServer:
    """The Prefect API of a build: the configured one (PREFECT_API_URL), else a temporary
    server (`_temporary_server`), started in a background thread by `start()`, with a
    watchdog process that stops it if this process dies without cleaning up (a build killed
    by SIGKILL or the OOM killer would leave it running)."""

    def __init__(self):
        self.url: str | None = None  # None: the configured API
        self._error: BaseException | None = None
        # the caller's context (its Prefect settings, `temporary_settings` included)
        start = contextvars.copy_context().run
        self._thread = threading.Thread(
            target=start, args=(self._start,), name="prefect-server", daemon=True
        )

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
            self.url = f"{_temporary_server()}/api"
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
        import asyncio

        from prefect.settings import PREFECT_API_URL, temporary_settings

        # services an earlier Prefect API of this process started (its events and logs
        # clients) would send this build's task-run events there: they start again with this one.
        # In a thread of its own, since the caller may run an event loop (a notebook)
        forgetting = threading.Thread(target=asyncio.run, args=(forget_prefect_services(),))
        forgetting.start()
        forgetting.join()
        with temporary_settings(updates={PREFECT_API_URL: self.url}):
            yield


async def forget_prefect_services() -> int:
    """Stop Prefect's services bound to an earlier build's API in this process (how many there
    were); the next task run starts them with its own."""
    services = sys.modules.get("prefect._internal.concurrency.services")
    if services is None:  # no Prefect task has run in this process yet
        return 0
    base = services._QueueServiceBase
    running = len(base._instances)
    if running:
        await base.drain_all(timeout=10, at_exit=False)
    return running


#: Prefect's own settings for its temporary server (`prefect.server.api.server.
#: SubprocessASGIServer`), which this module starts the same way (Prefect's app, as
#: `flows.temporary_server_app` tunes it) without importing the server's code into the build's
#: process (about 2 s of CPU that would compete with the workers; the server's own process
#: imports it anyway).
SERVER_ENVIRONMENT = {
    "PREFECT_UI_ENABLED": "0",
    "PREFECT__SERVER_EPHEMERAL": "1",
    "PREFECT__SERVER_FINAL": "1",
}
#: Services a temporary server runs for nobody: it serves no UI and lives for one build, so no
#: one reads its event feed (the event persister) or sets automations on it (the triggers).
#: The runs, task runs (recorded from their events by the task run recorder, which stays),
#: states, logs and artifacts are recorded as before. They cost about 8 ms of the server's CPU
#: per task run (docs/performance.md, "Orchestration"). A value set in the environment wins.
UNREAD_SERVICES_OFF = {
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED": "false",
}
SERVER_PORTS = range(8000, 9000)
PROJECT_ROOT = Path(__file__).resolve().parent.parent
PORT_TAKEN = 3  # uvicorn's exit status when another process holds the port
SERVER_MARKER = "flows.temporary_server_app"  # the app, and how its process is recognised


def _temporary_server() -> str:
    """Start Prefect's API server (uvicorn, as Prefect starts its temporary one) in a process
    of its own, stopped when this process exits (a watchdog stops it even after SIGKILL);
    its address once /api/health answers."""
    import atexit
    import subprocess

    import httpx
    from prefect.settings import PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS

    environment = server_environment()
    deadline = time.monotonic() + PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()

    def launch() -> tuple[subprocess.Popen, str]:
        port = _free_port()
        command = [sys.executable, "-m", "uvicorn", "--app-dir", str(PROJECT_ROOT)]
        command += ["--factory", f"{SERVER_MARKER}:create_app"]
        command += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "error"]
        # A session of its own: Ctrl-C in the terminal reaches the build, which stops it
        process = subprocess.Popen(
            command + ["--lifespan", "on"], env=environment, start_new_session=True
        )
        stop_with_this_process(process.pid, SERVER_MARKER)
        atexit.register(_stop, process)
        return process, f"http://127.0.0.1:{port}"

    process, address = launch()
    with httpx.Client() as client:
        while True:
            status = process.poll()
            if status == PORT_TAKEN:
                process, address = launch()
                continue
            if status is not None:
                raise RuntimeError(f"Prefect's temporary server exited with status {status}")
            try:
                if client.get(f"{address}/api/health").status_code == 200:
                    return address
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"Prefect's temporary server did not answer at {address}")
            time.sleep(0.1)


def server_environment() -> dict[str, str]:
    """The temporary server's environment: this process's, Prefect's settings for a temporary
    server, the services it runs for nobody turned off (unless set here)."""
    from prefect.settings import get_current_settings

    return {
        **UNREAD_SERVICES_OFF,
        **os.environ,
        **SERVER_ENVIRONMENT,
        **get_current_settings().to_environment_variables(exclude_unset=True),
    }


def _free_port() -> int:
    import random
    import socket

    for port in random.sample(SERVER_PORTS, 20):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port for Prefect's temporary server in 8000-8999")


def _stop(process) -> None:
    import subprocess

    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


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
        start_new_session=True,  # Ctrl-C in the terminal must not end the watchdog
    )
