# connwatch: the two commands are `make demo` (start everything) and `make test`.
SHELL := /bin/bash
export UV_PYTHON_DOWNLOADS := never
RUN := .venv/bin/python -m
LINTED := $(wildcard app tests bench migrations)
# Two pytest workers, each test file kept on one (its module fixtures set up once): most
# tests wait on servers and subprocesses, so two workers fit CI's 2 cores in the budget.
PYTEST_PARALLEL ?= -n 2 --dist loadfile

.PHONY: demo test venv lint typecheck pytest serve clean

venv: .venv/.synced

.venv/.synced: pyproject.toml uv.lock scripts/bootstrap.sh
	@bash scripts/bootstrap.sh
	@touch $@

## demo: embedded PostgreSQL + simulated Oracle databases + agent + dashboard
demo: venv
	.venv/bin/connwatch demo

## test: everything CI runs: system packages, lint, types, the whole suite
test: venv
	@bash scripts/install-test-deps.sh
	$(RUN) ruff check $(LINTED)
	$(RUN) ruff format --check $(LINTED)
	$(RUN) mypy app
	$(RUN) pytest $(PYTEST_PARALLEL)

lint: venv
	$(RUN) ruff check $(LINTED)
	$(RUN) ruff format --check $(LINTED)

typecheck: venv
	$(RUN) mypy app

pytest: venv
	$(RUN) pytest $(PYTEST_PARALLEL)

serve: venv
	.venv/bin/connwatch serve

clean:
	rm -rf .venv .mypy_cache .ruff_cache .pytest_cache test-artifacts
