"""Orchestration: the `arena` command line, the Prefect build, scoring and scheduled releases."""
