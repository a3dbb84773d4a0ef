"""Live build progress: objects done, accepted, rejected, rate and ETA, overall and per source,
and the build's current stage; it moves per object, as each object's outcome arrives.

`BuildProgress` counts; when stderr is a terminal it also draws a rich live table, otherwise
(nohup, SLURM, CI logs) it prints one line every `interval` seconds (done, accepted, rejected,
rate, ETA). The ETA appears only once every source is discovered (before that the total is not
known). Safe to update from several threads.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from export.outcome import ObjectOutcome


@dataclass
class SourceCounts:
    discovered: int = 0
    accepted: int = 0
    rejected: int = 0
    cached: int = 0
    discovery_done: bool = False

    @property
    def done(self) -> int:
        return self.accepted + self.rejected


@dataclass
class BuildProgress:
    """Counters of a running build. `live=None`: the live table when stderr is a terminal,
    else a progress line every `interval` seconds; `live=False`: quiet. `expected_sources`:
    how many sources the build discovers (the ETA waits for all of them)."""

    live: bool | None = None
    expected_sources: int | None = None
    interval: float = 5.0
    sources: dict[str, SourceCounts] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)

    def __post_init__(self):
        self.current_stage = "starting"
        self._seen: set[tuple[str, str]] = set()  # (source, object id): a retried batch counts once
        self._lock = threading.Lock()
        self._display = None
        self._stop = threading.Event()
        self._printer: threading.Thread | None = None
        self.lines = False
        if self.live is None:
            self.live = sys.stderr.isatty()
            self.lines = not self.live

    # ------------------------------------------------------------------ updates
    def discovered(self, source: str, n: int) -> None:
        with self._lock:
            counts = self.sources.setdefault(source, SourceCounts())
            counts.discovered += n
            counts.discovery_done = True
        self._refresh()

    def finished(self, source: str, accepted: int, rejected: int, cached: int = 0) -> None:
        with self._lock:
            counts = self.sources.setdefault(source, SourceCounts())
            counts.accepted += accepted
            counts.rejected += rejected
            counts.cached += cached
        self._refresh()

    def object_finished(self, source: str, outcome: ObjectOutcome) -> None:
        """One object's outcome (counted once, even when a retried batch reports it again)."""
        with self._lock:
            key = (source, outcome.object_id)
            if key in self._seen:
                return
            self._seen.add(key)
        accepted = bool(outcome.accepted)
        self.finished(source, int(accepted), int(not accepted), int(bool(outcome.cached)))

    def stage(self, text: str) -> None:
        """What the build does now (discovering, objects, assembling the release...)."""
        with self._lock:
            self.current_stage = text
        self._refresh()

    # ------------------------------------------------------------------ figures
    def totals(self) -> SourceCounts:
        with self._lock:
            total = SourceCounts()
            for c in self.sources.values():
                total.discovered += c.discovered
                total.accepted += c.accepted
                total.rejected += c.rejected
                total.cached += c.cached
            return total

    def rate(self) -> float:
        """Objects finished per second since the start."""
        elapsed = time.monotonic() - self.started
        return self.totals().done / elapsed if elapsed > 0 else 0.0

    def discovery_complete(self) -> bool:
        with self._lock:
            done = [c for c in self.sources.values() if c.discovery_done]
            return self.expected_sources is None or len(done) >= self.expected_sources

    def eta(self) -> float | None:
        """Seconds left at the current rate (None until the rate is known and, when
        `expected_sources` is set, until every source is discovered)."""
        total, rate = self.totals(), self.rate()
        if rate <= 0 or not self.discovery_complete():
            return None
        return max(total.discovered - total.done, 0) / rate

    # ------------------------------------------------------------------ display
    def __enter__(self) -> BuildProgress:
        if self.live:
            from rich.console import Console
            from rich.live import Live

            self._display = Live(
                self._render(), console=Console(stderr=True), refresh_per_second=4, transient=False
            )
            self._display.__enter__()
        elif self.lines:
            self._printer = threading.Thread(target=self._print_lines, daemon=True)
            self._printer.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._printer is not None:
            self._stop.set()
            self._printer.join()
            self._printer = None
        if self._display is not None:
            self._display.update(self._render())
            self._display.__exit__(*exc)
            self._display = None

    def _print_lines(self) -> None:
        while not self._stop.wait(self.interval):
            print(self.line(), file=sys.stderr, flush=True)

    def line(self) -> str:
        """One line of progress, for output that is not a terminal."""
        total = self.totals()
        of = str(total.discovered) if self.discovery_complete() else f"{total.discovered}+"
        return (
            f"arena build: {total.done}/{of} done, {total.accepted} accepted, "
            f"{total.rejected} rejected, {total.cached} cached, {self.rate():.1f} objects/s, "
            f"ETA {_fmt_eta(self.eta())}; {self.current_stage}"
        )

    def _refresh(self) -> None:
        if self._display is not None:
            self._display.update(self._render())

    def _render(self):
        from rich.table import Table

        table = Table(title="arena build", expand=False)
        for column in ("source", "done", "accepted", "rejected", "cached"):
            table.add_column(column, justify="right" if column != "source" else "left")
        with self._lock:
            rows = sorted(self.sources.items())
        for name, c in rows:
            of = str(c.discovered) if c.discovery_done else "?"
            table.add_row(name, f"{c.done}/{of}", str(c.accepted), str(c.rejected), str(c.cached))
        total = self.totals()
        table.caption = (
            f"{total.done}/{total.discovered} objects, {self.rate():.1f} objects/s, "
            f"ETA {_fmt_eta(self.eta())}; {self.current_stage}"
        )
        return table


def _fmt_eta(seconds: float | None) -> str:
    """m:ss, or "-" while unknown."""
    if seconds is None:
        return "-"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}:{secs:02d}"
