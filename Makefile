# elastic-quota-operator: every target installs what it needs itself (`make help` lists them).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# numba invalidates a cached kernel only when its own file changes, not the helper modules it
# inlines: key the cache directory by the kernels' sources so that no edit can leave it stale.
KERNEL_HASH := $(shell cat operator/elasticquota/kernels/*.py | sha1sum | cut -c1-12)
export NUMBA_CACHE_DIR ?= $(CURDIR)/.venv/numba-cache/$(KERNEL_HASH)

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

.PHONY: install
install: $(STAMP) ## Create .venv with the project and its dev tools installed

.PHONY: lint
lint: $(STAMP) ## ruff, mypy --strict and the import-layer contracts
	$(BIN)/ruff check operator tests benchmarks
	$(BIN)/ruff format --check operator tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

.PHONY: test
test: $(STAMP) ## Run the test suite (jitted, then the unit tier again with NUMBA_DISABLE_JIT=1), then lint
	$(BIN)/pytest
	NUMBA_DISABLE_JIT=1 $(BIN)/pytest tests/unit -q -m "not slow"
	$(MAKE) --no-print-directory lint

.PHONY: run
run: $(STAMP) ## The product live: local control plane + operator + examples, live tree until Ctrl-C
	$(BIN)/elastic-quota demo -f examples/

.PHONY: plan
plan: $(STAMP) ## What-if: plan the bundled example cluster (no cluster needed)
	$(BIN)/elastic-quota plan -f examples/

.PHONY: cluster
cluster: $(STAMP) ## Build (if needed) and start a local kube-apiserver + etcd; prints KUBECONFIG; Ctrl-C stops it
	$(BIN)/python -m elasticquota.devcluster up

.PHONY: bench
bench: $(STAMP) ## Solver benchmark: numba kernel vs the pure-Python reference
	$(BIN)/python benchmarks/bench_solver.py

.PHONY: bench-e2e
bench-e2e: $(STAMP) ## End-to-end figures of the live operator on a local kube-apiserver
	$(BIN)/python benchmarks/bench_e2e.py

.PHONY: fmt
fmt: $(STAMP) ## Format and auto-fix
	$(BIN)/ruff format operator tests benchmarks
	$(BIN)/ruff check --fix operator tests benchmarks

.PHONY: clean
clean: ## Remove the virtualenv and caches
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
