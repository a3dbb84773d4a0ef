"""Prefect's settings for this project, set before Prefect is imported (it reads them then):
quiet logs, a patient start of its temporary server, no analytics. Import this module before
`prefect`; a value the user set in the environment wins."""

from __future__ import annotations

import os

PREFECT_DEFAULTS = {
    "PREFECT_LOGGING_LEVEL": "WARNING",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
}
for _name, _value in PREFECT_DEFAULTS.items():
    os.environ.setdefault(_name, _value)
