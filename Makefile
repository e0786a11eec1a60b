# envbuilder: the single entry point. `make help` lists the targets.
SHELL := /bin/bash
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run

.DEFAULT_GOAL := help
.PHONY: help install docker run check lint fmt types unit test test-docker test-harness services golden bench bench-resolve fuzz mutants clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

# pip's one line per index folder this machine's pip.conf names but lacks ("is ignored: it is
# neither a file nor a directory", 80 lines) is left out: CI shows only part of what a run prints.
PIP_QUIET := 2>&1 | { grep -v 'is ignored: it is neither a file nor a directory' || true; }

# The product's own dependencies only (what `make run` needs), or those and the dev tools.
$(RUN_STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	set -o pipefail; $(BIN)/pip install -q --upgrade pip $(PIP_QUIET)
	set -o pipefail; $(BIN)/pip install -q -e . $(PIP_QUIET)
	touch $(RUN_STAMP)

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	set -o pipefail; $(BIN)/pip install -q --upgrade pip $(PIP_QUIET)
	set -o pipefail; $(BIN)/pip install -q -e '.[dev]' $(PIP_QUIET)
	touch $(STAMP) $(RUN_STAMP)

install: $(STAMP) ## Create .venv and install envbuilder with its dev tools

docker: ## A Docker daemon that answers: started here (root, Debian/Ubuntu), else one line saying what to run
	bash scripts/dockerd.sh

run: docker $(RUN_STAMP) ## The whole job: doctor, resolve, build, certify and report the PyTorch training image here
	$(BIN)/envbuilder up images/pytorch-train.yaml

check: lint types unit ## Lint, type-check and unit-test (run before every commit)

lint: $(STAMP) ## ruff lint + format check
	$(BIN)/ruff check envbuilder tests benchmarks
	$(BIN)/ruff format --check envbuilder tests benchmarks

fmt: $(STAMP) ## Apply ruff's formatting and safe fixes
	$(BIN)/ruff check --fix envbuilder tests benchmarks
	$(BIN)/ruff format envbuilder tests benchmarks

types: $(STAMP) ## mypy --strict
	$(BIN)/mypy

unit: $(STAMP) ## Unit tests (offline; the harness's real torch/jax runs are left to `make test`)
	$(BIN)/pytest -q tests/unit

test-harness: $(STAMP) ## Only the harness's real torch/jax training tests (minutes)
	$(BIN)/pytest -q -m harness tests/unit

services: ## Install and start what the docker tests need (docker.io, dockerd, base image, registry, chromium, Slurm, buildx, Apptainer image, arm64 base under QEMU, Podman); root
	bash scripts/services.sh
	bash scripts/install-chromium.sh
	bash scripts/slurm.sh
	bash scripts/buildx.sh
	bash scripts/apptainer.sh
	bash scripts/arm64-base.sh
	bash scripts/podman.sh

test: services $(STAMP) ## Everything the tests need, then all tests (unit + docker)
	$(BIN)/pytest -q -m 'not gpu' tests

test-docker: services $(STAMP) ## Only the Docker integration tests
	$(BIN)/pytest -q -m docker tests/integration

golden: $(STAMP) ## Regenerate golden Dockerfiles, the committed images/*.Dockerfile renders and images/spec.schema.json
	$(BIN)/pytest -q tests/unit -k 'golden or image_renders or shipped_compiled' --update-golden

bench: $(STAMP) services ## Build benchmarks (cold vs warm build, image sizes) -> benchmarks/results/
	$(BIN)/python benchmarks/build_bench.py

bench-resolve: $(STAMP) ## `envbuilder resolve` start-up time, before vs after, side by side -> benchmarks/results/
	$(BIN)/python benchmarks/resolve_bench.py --realtime

clean: ## Remove the venv and caches
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

fuzz: $(STAMP) ## Property-based fuzzing, 10,000 inputs per loader: spec, lock, certificate (+ report/certs), DSSE envelope, statement payload, registry answers, harness output, trust policy (~55 min on 2 cores; K="envelope or trust_policy" selects)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/pytest -q -p no:cacheprovider --hypothesis-show-statistics tests/unit/test_fuzz_loaders.py $(if $(K),-k "$(K)")

mutants: $(STAMP) ## Plant one-line bugs at the trust boundaries one at a time; the unit tests must catch them (~15 min on 2 cores) -> benchmarks/results/
	$(BIN)/python benchmarks/mutants.py --out benchmarks/results/mutants-$$(date -u +%Y-%m-%d).md
