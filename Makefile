# The README's two commands: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Store backend for the test suite: sqlite (default) or postgresql.
BACKEND ?= sqlite
PYTEST_ARGS ?=
# `make run PORT=8081 SANDBOX_PORT=9091` when 8080 or 9090 is taken.
PORT ?= 8080
SANDBOX_PORT ?= 9090
# `make run VENUE=hyperliquid`: the demo's orders go to a local Hyperliquid (hlsandbox,
# world EMULATOR) on HL_PORT instead of the simulated venue.
VENUE ?= sim
HL_PORT ?= 3001
DEMO_VENUE := $(if $(filter-out sim,$(VENUE)), --venue $(VENUE) --hl-port $(HL_PORT))

.PHONY: setup run test lint bench clean

$(BIN)/.installed: pyproject.toml
	@echo "installing (1–2 min)… into $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

setup: $(BIN)/.installed

run: setup
	$(BIN)/countersign demo --port $(PORT) --sandbox-port $(SANDBOX_PORT)$(DEMO_VENUE)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: lint
	COUNTERSIGN_TEST_BACKEND=$(BACKEND) $(BIN)/python -m pytest -q $(PYTEST_ARGS)

bench: setup
	$(BIN)/python bench/store_claims.py

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache* .ruff_cache
