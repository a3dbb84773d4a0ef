# Two entry points: `make demo` and `make test`. Both create .venv when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export PREFECT_LOGGING_LEVEL ?= WARNING
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS ?= 120

.PHONY: demo test lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The demo library includes MJCF sources, read through MuJoCo (the `mjcf` extra).
$(VENV)/.installed-base: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[mjcf]"
	touch $@

$(VENV)/.installed-all: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[mjcf,pybullet,dask,oracle,dev]"
	touch $@ $(VENV)/.installed-base

demo: $(VENV)/.installed-base
	$(BIN)/arena build --replace

lint: $(VENV)/.installed-all
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: $(VENV)/.installed-all lint
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) release-demo .pytest_cache
