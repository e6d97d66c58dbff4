# preflab — two commands for a newcomer: `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
# Re-install when pyproject.toml changes (stamp named after its hash).
DEPS_HASH := $(shell sha1sum pyproject.toml | cut -c1-12)
CORE_STAMP := $(VENV)/.core-$(DEPS_HASH)
TEST_STAMP := $(VENV)/.test-$(DEPS_HASH)
BENCH_STAMP := $(VENV)/.bench-$(DEPS_HASH)
LOCAL_STAMP := $(VENV)/.local-$(DEPS_HASH)
DB_URL ?= sqlite:///data/preflab.db
PORT ?= 8501
ARENA ?=
PYTEST_ARGS ?=

.PHONY: install demo app test test-fast lint bench system-deps local-judge seed clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(CORE_STAMP): pyproject.toml | $(BIN)/python
	$(PIP) install -q -e .
	touch $@

install: $(CORE_STAMP)

$(TEST_STAMP): $(CORE_STAMP)
	$(PIP) install -q -e ".[test]"
	$(PIP) install -q --no-deps "arena-rank==0.1.1"  # it pins an old jax; it runs on ours
	touch $@

$(LOCAL_STAMP): $(CORE_STAMP)
	bash .ci/install-local-judge.sh $(BIN)/python
	touch $@

$(BENCH_STAMP): $(CORE_STAMP)
	$(PIP) install -q -e ".[bench]"
	$(PIP) install -q --no-deps "arena-rank==0.1.1"
	touch $@

system-deps:
	bash .ci/system-deps.sh

local-judge: $(LOCAL_STAMP)

seed: install
	$(BIN)/preflab demo-seed --db "$(DB_URL)"

# `make demo ARENA=roster.toml` also starts the live Battle page with that roster (docs/vote.md).
demo: seed
	$(BIN)/preflab app --db "$(DB_URL)" --port $(PORT) $(if $(ARENA),--arena "$(ARENA)")

app: demo

test: system-deps $(TEST_STAMP) $(LOCAL_STAMP)
	$(BIN)/ruff check arena llm answering judge judge_arena voting preflab preflab_cli tests benchmarks data app.py
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The quick loop: no slow, browser, llama or postgres tests, on every core (pytest-xdist).
test-fast: $(TEST_STAMP)
	$(BIN)/python -m pytest -m "not slow and not browser and not llama and not postgres" -n auto -q $(PYTEST_ARGS)

lint: $(TEST_STAMP)
	$(BIN)/ruff check arena llm answering judge judge_arena voting preflab preflab_cli tests benchmarks data app.py

bench: $(BENCH_STAMP) $(LOCAL_STAMP)
	$(BIN)/python -m benchmarks.run_all

clean:
	rm -rf $(VENV) .pytest_cache
