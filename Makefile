# envbuilder: the single entry point. `make help` lists the targets.
SHELL := /bin/bash
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help install run check lint fmt types unit test test-docker test-harness services golden bench bench-resolve fuzz mutants clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP) ## Create .venv and install envbuilder with its dev tools

run: $(STAMP) ## The whole job: doctor, resolve, build, certify and report the PyTorch training image here
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

services: ## Install and start what the docker tests need (docker.io, dockerd, base image, registry, chromium, Slurm, buildx, Apptainer image); root
	bash scripts/services.sh
	bash scripts/install-chromium.sh
	bash scripts/slurm.sh
	bash scripts/buildx.sh
	bash scripts/apptainer.sh

test: $(STAMP) services ## Everything the tests need, then all tests (unit + docker)
	$(BIN)/pytest -q -m 'not gpu' tests

test-docker: $(STAMP) services ## Only the Docker integration tests
	$(BIN)/pytest -q -m docker tests/integration

golden: $(STAMP) ## Regenerate golden Dockerfiles and the committed images/*.Dockerfile renders
	$(BIN)/pytest -q tests/unit -k 'golden or image_renders' --update-golden

bench: $(STAMP) services ## Build benchmarks (cold vs warm build, image sizes) -> benchmarks/results/
	$(BIN)/python benchmarks/build_bench.py

bench-resolve: $(STAMP) ## `envbuilder resolve` start-up time, before vs after, side by side -> benchmarks/results/
	$(BIN)/python benchmarks/resolve_bench.py --realtime

clean: ## Remove the venv and caches
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

fuzz: $(STAMP) ## Property-based fuzzing of the spec, lock and certificate loaders and the report/certs code, 10,000 inputs per loader (~25 min)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/pytest -q -p no:cacheprovider --hypothesis-show-statistics tests/unit/test_fuzz_loaders.py

mutants: $(STAMP) ## Plant one-line bugs at the trust boundaries one at a time; the unit tests must catch them (~5 min) -> benchmarks/results/
	$(BIN)/python benchmarks/mutants.py --out benchmarks/results/mutants-$$(date -u +%Y-%m-%d).md
