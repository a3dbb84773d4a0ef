"""`arena schedule`: refusal without a Prefect server, version naming, and the scheduled flow
itself (two runs into one out-root chain their CHANGELOGs) on the session's Prefect harness."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from export import release
from flows.schedule import (
    DEPLOYMENT_NAME,
    latest_release,
    next_version,
    schedule_command,
    scheduled_release,
)


@pytest.fixture(scope="module")
def sources(sample_library):
    return sample_library / "sources.yaml"


def test_refuses_without_a_prefect_server(sources, tmp_path, monkeypatch, capsys):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    with temporary_settings(updates={PREFECT_API_URL: None}):
        code = schedule_command(cron="0 3 * * 1", sources=sources, out_root=tmp_path / "rel")
    assert code == 2
    err = capsys.readouterr().err
    assert "prefect server start" in err and "PREFECT_API_URL" in err
    assert not (tmp_path / "rel").exists()


def test_refuses_a_bad_cron_or_sources_file(sources, tmp_path, capsys):
    assert schedule_command(cron="every monday", sources=sources, out_root=tmp_path) == 2
    assert "invalid --cron" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("nothing: here\n")
    assert schedule_command(cron="0 3 * * 1", sources=bad, out_root=tmp_path) == 2


def test_versions_and_latest_release(tmp_path):
    day = dt.date(2026, 8, 5)
    assert next_version(tmp_path, day) == "2026.08.05"
    (tmp_path / "2026.08.05").mkdir()
    (tmp_path / "2026.08.05-2").mkdir()
    assert next_version(tmp_path, day) == "2026.08.05-3"
    assert latest_release(tmp_path) is None, "folders without release.json are not releases"
    for name, created in (("a", "2026-08-05T03:00:00+00:00"), ("b", "2026-08-12T03:00:00+00:00")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "release.json").write_text(json.dumps({"created_at": created}))
    assert latest_release(tmp_path) == tmp_path / "b"


@pytest.mark.slow
def test_scheduled_runs_chain_releases(prefect_harness, sources, tmp_path, monkeypatch):
    from prefect.client.orchestration import get_client

    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path / "cache"))
    # one day for both runs, even when the test runs across midnight (UTC)
    day = dt.datetime.now(dt.timezone.utc).date()
    dated = release.default_version
    monkeypatch.setattr(release, "default_version", lambda today=None: dated(today or day))
    deployment = scheduled_release.to_deployment(
        name=DEPLOYMENT_NAME,
        cron="0 3 * * 1",
        parameters={"sources": str(sources), "out_root": str(tmp_path / "releases")},
    )
    deployment_id = deployment.apply()
    with get_client(sync_client=True) as client:
        schedules = client.read_deployment(deployment_id).schedules
    assert [s.schedule.cron for s in schedules] == ["0 3 * * 1"]

    first = scheduled_release(str(sources), str(tmp_path / "releases"), workers=1)
    second = scheduled_release(str(sources), str(tmp_path / "releases"), workers=1)
    today = day.strftime("%Y.%m.%d")
    assert first.endswith(today) and second.endswith(f"{today}-2")
    info = json.loads((tmp_path / "releases" / f"{today}-2" / "release.json").read_text())
    assert info["previous"]["version"] == today
    changelog = (tmp_path / "releases" / f"{today}-2" / "CHANGELOG.md").read_text()
    assert f"against {today}" in changelog and "- added: 0" in changelog
    with get_client(sync_client=True) as client:
        [flow_id] = [f.id for f in client.read_flows() if f.name == "arena-scheduled-release"]
        names = {r.name for r in client.read_flow_runs() if r.flow_id == flow_id}
    assert {f"build {today}", f"build {today}-2"} <= names, "named as `arena build` runs"
