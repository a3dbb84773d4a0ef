"""Build progress counters and the live table."""

from __future__ import annotations

import io
import threading
import time

import pytest
from rich.console import Console

from export.outcome import ObjectOutcome
from flows.progress import BuildProgress


def test_counts_rate_and_eta():
    progress = BuildProgress(live=False)
    assert progress.eta() is None
    progress.discovered("a", 10)
    progress.discovered("b", 30)
    progress.finished("a", accepted=7, rejected=3, cached=5)
    total = progress.totals()
    assert (total.discovered, total.done, total.accepted, total.rejected) == (40, 10, 7, 3)
    progress.started = time.monotonic() - 10.0  # 10 objects in 10 s
    assert progress.rate() == pytest.approx(1.0, rel=0.01)
    assert progress.eta() == pytest.approx(30.0, rel=0.01), "30 objects left at 1 object/s"


def test_updates_from_many_threads():
    progress = BuildProgress(live=False)
    progress.discovered("s", 4000)
    threads = [
        threading.Thread(target=lambda: [progress.finished("s", 1, 0) for _ in range(1000)])
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert progress.totals().accepted == 4000


def test_table_shows_every_source_and_totals():
    progress = BuildProgress(live=False)
    progress.discovered("partnet", 12)
    progress.finished("partnet", accepted=10, rejected=2, cached=4)
    progress.sources.setdefault("urdf", type(progress.sources["partnet"])())
    buffer = io.StringIO()
    Console(file=buffer, width=100).print(progress._render())
    text = buffer.getvalue()
    assert "partnet" in text and "12/12" in text and "urdf" in text and "0/?" in text
    assert "12/12 objects" in text and "objects/s" in text


def test_quiet_when_asked(capsys):
    with BuildProgress(live=False, interval=0.05) as progress:
        progress.discovered("a", 1)
        progress.finished("a", 1, 0)
        time.sleep(0.3)
    assert capsys.readouterr().err == ""


def test_a_line_every_interval_when_not_a_terminal(capsys):
    with BuildProgress(expected_sources=2, interval=0.2) as progress:  # stderr is captured
        progress.discovered("a", 10)
        progress.finished("a", 3, 1, cached=2)
        time.sleep(0.5)
        first = capsys.readouterr().err.splitlines()
        progress.discovered("b", 10)
        time.sleep(0.5)
    later = capsys.readouterr().err.splitlines()
    assert len(first) >= 2 and first[0].startswith("arena build: 4/10+ done, 3 accepted, 1 rej")
    assert "2 cached" in first[0] and first[0].endswith("ETA -; starting"), "b not discovered"
    assert later and "4/20 done" in later[-1] and "ETA -" not in later[-1]


def test_eta_waits_for_every_source_to_be_discovered():
    progress = BuildProgress(live=False, expected_sources=2)
    progress.discovered("a", 10)
    progress.finished("a", 5, 0)
    progress.started = time.monotonic() - 5.0
    assert progress.eta() is None, "source b may still add objects"
    progress.discovered("b", 5)
    assert progress.eta() == pytest.approx(10.0, rel=0.05)


def test_counts_each_object_once_and_shows_the_stage():
    progress = BuildProgress(live=False, expected_sources=1)
    progress.discovered("a", 3)
    progress.stage("objects")
    outcome = ObjectOutcome("x", "a", "x", None, accepted=True)
    progress.object_finished("a", outcome)
    progress.object_finished("a", outcome)  # a retried batch reports x again
    progress.object_finished("a", ObjectOutcome("y", "a", "y", None, accepted=False, cached=True))
    total = progress.totals()
    assert (total.done, total.accepted, total.rejected, total.cached) == (2, 1, 1, 1)
    assert progress.line().endswith("; objects")
