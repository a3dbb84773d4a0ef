"""Dask clusters for `arena build --runner dask`: a temporary `LocalCluster`, or an existing
cluster (`dask scheduler` and `dask worker` processes) made ready for each build; one Dask client
per build, shared by all its flow runs (`build_task_runner`).

A Dask worker process outlives the builds it serves, and Prefect keeps services in it (the
concurrency-slot, event and log clients) bound to the API of the first build that used them.
A later build has another API (each temporary server has its own port), so its task runs
failed with "Unable to acquire concurrency slots". `ready_cluster` stops those services on every
worker before a build; Prefect starts them again with the build's API.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import sys

from flows.server import forget_prefect_services


def _dashboard_address() -> str | None:
    """A free port for a temporary cluster's dashboard where bokeh (which draws it) exists."""
    return ":0" if importlib.util.find_spec("bokeh") is not None else None


def served_dashboard(link: str | None) -> str | None:
    """`link` if a dashboard answers there. A scheduler started with `--no-dashboard` still
    lists the service, so its link is tried before it is printed."""
    import httpx

    if not link:
        return None
    try:
        return link if httpx.get(link, timeout=2).status_code < 400 else None
    except httpx.HTTPError:
        return None


def ready_cluster(client) -> None:
    """On the existing cluster `client` is connected to: stop stale Prefect services on every
    worker and print the cluster's workers and dashboard."""
    workers = client.run(forget_prefect_services)
    link = served_dashboard(client.dashboard_link)
    print(
        f"arena build: Dask cluster {client.scheduler.address}, {len(workers)} workers; dashboard "
        f"{link or '(none: the scheduler serves no dashboard)'}",
        file=sys.stderr,
        flush=True,
    )


@contextlib.contextmanager
def build_task_runner(address: str, existing: bool):
    """The build's Dask task runner, connected once to the scheduler at `address` (an existing
    cluster, made ready first, or the build's LocalCluster). Prefect copies a flow's task
    runner for each of its runs; a plain `DaskTaskRunner` copy opens a client of its own, 1-2 s
    of CPU per source's subflow. These copies all submit through the one client."""
    from prefect_dask import DaskTaskRunner
    from prefect_dask.client import PrefectDaskClient

    class SharedClientRunner(DaskTaskRunner):
        def __init__(self, client: PrefectDaskClient):
            super().__init__(address=address)
            self._client = client  # not on the exit stack: a run's end leaves it open

        def duplicate(self):
            return type(self)(self._client)

        def __reduce__(self):
            # in a run's context sent to a worker with each task: a plain runner, no client
            return DaskTaskRunner, (None, address)

    with PrefectDaskClient(address, timeout=30) as client:
        if existing:
            ready_cluster(client)
        yield SharedClientRunner(client)


@contextlib.contextmanager
def local_cluster(workers: int):
    """A temporary local Dask cluster of `workers` processes that use this process's Prefect
    API, so that workers do not each boot their own temporary server; its scheduler address."""
    from distributed import LocalCluster
    from prefect.settings import PREFECT_API_URL

    env = {
        "PREFECT_API_URL": PREFECT_API_URL.value(),
        "PREFECT_LOGGING_LEVEL": os.environ.get("PREFECT_LOGGING_LEVEL", "WARNING"),
    }
    # the scheduler runs in this process: its INFO lines (clients, workers) would fill the
    # terminal, where the progress display is
    logging.getLogger("distributed").setLevel(logging.WARNING)
    with LocalCluster(
        n_workers=max(workers, 1),
        threads_per_worker=1,
        processes=True,
        dashboard_address=_dashboard_address(),
        env=env,
    ) as cluster:
        link = cluster.dashboard_link if _dashboard_address() else "(none: install bokeh)"
        print(
            f"arena build: temporary Dask cluster of {max(workers, 1)} workers; dashboard {link}",
            file=sys.stderr,
            flush=True,
        )
        yield cluster.scheduler_address
