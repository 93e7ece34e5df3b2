# mcp-ref developer commands. `make test` is what CI runs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --disable-pip-version-check
# Two stamps, so `make demo` installs only what it runs: RUNTIME is the project and its four
# runtime dependencies (`-e .`); STAMP adds the test toolchain (`-e '.[test]'`: pytest, coverage,
# hypothesis, the official SDK). Installing STAMP satisfies RUNTIME too, so `make test` then
# `make demo` installs nothing more, and `make demo` then `make test` only the test toolchain.
RUNTIME := $(VENV)/.runtime
STAMP   := $(VENV)/.installed

.PHONY: lint test demo fuzz bench bench-fs conformance hosts spec bundle clean

$(BIN)/python:
	@echo "make: creating the virtual environment $(VENV) with $(PYTHON) ($$($(PYTHON) --version 2>&1))"
	$(PYTHON) -m venv $(VENV)

$(RUNTIME): pyproject.toml | $(BIN)/python
	@echo "make: installing mcp-ref and its runtime dependencies into $(VENV) (pip, a few seconds)"
	$(PIP) install --progress-bar off -e .
	@touch $(RUNTIME)

$(STAMP): pyproject.toml | $(BIN)/python
	@echo "make: installing mcp-ref with its test toolchain into $(VENV) (pip: pytest, coverage, hypothesis, the MCP SDK, ruff, mypy)"
	$(PIP) install --progress-bar off -e '.[test]'
	@touch $(RUNTIME) $(STAMP)

# ruff, then mypy, as configured in pyproject.toml ([tool.ruff], [tool.mypy]); CI runs it before `make test`.
lint: $(STAMP)
	$(BIN)/ruff check mcp_ref servers tools tests
	$(BIN)/mypy

# The coverage floor (fail_under in pyproject.toml) applies to the full run only: a subset run
# (PYTEST_ARGS set) passes when its tests pass, and still prints the report.
test: $(STAMP)
	@$(if $(strip $(PYTEST_ARGS)),,echo "make test: the whole suite (8,500+ tests) under coverage: about 5 minutes on 2 idle cores, 15 when busy")
	rm -f .coverage .coverage.*
	$(BIN)/coverage run -m pytest $(PYTEST_ARGS)
	$(BIN)/coverage combine --quiet
	$(BIN)/coverage report $(if $(strip $(PYTEST_ARGS)),--fail-under=0)

# A scripted session against mcp-ref-fs serving a copy of the bundled example folder, printing
# each line on the wire with a one-line explanation (servers/mcp_ref_fs/demo.py).
demo: $(RUNTIME)
	@echo "make: running the demo (python -m mcp_ref_fs.demo)"
	@$(BIN)/python -m mcp_ref_fs.demo $(DEMO_ARGS)

# A long, randomized run of the property-based stdio fuzzer (tests/fuzz), without coverage.
# MCP_REF_FUZZ_EXAMPLES sets the examples per test (default 3000); FUZZ_ARGS passes pytest options.
fuzz: $(STAMP)
	MCP_REF_FUZZ_PROFILE=long $(BIN)/python -m pytest tests/fuzz -p no:cacheprovider --hypothesis-show-statistics $(FUZZ_ARGS)

bench: $(STAMP)
	$(BIN)/python bench/bench.py $(BENCH_ARGS)

# mcp-ref-fs next to the official Python SDK and Node filesystem servers (bench/README.md):
# make bench-fs BENCH_ARGS="--peers"   (--quick: under a minute; the peers install on first use)
bench-fs: $(STAMP)
	$(BIN)/python bench/fs_bench.py $(BENCH_ARGS)

# The official MCP conformance referee (pinned; installed from npm into .conformance/ on first use)
# against mcp-ref-everything and mcp-ref-fs, in both eras, through the project's own HTTP->stdio
# bridge (tools/conformance/). Needs npm. docs/external-checks.md; CONFORMANCE_ARGS='--era 2026-07-28'.
conformance: $(STAMP)
	$(BIN)/python tools/conformance/run.py $(CONFORMANCE_ARGS)

# mcp-ref-fs through four real MCP hosts (pinned; installed from npm into .hosts/ on first use,
# about 1.1 GB), each driven through its own agent loop by a stand-in model on 127.0.0.1
# (tools/hosts/). Needs npm; not part of make test. docs/external-checks.md; HOSTS_ARGS='--host codex'.
hosts: $(STAMP)
	$(BIN)/python tools/hosts/run.py $(HOSTS_ARGS)

# Refresh what spec/ generates: every record's tests: line, then docs/conformance.md (spec/README.md).
spec: $(STAMP)
	$(BIN)/python spec/trace.py --write
	$(BIN)/python spec/trace.py --conformance docs/conformance.md

# The MCP Bundle (manifest.json + the sources it needs) for one-step install in Claude Desktop.
bundle:
	$(PYTHON) tools/build_bundle.py

clean:
	rm -rf $(VENV) .coverage .coverage.* .pytest_cache .ruff_cache .mypy_cache build dist *.egg-info .conformance .hosts
