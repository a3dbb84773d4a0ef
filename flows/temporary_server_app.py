"""The app of a build's temporary Prefect server: Prefect's own (`create_app`), its background
worker checking for due work every 2 s instead of every 250 ms.

That worker (docket, on an in-memory Redis) polls while the server idles, which is most of a
long build: 0.014 s of CPU per second of build against 0.009 with this interval (idle server,
quiet machine). On a temporary server the work it runs (log and run clean-ups, the database
vacuum) waits for nobody. Prefect offers no setting for the interval; this module runs only in
the server's own process (`flows.server`), never in a build's.
"""

from __future__ import annotations

import functools
from datetime import timedelta

from docket import Worker
from prefect.server.api import background_workers
from prefect.server.api.server import create_app

CHECK_INTERVAL = timedelta(seconds=2)

background_workers.Worker = functools.partial(
    Worker, minimum_check_interval=CHECK_INTERVAL, scheduling_resolution=CHECK_INTERVAL
)

__all__ = ["create_app"]
