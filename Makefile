# The two commands: `make demo` runs the tour, `make test` runs every check.
# Both create .venv and install the project into it on first use (Python 3.11+, pip, make).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit docs docs-serve matrix install clean bench bench-durable fuzz

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m examples.demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/pyright

unit: $(STAMP)
	$(BIN)/python -m pytest

# The docs site, built strictly into site/ (gitignored, replaced on each build); `make docs-serve`
# serves it on loopback and rebuilds on every edit. NO_MKDOCS_2_WARNING silences the theme's
# end-of-life banner, which mkdocs-material prints on every mkdocs command.
docs docs-serve: export NO_MKDOCS_2_WARNING = 1

docs: $(STAMP)
	$(BIN)/python -m mkdocs build --strict --quiet -d site

docs-serve: $(STAMP)
	$(BIN)/python -m mkdocs serve --strict -a 127.0.0.1:8000

# The supported pydantic-ai range at both ends, plus the full `pydantic-ai` package: each leg is a
# fresh venv under .venv-matrix/ built from this checkout, running the README quickstart and the full
# pytest suite (.ci/matrix.py; about 3 minutes a leg, reused while pyproject.toml is unchanged).
matrix: $(STAMP)
	$(BIN)/python .ci/matrix.py

test: lint typecheck unit docs matrix

# Benchmarks: one table of ratios (medians, same process), printed and written to docs/benchmarks.md.
bench: $(STAMP)
	$(BIN)/python -m bench

# Durable execution: overhead of a DBOS run vs a plain run, throughput of 1 vs 2 workers on Postgres.
bench-durable: $(STAMP)
	$(BIN)/python -m bench.durable

# The reliability tests with heavier inputs: more hypothesis examples, bigger sizes, more rounds.
fuzz: $(STAMP)
	AGENTOOL_FUZZ=1 $(BIN)/python -m pytest tests/test_reliability_*.py

clean:
	rm -rf $(VENV) .venv-matrix site .pytest_cache .ruff_cache
