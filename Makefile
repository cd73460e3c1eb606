# The README's two commands (demo, test), which do their own set-up on a fresh machine, and
# the fast checks (lint, typecheck, unit), which need no services and no PyTorch: they use the
# virtual environment `make test` or `make demo` created (TG_VENV, as deploy/dev.sh reads it).
VENV ?= $(or $(TG_VENV),.venv)
BIN := $(VENV)/bin

.PHONY: demo test lint typecheck unit check venv-ready

demo:
	bash deploy/dev.sh demo

test:
	bash deploy/dev.sh test

# ruff lint and the formatting check, as CI runs them (`ruff format .` fixes the second).
lint: venv-ready
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy over the packages listed in pyproject.toml ([tool.mypy] files).
typecheck: venv-ready
	$(BIN)/mypy

# tests/unit: no I/O, no Kafka, ClickHouse, Slurm or PyTorch. Tests marked slow, and the
# heavy ones tests/unit/conftest.py lists (the twin over whole jobs, model fits, subprocesses),
# are left out here; `make test` (CI) runs them with everything else.
unit: venv-ready
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not slow and not heavy" tests/unit

check: lint typecheck unit

venv-ready:
	@test -x $(BIN)/python || { echo "no virtual environment at $(VENV): run 'make test' once" \
	  "(or 'bash deploy/dev.sh setup'), or point TG_VENV at one with the dev extra" >&2; exit 2; }
