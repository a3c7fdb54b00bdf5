# Everything a fresh machine needs: `make run` and `make test` create the venv and install.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: run test bench lint install install-dev clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

# The llama.cpp server is built by scripts/install-llama-server.sh with fixed CPU flags, never taken
# from pip's cache (a native build dies on CPUs with AMX); the editable install then finds it satisfied.
$(DEV_STAMP): pyproject.toml constraints/llama-server.txt scripts/install-llama-server.sh | $(BIN)/python
	scripts/install-chromium.sh
	scripts/install-llama-server.sh $(VENV)
	$(BIN)/pip install -q -c constraints/llama-server.txt -e '.[dev,tokenizers,llama-server,fast,ray,report]'
	touch $@ $(STAMP)

install: $(STAMP)
install-dev: $(DEV_STAMP)

# report.html needs the report extra (altair, vl-convert, jinja2): installed here once when missing.
run: $(STAMP)
	@$(BIN)/python -c "import altair, vl_convert, jinja2" 2>/dev/null || $(BIN)/pip install -q -e '.[report]'
	$(BIN)/vazao demo --report report.html

test: $(DEV_STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest

bench: $(DEV_STAMP)
	$(BIN)/python bench/run.py

lint: $(DEV_STAMP)
	$(BIN)/ruff check src tests bench

clean:
	rm -rf $(VENV) build dist src/*.egg-info
