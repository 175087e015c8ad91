# HAICO task runner. `make run` serves HAICO; `make test` runs every check CI runs.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run user test test-long install lock lint typecheck pytest bench clean studio wheel dev-frontend openapi \
	frontend-test frontend-lint frontend-typecheck frontend-unit frontend-bench frontend-openapi-check \
	frontend-e2e chromium caddy rest-docs quickstart-shots

FRONTEND := frontend
NPM_STAMP := $(FRONTEND)/node_modules/.installed
STUDIO_OUT := $(FRONTEND)/out/index.html
# Everything the static export is built from: `make run` rebuilds when any is newer.
STUDIO_SOURCES := $(shell find $(FRONTEND)/src $(FRONTEND)/public -type f 2>/dev/null) \
	$(FRONTEND)/package.json $(FRONTEND)/package-lock.json $(FRONTEND)/next.config.ts $(FRONTEND)/tsconfig.json
export NEXT_TELEMETRY_DISABLED := 1
## Bytecode is written even where the environment asks not to (CI's does): the suite
## starts a few hundred Python processes (servers, the CLI, workers), and without
## __pycache__ each would compile the package's modules again, and each pytest worker
## every test module it rewrites.
unexport PYTHONDONTWRITEBYTECODE

## Dependencies come from the lock (exact versions, every file's hash checked), then the
## package itself without resolving anything. `make lock` re-resolves the lock.
$(STAMP): backend/pyproject.toml backend/requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --require-hashes -r backend/requirements.lock
	$(BIN)/pip install --quiet --no-deps -e backend
	touch $(STAMP)

install: $(STAMP)

## Re-resolve the two locks from backend/pyproject.toml on PyPI:
##   backend/requirements.lock          runtime + dev (make install, CI)
##   backend/requirements-runtime.lock  runtime only (the Dockerfile), constrained to the
##                                      pins of the first, so both agree on every version
## `make lock` keeps every pin it can (after adding a dependency), `make lock UPGRADE=pkg`
## moves only pkg, `make lock UPGRADE=all` moves everything. pip-tools runs from a
## throwaway venv; commit both locks with the change that needed them.
LOCK_VENV := /tmp/haico-pip-tools
PIP_COMPILE := PIP_CONFIG_FILE=/dev/null PIP_FIND_LINKS= PIP_EXTRA_INDEX_URL= \
	$(abspath $(LOCK_VENV))/bin/pip-compile --quiet --generate-hashes --strip-extras \
	--allow-unsafe --index-url https://pypi.org/simple --no-emit-index-url --no-emit-find-links
lock:
	test -x $(LOCK_VENV)/bin/pip-compile || { $(PYTHON) -m venv $(LOCK_VENV) && \
	  $(LOCK_VENV)/bin/pip install --quiet pip-tools; }
	cd backend && $(PIP_COMPILE) --extra dev \
	  $(if $(filter all,$(UPGRADE)),--upgrade,$(if $(UPGRADE),--upgrade-package $(UPGRADE))) \
	  --output-file requirements.lock pyproject.toml
	cd backend && $(PIP_COMPILE) --constraint requirements.lock \
	  --output-file requirements-runtime.lock pyproject.toml

$(NPM_STAMP): $(FRONTEND)/package.json $(FRONTEND)/package-lock.json
	@command -v npm >/dev/null || { echo "The studio needs Node.js 20+ and npm to build (https://nodejs.org)." >&2; exit 1; }
	cd $(FRONTEND) && npm ci --no-audit --no-fund --loglevel=error
	touch $(NPM_STAMP)

## The browser studio as a static export (frontend/out), rebuilt only when stale.
$(STUDIO_OUT): $(NPM_STAMP) $(STUDIO_SOURCES)
	cd $(FRONTEND) && npm run --silent build
	touch $(STUDIO_OUT)

studio: $(STUDIO_OUT)

