# kafka-placement-operator: every set-up step lives here or in the scripts it calls.
# Downloads and builds are cached outside the repo in $(KP_CACHE); the venv is .venv/ (gitignored).
SHELL := /bin/bash
PYTHON ?= python3
KP_CACHE ?= $(HOME)/.cache/kafka-placement
export KP_CACHE
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
export PYTEST_ARGS

.PHONY: help venv deps rig-build rig-up rig-down rig-status lint test test-unit demo bench reference clean

help:
	@echo "make demo       - set everything up, run the demo against a real local cluster"
	@echo "make test       - set everything up: lint, unit tests, then the rig-backed tests in parallel lanes"
	@echo "make test-unit  - pure unit tests only (no rig)"
	@echo "make rig-up / rig-down / rig-status - the local Kafka + kube-apiserver rig"
	@echo "make lint       - ruff (check, format), mypy --strict, import-linter layer contracts"
	@echo "make bench      - planner benchmark vs Kafka's --generate and a naive greedy -> docs/benchmarks.md"
	@echo "make reference  - regenerate docs/reference.md (the custom resources' fields) from the CRD schemas"

$(STAMP): pyproject.toml
	@bash scripts/check-tools.sh python
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q --no-compile -e '.[dev,bench]'
	@# the packages' bytecode, on every core (pip compiles on one): written here, as nothing writes it later
	@# where PYTHONDONTWRITEBYTECODE is set; a file that does not compile is left, as pip leaves it
	$(PY) -m compileall -qq -j 0 $(VENV)/lib || true
	touch $(STAMP)

venv: $(STAMP)

# Kafka jars from Maven Central (4.4.0; the tiered cluster's 4.3.1 with its kafka-storage test jar: --tiered);
# kube-apiserver, kubectl, the node's kubelet/kube-proxy/scheduler/controller-manager, etcd and helm from
# the Go module proxy; containerd, runc, CNI plugins, iptables and
# promtool (the chart's alert rules are checked with it) unpacked from Debian packages; the broker plugin
# (broker-plugin/) built with Maven, its JUnit tests included, rebuilt only when its sources change (all
# cached outside the repo); the GitOps health checkers (kstatus, gopher-lua) from the Go module proxy;
# headless Chromium from Debian's packages for the report's browser test; the tests' Spark drivers'
# class-data archive (tests/rig/spark_cds.py)
# (installed once, a no-op after).
rig-build: venv
	@bash scripts/check-tools.sh java mvn go
	bash tests/rig/kafka/fetch.sh
	KAFKA_VERSION=4.3.1 bash tests/rig/kafka/fetch.sh --tiered
	bash scripts/build-broker-plugin.sh
	bash tests/rig/k8s/build.sh
	bash tests/rig/gitops/build.sh >/dev/null
	bash tests/rig/node/fetch-debs.sh >/dev/null
	bash scripts/install-chromium.sh >/dev/null
	bash tests/rig/prometheus/fetch-promtool.sh >/dev/null
	$(PY) tests/rig/spark_cds.py >/dev/null

# The rigs to bring up or down (scripts/rig.sh); `make test` runs several side by side (tests/rig/lanes.py).
RIGS ?= main legacy secure k8s node spark

rig-up: rig-build
	bash scripts/rig.sh up $(RIGS)

rig-down:
	-@bash scripts/rig.sh down $(RIGS)

rig-status: venv
	$(PY) tests/rig/kafka_rig.py status --name main
	$(PY) tests/rig/kafka_rig.py status --name secure
	$(PY) tests/rig/k8s_rig.py status
	$(PY) tests/rig/node_rig.py status
	$(PY) tests/rig/spark_rig.py status

lint: venv
	$(VENV)/bin/ruff check operator tests scripts
	$(VENV)/bin/ruff format --check operator tests scripts
	@# mypy's cache outside the repo, shared by every checkout (a module is checked again when its text differs)
	$(VENV)/bin/mypy --cache-dir $(KP_CACHE)/mypy
	$(VENV)/bin/lint-imports --no-cache

test-unit: venv
	$(PY) -m pytest tests/unit -q -n auto $(PYTEST_ARGS)

# The whole suite: lint and the unit tests side by side (stopping there on failure), then the rig-backed tests in
# lanes side by side, each against its own rig, always torn down (scripts/test.sh, tests/rig/lanes.py).
test: venv
	bash scripts/test.sh

demo: venv
	bash scripts/demo.sh

# Planner benchmark (this planner vs Kafka's --generate vs naive greedy); writes docs/benchmarks.md.
bench: venv
	bash tests/rig/kafka/fetch.sh >/dev/null
	$(PY) tests/bench/run_bench.py $(BENCH_ARGS)

# The CRD field reference, generated from operator/kafka_placement/model/crd_schema.py;
# tests/unit/model/test_reference_doc.py fails when the committed page drifts from it.
reference: venv
	$(PY) scripts/gen_reference.py -o docs/reference.md

clean: rig-down
	rm -rf $(VENV) .rig .mypy_cache .ruff_cache .pytest_cache .hypothesis
