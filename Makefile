# The two commands: `make demo` runs the tour, `make test` runs every check.
# `make demo` installs agentool with the one extra its tour uses (dbos) into .venv-demo; every other
# target uses .venv, the development toolchain (`.[dev]`: tests, linters, docs, every extra).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_VENV := .venv-demo
DEMO_STAMP := $(DEMO_VENV)/.installed

.PHONY: demo test lint typecheck unit docs docs-serve matrix matrix-full install clean bench bench-durable fuzz

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	# pydantic-evals pins pydantic-ai-slim to its own release (2.62 is the newest published), so it
	# cannot be a dependency of `dev`, whose suite runs on the newest slim; its code is the same on
	# every slim of the range, so it goes in without its pin, for pyright and agentool.testing.evals'
	# tests (the matrix leg of the full `pydantic-ai==2.62.0` runs them with the pin kept).
	$(BIN)/python -m pip install --quiet --no-deps 'pydantic-evals>=2.60,<3'
	touch $(STAMP)

install: $(STAMP)

# Editable, so the tour always shows this checkout; no pip upgrade, no toolchain (about 125 MB).
$(DEMO_STAMP): pyproject.toml
	$(PYTHON) -m venv $(DEMO_VENV)
	$(DEMO_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dbos]'
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(DEMO_VENV)/bin/python -m examples.demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/pyright

# On every core (pytest-xdist), in a random order (pytest-randomly): see pyproject.toml.
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
# fresh venv under .venv-matrix/ built from this checkout (reused while pyproject.toml is unchanged),
# running the README quickstart and the tests marked `seam` (.ci/matrix.py says which and why).
# `make matrix-full` runs the whole suite on every leg instead.
matrix: $(STAMP)
	$(BIN)/python .ci/matrix.py

matrix-full: $(STAMP)
	$(BIN)/python .ci/matrix.py --full

# Every check. The legs' environments are built in the background while lint, types, the suite and
# the docs run (pip waits mostly on the disk, the checks on the CPU); a failed check waits for the
# build to end (no stray pip) and fails. Each stage prints its time.
test: $(STAMP)
	@mkdir -p .venv-matrix
	@$(BIN)/python .ci/matrix.py --build-only > .venv-matrix/build.log 2>&1 & build=$$!; \
	for stage in lint typecheck unit docs; do \
		start=$$(date +%s); \
		$(MAKE) --no-print-directory $$stage || { wait $$build; exit 1; }; \
		echo "make test: $$stage took $$(( $$(date +%s) - start ))s"; \
	done; \
	start=$$(date +%s); \
	wait $$build || { cat .venv-matrix/build.log; exit 1; }; \
	echo "make test: waited $$(( $$(date +%s) - start ))s for the matrix environments"; \
	tail -n 4 .venv-matrix/build.log; \
	start=$$(date +%s); \
	$(BIN)/python .ci/matrix.py --test-only || exit 1; \
	echo "make test: matrix took $$(( $$(date +%s) - start ))s"

# Benchmarks: one table of ratios (medians, same process), printed and written to docs/benchmarks.md.
bench: $(STAMP)
	$(BIN)/python -m bench

# Durable execution: overhead of a DBOS run vs a plain run, throughput of 1 vs 2 workers on Postgres.
bench-durable: $(STAMP)
	$(BIN)/python -m bench.durable

# The reliability tests with heavier inputs: more hypothesis examples, bigger sizes, more rounds
# (the modules that read AGENTOOL_FUZZ).
FUZZED = $(shell grep -l AGENTOOL_FUZZ tests/test_*.py)
fuzz: $(STAMP)
	AGENTOOL_FUZZ=1 $(BIN)/python -m pytest $(FUZZED)

clean:
	rm -rf $(VENV) $(DEMO_VENV) .venv-matrix site .pytest_cache .ruff_cache
