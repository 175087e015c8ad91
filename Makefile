# HAICO task runner. `make run` serves HAICO; `make test` runs every check CI runs.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test install lint typecheck pytest bench clean

$(STAMP): backend/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e 'backend[dev]'
	touch $(STAMP)

install: $(STAMP)

## Serve HAICO on the embedded default (SQLite, offline agent) at http://localhost:8000
run: install
	cd backend && ../$(BIN)/haico serve --host $${HAICO_HOST:-127.0.0.1} --port $${HAICO_PORT:-8000}

lint: install
	cd backend && ../$(BIN)/ruff check app tests alembic ../bench
	cd backend && ../$(BIN)/ruff format --check app tests alembic ../bench
	cd backend && ../$(BIN)/lint-imports --no-cache

typecheck: install
	cd backend && ../$(BIN)/mypy

## pytest exits 5 when it collects nothing; make treats that as a failure like any other.
pytest: install
	cd backend && ../$(BIN)/pytest -q -rs

## Everything CI runs: lint, types, the tests on SQLite and PostgreSQL.
test: lint typecheck pytest

bench: install
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) backend/data data
