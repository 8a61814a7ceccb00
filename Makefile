# Thin entry points: everything real lives in the Python package, the Rust engine and native/.
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
ACT   := VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH
DEPS  := $(VENV)/.deps-stamp
BUILT := $(VENV)/.engine-stamp
RUST_SRC := $(shell find engine/src bindings/src -name '*.rs') engine/Cargo.toml bindings/Cargo.toml Cargo.toml

.PHONY: all venv build native demo test test-rust test-py bench clean

all: build

venv: $(DEPS)
$(DEPS): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "maturin>=1.5,<2" numpy pandas pyarrow matplotlib rich pytest mpich mpi4py
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

test-py: build
	$(ACT) python -m pytest -q

test: test-rust test-py

bench: build
	$(ACT) python benchmarks/engine_speed.py

clean:
	rm -rf target $(VENV) demo-report native/build
