# agentrl: two commands matter — `make demo` and `make test`. Both run `make setup` first (idempotent).
SHELL := /bin/bash
VENV  ?= .venv
PY    := $(VENV)/bin/python

.PHONY: setup demo test test-fast coverage bench bench-peer loop-test lint clean

setup:  ## create .venv, install torch (CPU) + agentrl[dev] + the default model, start Docker, build the sandbox image
	@bash scripts/setup.sh

demo: setup  ## base model → warm start → GRPO on swe_lite level 0, then a before/after table (CPU, ~15 min)
	$(PY) scripts/demo_swe.py

WORKERS ?= 3  # pytest-xdist workers: tests wait on sandboxes, subprocesses and sockets, so more than the cores pay

test: setup  ## the full suite (what CI runs): WORKERS at once, then the `serial` tests alone; prints the 30 slowest
	$(PY) -m pytest -q -n $(WORKERS) --dist load -m "not serial" --durations=30
	$(PY) -m pytest -q -m serial --durations=5

test-fast: setup  ## the edit loop: no Docker, no slow end-to-end tests (a few minutes)
	$(PY) -m pytest -q -n $(WORKERS) --dist load -m "not slow and not docker and not serial"

coverage: setup  ## line coverage of agentrl/, envs/ and sandboxes/ over the parallel part of the suite, its subprocesses included
	rm -f .coverage .coverage.*
	COVERAGE_FILE=$(CURDIR)/.coverage $(PY) -m pytest -q -n $(WORKERS) --dist load -m "not serial" --cov --cov-report= || true
	$(PY) -m coverage combine -q 2>/dev/null || true  # what pytest-cov left uncombined (it combines its own)
	$(PY) -m coverage report --skip-empty > coverage.txt; grep "^TOTAL" coverage.txt
	@for d in agentrl envs sandboxes; do $(PY) -m coverage report --skip-empty --include="$$d/*" | grep "^TOTAL" | sed "s|TOTAL|$$d/|"; done

bench: setup  ## every benchmark in bench/ (each prints ratios against a baseline measured in the same run)
	@for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

loop-test:  ## run one test selection N times in a row (concurrency changes): make loop-test T="tests/engine/test_serve.py -k pause" N=20
	PYTHON=$(PY) bash scripts/loop_test.sh $(or $(N),20) $(T)

bench-peer: setup  ## TRL 1.16 GRPOTrainer and agentrl side by side on TRL's workload, in one run (own venv for TRL)
	$(PY) bench/peer/compare_trl.py

lint:
	$(VENV)/bin/ruff check agentrl envs sandboxes tests bench examples

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
