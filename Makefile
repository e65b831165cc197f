# Thin entry points. `make demo` and `make test` work on a fresh machine: they
# create and reuse their own virtual environment in .venv.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The optional extras installed; CI adds ray (`make venv EXTRAS=dev,live,ray`).
EXTRAS ?= dev,live

.PHONY: demo test lint e2e bench bench-disruption bench-kai bench-simulate crds venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[$(EXTRAS)]'
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

# The Helm chart: helm is built from its Go module into the control plane's cache, with
# the core control plane and kwok for the apply tests; then lint, render, schema, RBAC,
# apply on the real API server, and helm install, upgrade and uninstall there with the
# hook Jobs run (tests/chart/test_chart_lifecycle.py).
chart-test: $(STAMP)
	@bin="$$(PODMUSTER_CP_OPTIONAL="kwok helm" bash tests/controlplane/build.sh)" && test -x "$$bin/helm" \
		|| { echo "chart-test: helm did not build; see the log above" >&2; exit 1; }
	$(BIN)/python -m pytest -q --e2e tests/chart

# The CRD manifests (crds/*.yaml and the chart's copies), written from the pydantic
# models in crds/; tests/crds/test_generated_manifests.py fails when they drift.
crds: $(STAMP)
	$(BIN)/python -m crds.generate

bench: $(STAMP)
	$(BIN)/python -m benchmarks.engine
	$(BIN)/python -m benchmarks.snapshot

bench-disruption: $(STAMP)
	$(BIN)/python -m benchmarks.disruption

# KAI's own benchmark topologies: podmuster's decisions beside KAI's, and times.
bench-kai: $(STAMP)
	$(BIN)/python -m benchmarks.kai

bench-simulate: $(STAMP)
	$(BIN)/python -m benchmarks.simulate_trace

clean:
	rm -rf $(VENV)
