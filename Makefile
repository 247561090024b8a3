# Two commands work on a fresh clone: `make run` and `make test` (Python >= 3.11 with venv, and PyPI;
# `make test` also needs Node >= 20 with npm, for the web interface's JS tooling; `make run` does not, and
# installs only the package's own dependencies, not the test extras).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8080
PYTEST_ARGS ?=
# The web interface's JS, its unit tests and the linter's config: what Prettier and ESLint check.
JS := src/blockrepo/web/static/js tests/js eslint.config.js
NODE_STAMP := node_modules/.installed

.PHONY: setup run test test-js quick lint typecheck format bench docs clean

# The interpreter check runs first, so that an old Python fails with a message instead of a pip error.
$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "blockrepo needs Python 3.11 or newer; try make PYTHON=python3.12")'
	$(PYTHON) -m venv $(VENV)

# Reinstalled when pyproject.toml changes; a stamp is written only after a successful install. `setup` (and
# so `make test`) installs the test extras too; `make run` installs only what serving needs (its own stamp,
# which a `setup` install also satisfies: the test extras are a superset).
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(VENV)/.installed-serve $@

$(VENV)/.installed-serve: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	touch $@

setup: $(VENV)/.installed

# The JS tools (package.json: Prettier, ESLint), exactly as package-lock.json pins them; reinstalled when it
# changes, and the stamp is written only after a successful install.
$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

run: $(VENV)/.installed-serve
	$(BIN)/blockrepo serve --host $(HOST) --port $(PORT) --demo

lint: setup $(NODE_STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	npx --no-install prettier --check $(JS)
	npx --no-install eslint $(JS)

format: setup $(NODE_STAMP)
	$(BIN)/ruff check --fix src tests bench
	$(BIN)/ruff format src tests bench
	npx --no-install prettier --write $(JS)

# The pure JS modules' unit tests and the import-cycle check: Node's own test runner, no npm package.
test-js:
	node --test tests/js/*.test.mjs

typecheck: setup
	$(BIN)/mypy

# pytest exits non-zero when a test fails and also when it collects nothing (5): both fail the target.
test: setup lint typecheck test-js
	$(BIN)/pytest -n 2 $(PYTEST_ARGS)

# The edit-test loop: lint, types, and the unit and API tests but the slow ones (a few minutes); `make test`
# still runs everything, and is what CI runs.
quick: setup lint typecheck
	$(BIN)/pytest -n 2 -m "not slow" tests/unit tests/api $(PYTEST_ARGS)

# The user guide as a site in site/ (strict: a broken link or anchor fails); `mkdocs serve` previews it.
docs: setup
	$(BIN)/mkdocs build --strict

bench: setup
	$(BIN)/python bench/get_by_id.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache node_modules site
