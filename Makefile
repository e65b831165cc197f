# Thin entry points. `make demo` and `make test` work on a fresh machine: they
# create and reuse their own virtual environment in .venv.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint e2e bench bench-disruption venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,live]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/podmuster demo

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

e2e: $(STAMP)
	bash tests/controlplane/build.sh
	$(BIN)/python -m pytest -q --e2e tests/e2e

bench: $(STAMP)
	$(BIN)/python -m benchmarks.engine

bench-disruption: $(STAMP)
	$(BIN)/python -m benchmarks.disruption

clean:
	rm -rf $(VENV)
