# Every target bootstraps .venv itself, so a fresh clone needs only `make demo` or `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,bench]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/legion demo

lint: $(STAMP)
	$(BIN)/ruff check legion_tui tests bench
	$(BIN)/mypy --strict legion_tui

test: lint
	TEXTUAL_ANIMATIONS=none $(BIN)/pytest -q

bench: $(STAMP)
	@for f in bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
