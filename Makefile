# Thin entry points: everything real lives in the Python package, the Rust engine and native/.
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
ACT   := VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH
DEPS  := $(VENV)/.deps-stamp
BUILT := $(VENV)/.engine-stamp
RUST_SRC := $(shell find engine/src bindings/src -name '*.rs') engine/Cargo.toml bindings/Cargo.toml Cargo.toml

.PHONY: all venv build native system-deps demo test test-rust test-py fuzz bench clean

all: build

venv: $(DEPS)
$(DEPS): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "maturin>=1.5,<2" numpy pandas pyarrow matplotlib rich scikit-learn skops otf2 pymetis pytest mpich mpi4py
	touch $@

build: $(BUILT)
$(BUILT): $(DEPS) $(RUST_SRC) pyproject.toml
	$(ACT) maturin develop --release -q
	touch $@

native: build
	$(ACT) contend native build

demo: build
	$(ACT) contend demo -o demo-report

test-rust:
	cargo test --release -q -p contend-engine

# Debian packages some tests use (Open MPI for the any-mpicc check, iproute2 for the emulated fabric,
# scotch for the comparison with Scotch's own architecture mapping).
# Installed when we are root on a Debian-like system; otherwise those tests skip and say why.
SYSTEM_PACKAGES := openmpi-bin libopenmpi-dev iproute2 scotch
system-deps:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	  if [ -n "$$missing" ]; then \
	    echo "installing $$missing"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null) \
	      || echo "warning: could not install $$missing; the tests that need them will skip"; \
	  fi; \
	fi

test-py: build system-deps
	$(ACT) python -m pytest -q

test: test-rust test-py

# Every input kind, command line and output place mutated (tests/test_fuzz.py); CONTEND_FUZZ_SEED picks
# another run, CONTEND_FUZZ_CASES another length.
FUZZ_CASES ?= 2000
fuzz: build system-deps
	$(ACT) CONTEND_FUZZ_CASES=$(FUZZ_CASES) python -m pytest -q tests/test_fuzz.py

bench: build
	$(ACT) python benchmarks/engine_speed.py
	$(ACT) python benchmarks/noise_speed.py
	$(ACT) python benchmarks/diagnose_speed.py --ranks 384
	$(ACT) python benchmarks/replay_speed.py
	$(ACT) python benchmarks/mapping.py
	$(ACT) python benchmarks/throttle_overhead.py

clean:
	rm -rf target $(VENV) demo-report native/build
