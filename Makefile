# Entry points: `make demo`, `make test` and `make test-fast`. Each creates .venv when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export PREFECT_LOGGING_LEVEL ?= WARNING
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS ?= 120

.PHONY: demo test test-fast lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The demo library includes MJCF sources, read through MuJoCo (the `mjcf` extra).
$(VENV)/.installed-base: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[mjcf]"
	touch $@

$(VENV)/.installed-all: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[mjcf,pybullet,dask,oracle,sdf,usd,sapien,dev]"
	touch $@ $(VENV)/.installed-base

demo: $(VENV)/.installed-base
	$(BIN)/arena build --replace

lint: $(VENV)/.installed-all
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Tests run in one pytest process per core (pytest-xdist), whole modules at a time (a module's
# fixtures are built once); the 25 slowest are listed at the end.
test: $(VENV)/.installed-all lint
	$(BIN)/python -m pytest -n auto --dist loadscope --no-loadscope-reorder --durations=25

# The everyday loop: the unit tests, without the slow builds and the corpus-wide tests.
test-fast: $(VENV)/.installed-all
	$(BIN)/python -m pytest -n auto --dist loadscope --no-loadscope-reorder -m "not slow and not corpus"

clean:
	rm -rf $(VENV) release-demo .pytest_cache
