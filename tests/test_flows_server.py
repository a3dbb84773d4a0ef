"""Prefect's temporary server of a build (`flows.server`): started as Prefect starts it, without
the services it would run for nobody, and still recording every run and task run."""

from __future__ import annotations

import time

import pytest

from flows.server import UNREAD_SERVICES_OFF, PrefectServer, server_environment

PERSISTER = "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_ENABLED"
TRIGGERS = "PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED"


def test_the_unread_services_are_off_unless_the_user_set_them(monkeypatch):
    monkeypatch.delenv(PERSISTER, raising=False)
    monkeypatch.delenv(TRIGGERS, raising=False)
    environment = server_environment()
    assert environment[PERSISTER] == environment[TRIGGERS] == "false"
    assert environment["PREFECT__SERVER_EPHEMERAL"] == "1"
    monkeypatch.setenv(PERSISTER, "true")
    assert server_environment()[PERSISTER] == "true", "the user's value wins"
    assert set(UNREAD_SERVICES_OFF) == {PERSISTER, TRIGGERS}


def test_the_temporary_servers_background_worker_checks_every_two_seconds():
    """The app the temporary server runs (`flows.temporary_server_app`) gives the background
    worker Prefect starts in the server's lifespan its 2 s interval (Prefect's is 250 ms)."""
    import asyncio
    import gc

    from docket import Docket, Worker
    from prefect.server.api.background_workers import background_worker

    from flows.temporary_server_app import CHECK_INTERVAL

    async def worker_intervals():
        docket = Docket(name="interval-test", url="memory://interval-test")
        async with docket, background_worker(docket, ephemeral=True):
            workers = [o for o in gc.get_objects() if isinstance(o, Worker)]
            return [(w.minimum_check_interval, w.scheduling_resolution) for w in workers]

    assert CHECK_INTERVAL.total_seconds() == 2
    assert asyncio.run(worker_intervals()) == [(CHECK_INTERVAL, CHECK_INTERVAL)]


@pytest.mark.slow
def test_the_temporary_server_still_records_flow_and_task_runs(monkeypatch):
    from prefect import flow, task
    from prefect.cache_policies import NO_CACHE
    from prefect.client.orchestration import get_client
    from prefect.settings import (
        PREFECT_API_URL,
        PREFECT_SERVER_DATABASE_CONNECTION_URL,
        temporary_settings,
    )

    monkeypatch.delenv(PERSISTER, raising=False)
    monkeypatch.delenv(TRIGGERS, raising=False)

    @task(cache_policy=NO_CACHE)
    def double(x: int) -> int:
        return 2 * x

    @flow(name="server-check")
    def check() -> int:
        return double.with_options(task_run_name="check batch 1/1")(21)

    # a temporary server of its own even where the session's Prefect API is configured
    own = {PREFECT_API_URL, PREFECT_SERVER_DATABASE_CONNECTION_URL}
    with temporary_settings(restore_defaults=own):
        server = PrefectServer.start()
        server.wait()
    assert server.url is not None, "a temporary server was started"
    with server.active():
        state = check(return_state=True)
        assert state.result() == 42
        flow_run_id = state.state_details.flow_run_id
        with get_client(sync_client=True) as client:
            deadline = time.monotonic() + 30
            while True:  # the task run recorder records the task run's events in batches
                runs = client.read_task_runs()
                mine = [r for r in runs if r.flow_run_id == flow_run_id]
                if mine and mine[0].state.is_completed() or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            assert [r.name for r in mine] == ["check batch 1/1"]
            assert mine[0].state.is_completed()
            assert client.read_flow_run(flow_run_id).state.is_completed()
