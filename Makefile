# Every target bootstraps .venv itself, so a fresh clone needs only `make demo` or `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test check types unit lint bench clean agents soak install

# The real agent CLIs the tests drive, pinned in agents/<line>/package.json and installed
# once into a project-local prefix (no global install, npm's cache under .venv, not $HOME).
AGENTS := $(VENV)/agents
AGENT_LINES := pi-0.73 pi-1.6 claude-code codex
AGENT_STAMPS := $(foreach l,$(AGENT_LINES),$(AGENTS)/$(l)/.installed)
NPM := npm_config_cache=$(abspath $(VENV))/npm-cache npm_config_update_notifier=false npm

# The demo needs the runtime only; the tests, benchmarks and Ray come on top of it.
# setuptools' "Editable installation" banner is about a layout this project does not
# have (a same-named folder shadowing the package): not the first thing a user reads.
QUIET_BUILD := PYTHONWARNINGS="ignore:Editable installation"
RUNTIME := $(VENV)/.runtime
$(RUNTIME): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(QUIET_BUILD) $(BIN)/pip install --quiet -e .
	touch $(RUNTIME)

$(STAMP): $(RUNTIME)
	$(QUIET_BUILD) $(BIN)/pip install --quiet -e '.[test,bench,ray]'
	touch $(STAMP)

$(AGENTS)/%/.installed: agents/%/package.json
	rm -rf $(AGENTS)/$*
	mkdir -p $(AGENTS)/$*
	cp agents/$*/package.json $(AGENTS)/$*/package.json
	$(NPM) install --prefix $(AGENTS)/$* --no-audit --no-fund --no-package-lock --loglevel=error
	touch $@

agents: $(AGENT_STAMPS)

demo: $(RUNTIME)
	$(BIN)/legion demo

# `legion` on your PATH, installed from this checkout as a tool of its own (uv, pipx, else
# a venv of its own linked from ~/.local/bin): tools/install.sh says how and where.
install:
	@PY=$(PY) sh tools/install.sh

lint: $(STAMP)
	$(BIN)/ruff check legion_tui tests bench tools
	$(BIN)/mypy --strict legion_tui

# The quick loop: no agent, no process started by a test (the `unit` tier); mypy beside
# the tests, so both cores stay busy.
check: $(STAMP)
	$(BIN)/ruff check legion_tui tests bench tools
	$(MAKE) -j2 types unit

types: $(STAMP)
	$(BIN)/mypy --strict legion_tui

unit: $(STAMP)
	TEXTUAL_ANIMATIONS=none $(BIN)/pytest -q -m unit -n 2 -p no:cacheprovider

# Every tier on both cores, each test to whichever worker is free, a Ray module's on one
# (tests/conftest.py groups them: its cluster is made once). The venv and the four agent
# CLIs install side by side first.
test:
	$(MAKE) -j2 lint agents
	TEXTUAL_ANIMATIONS=none $(BIN)/pytest -q -n 2 --dist loadgroup --durations=25

# The whole suite as `make test` runs it, RUNS times beside LOAD busy processes, failures
# counted per test.
RUNS ?= 5
LOAD ?= 2
soak: $(STAMP) agents
	$(BIN)/python tools/soak.py --runs $(RUNS) --load $(LOAD) --logs .soak -- -n 2 --dist loadgroup

bench: $(STAMP) agents
	@for f in bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
