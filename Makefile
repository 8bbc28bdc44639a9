# seer: `make run` and `make test` do all the set-up on a fresh machine (a virtual env in .venv).
# `make run` installs what running seer needs (its dependencies and matplotlib for the plots);
# `make test` and `make lint` add the dev tools, Ray (the tests start a local cluster) and the torch
# extra (PyTorch's CPU build and transformers: the tests capture live models).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
STAMP     := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: install install-dev run test lint fit evaluate collect bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e ".[plot]"
	touch $(STAMP)

$(DEV_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet torch==2.13.0  # the CPU wheel first: the torch extra then keeps it
	$(PY) -m pip install --quiet -e ".[dev,plot,cluster,torch]"
	touch $(DEV_STAMP) $(STAMP)

install: $(STAMP)     ## seer, its dependencies and the plot extra
install-dev: $(DEV_STAMP)  ## and the dev and cluster extras (pytest, ruff, mypy, Ray)

run: install          ## fit and evaluate on the built-in data; headline at the end, full report in build/report
	$(PY) -m seer $(ARGS)

test: install-dev     ## the whole test suite (no GPU needed)
	$(PY) -m pytest -q

lint: install-dev     ## ruff (lint + format check) and mypy over seer/ and cudnn_bench/
	$(BIN)/ruff check seer cudnn_bench
	$(BIN)/ruff format --check seer cudnn_bench
	$(BIN)/mypy

fit: install          ## fit per-variant models: python -m seer.fit --help
	$(PY) -m seer.fit $(ARGS)

evaluate: install     ## Test-set-I and II: python -m seer.evaluate --help
	$(PY) -m seer.evaluate $(ARGS)

bench: install        ## speed of prediction and fitting
	$(PY) -m seer.evaluate.bench $(ARGS)

# The GPU libraries (cuDNN, cuBLAS wheels, CuPy/pycuda) live in the system Python of a GPU
# machine, which may have no internet for a venv: use it when it has seer's dependencies.
collect:              ## measure on this machine's GPU: python -m cudnn_bench collect --help
	@if $(PYTHON) -c "import numpy, pandas, scipy, statsmodels" 2>/dev/null; then \
		$(PYTHON) -m cudnn_bench collect $(ARGS); \
	else $(MAKE) --no-print-directory install && $(PY) -m cudnn_bench collect $(ARGS); fi

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