## The installable wheel, dist/haico-<version>-py3-none-any.whl: the server, the CLI, the
## migrations and the built studio (haico/studio), no tests, no source maps. backend/setup.py
## copies the studio and refuses to build without its index.html. `pip install` it into any
## Python 3.11 environment, then `haico serve`: no clone, no Node.js (docs/operations.md).
## `make test` builds it before `pytest`, whose tests/deploy/test_wheel.py installs it in
## a clean venv with no Node.js on PATH (that test builds one itself when this is stale).
HAICO_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' backend/pyproject.toml)
WHEEL := dist/haico-$(HAICO_VERSION)-py3-none-any.whl
WHEEL_SOURCES := $(shell find backend/haico backend/alembic -type f -not -path '*/__pycache__/*' \
	2>/dev/null) backend/pyproject.toml backend/setup.py
$(WHEEL): $(STAMP) $(STUDIO_OUT) $(WHEEL_SOURCES)
	rm -rf backend/build $(WHEEL)
	$(BIN)/pip wheel --quiet --no-deps --wheel-dir dist ./backend
	rm -rf backend/build
	@ls -l $(WHEEL)

wheel: $(WHEEL)

## Serve HAICO on the embedded default (SQLite, offline agent) at http://localhost:8000.
## `make run AUTH=token` starts it in token mode (sign-in and sharing); `make user NAME=ada`
## creates a user there and prints its token (both act on backend/data, as `make run` does).
AUTH ?=
run: install studio
	cd backend && $(if $(AUTH),HAICO_AUTH=$(AUTH) )../$(BIN)/haico serve --host $${HAICO_HOST:-127.0.0.1} --port $${HAICO_PORT:-8000}

user: install
	@test -n "$(NAME)" || { echo "usage: make user NAME=ada" >&2; exit 2; }
	cd backend && ../$(BIN)/haico users create $(NAME)

lint: install
	cd backend && ../$(BIN)/ruff check haico tests alembic ../bench ../scripts
	cd backend && ../$(BIN)/ruff format --check haico tests alembic ../bench ../scripts
	cd backend && ../$(BIN)/lint-imports --no-cache
	cd backend && ../$(BIN)/vulture

typecheck: install
	cd backend && ../$(BIN)/mypy

## pytest exits 5 when it collects nothing; make treats that as a failure like any other.
## The suite runs on PYTEST_WORKERS processes (pytest-xdist; each worker has its own
## PostgreSQL database and SQLite files). On a quiet 2-core machine one process left the
## second core mostly idle (load about 1): 834 tests took 13:57 serially. `make pytest
## PYTEST_WORKERS=0` runs it in one process. A run that hangs is stopped after 75 minutes
## and fails; a test still running after 10 minutes has its stack printed first. The 25
## slowest tests are listed at the end, and the time summed by folder and by file: the
## next cut is chosen from those figures. Three workers on the same 2 cores (2026-12-07,
## a slow day): 20:31 against 22:12 for two, 2,394 tests passed either way; the summed
## test time grew from 43 to 60 minutes, so the timing tests' margins shrink: two it stays.
PYTEST_WORKERS ?= 2
pytest: install caddy
	cd backend && timeout --kill-after=30 4500 ../$(BIN)/pytest -q -rs -o faulthandler_timeout=600 \
	  $(if $(filter 0,$(PYTEST_WORKERS)),-p no:xdist,-n $(PYTEST_WORKERS) --dist worksteal) --durations=25

## The long runs, not part of `make test` nor CI: the races at 1000 rounds, the fuzzers
## at about 100 examples per operation (REST: 100 per operation and mode; stateful: 250
## scenarios of 8 steps; AHP: 2600 frames, about 100 requests per method; any-Unicode
## text: 600 over 22 fields; import documents: 300), then the soak (SOAK_MINUTES,
## default 10, 50 researchers on PostgreSQL; 0 skips it).
SOAK_MINUTES ?= 10
test-long: install
	cd backend && HAICO_RACE_ROUNDS=1000 HAICO_FUZZ_EXAMPLES=100 HAICO_FUZZ_STATEFUL_EXAMPLES=250 \
	  HAICO_FUZZ_AHP_FRAMES=2600 HAICO_FUZZ_TEXT_EXAMPLES=600 HAICO_FUZZ_IMPORT_EXAMPLES=300 \
	  ../$(BIN)/pytest -q -rs --durations=25 \
	  tests/maintenance/test_race_rounds.py tests/api/test_openapi_contract.py tests/api/test_openapi_stateful.py \
	  tests/api/test_fuzz_text.py tests/api/test_fuzz_import.py tests/ahp/test_fuzz.py
	test "$(SOAK_MINUTES)" = 0 || $(BIN)/python -m bench.soak --minutes $(SOAK_MINUTES) --researchers 50

