# mcp-ref developer commands. `make test` is what CI runs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: test bench conformance clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

# The coverage floor (fail_under in pyproject.toml) applies to the full run only: a subset run
# (PYTEST_ARGS set) passes when its tests pass, and still prints the report.
test: $(STAMP)
	rm -f .coverage .coverage.*
	$(BIN)/coverage run -m pytest $(PYTEST_ARGS)
	$(BIN)/coverage combine --quiet
	$(BIN)/coverage report $(if $(strip $(PYTEST_ARGS)),--fail-under=0)

bench: $(STAMP)
	$(BIN)/python bench/bench.py $(BENCH_ARGS)

conformance: $(STAMP)
	PATH=$(CURDIR)/$(BIN):$$PATH ../shared/conformance/run.sh -- $(CURDIR)/$(BIN)/mcp-ref-everything

clean:
	rm -rf $(VENV) .coverage .coverage.* .pytest_cache build *.egg-info