## Hot-reloading studio on http://localhost:3000; /api goes to the backend on :8000
## (run `make run` in another terminal, or set HAICO_BACKEND_URL).
dev-frontend: $(NPM_STAMP)
	cd $(FRONTEND) && npm run dev

## Regenerate the typed API client from the backend's OpenAPI document.
openapi: install $(NPM_STAMP)
	cd $(FRONTEND) && bash scripts/openapi.sh

## Regenerate docs/rest.md (the REST reference) from the backend's OpenAPI document;
## backend/tests/api/test_rest_docs.py fails while it is stale.
rest-docs: install
	$(BIN)/python scripts/rest_docs.py

frontend-openapi-check: install $(NPM_STAMP)
	cd $(FRONTEND) && bash scripts/openapi.sh --check

## ESLint (the rules of hooks and exhaustive-deps as errors) and Prettier's check, as
## ruff and ruff format are for the backend; `cd frontend && npm run format` rewrites.
frontend-lint: $(NPM_STAMP)
	cd $(FRONTEND) && npx eslint --max-warnings=0 . && npx prettier --check --log-level=warn .

frontend-typecheck: $(NPM_STAMP)
	cd $(FRONTEND) && npx tsc --noEmit

## Vitest on the pure modules (src/lib and each feature's lib), with the 90% line-coverage gate.
frontend-unit: $(NPM_STAMP)
	cd $(FRONTEND) && npx vitest run --coverage

## The layout budget: a 5000-node family within 50 ms.
frontend-bench: $(NPM_STAMP)
	cd $(FRONTEND) && npx vitest run --config vitest.bench.config.ts

## Debian's chromium for the browser tests (never a browser download).
chromium:
	@command -v chromium >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; }

## Debian's Caddy, the proxy the replica test runs in front of three `haico serve`
## processes (backend/tests/deploy/test_replicas_proxy.py, with deploy/Caddyfile).
caddy:
	@command -v caddy >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq caddy >/dev/null; }

## Playwright walkthrough against the real backend (SQLite) serving the fresh build. Each
## file starts its own server (free port, own data directory) and browser, so two files run
## at once: 13 tests took 126 s that way against 190 s one at a time (2026-12-04, 2 cores
## shared with other work). E2E_CONCURRENCY=1 runs them one by one. A test still running
## after E2E_TEST_TIMEOUT ms fails with its name instead of holding the run (node:test
## has no limit of its own; a 390 px test was seen to hang twice under load).
E2E_CONCURRENCY ?= 2
E2E_TEST_TIMEOUT ?= 600000
frontend-e2e: install studio chromium
	cd $(FRONTEND) && node --test --test-concurrency=$(E2E_CONCURRENCY) \
	  --test-timeout=$(E2E_TEST_TIMEOUT) tests/e2e/

## The screenshots of docs/quickstart.md (docs/quickstart/*.png), taken by the same
## harness as the walkthrough; not part of `make test`. Look at them before committing.
quickstart-shots: install studio chromium
	cd $(FRONTEND) && node tests/e2e/quickstart-shots.mjs

frontend-test: frontend-lint frontend-openapi-check frontend-typecheck frontend-unit frontend-bench studio frontend-e2e

## Everything CI runs: lint, types, the tests on SQLite and PostgreSQL, and the studio's
## checks (lint and format, OpenAPI client freshness, types, unit tests + coverage, bench,
## build, browser).
test: lint typecheck wheel pytest frontend-test test-compose

.PHONY: test-compose
## The compose deployment built and run for real (backend/tests/compose): the single app
## and two replicas behind Caddy, one killed under load. Installs a Docker engine and
## Compose v2 when missing, starts its own dockerd when none answers (stopped at the
## end), builds stand-in base images from Debian where no registry is reachable, once
## (kept in HAICO_COMPOSE_CACHE, default /var/lib/haico-compose). No engine: skipped,
## or failed under CI=true. scripts/compose/test-compose.sh says the rest.
test-compose: install
	bash scripts/compose/test-compose.sh

bench: install
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) backend/data data $(FRONTEND)/node_modules $(FRONTEND)/out $(FRONTEND)/.next
