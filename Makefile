# FlashCore bench — the front door.
#
#   make run     set up, build, and run the embedded default suite
#   make test    set up, build, and run every test (Go and Python)
#   make build   flashcore and every plugin this machine can build, into bin/
#   make dist    everything for a GPU machine without Go, into dist/
#   make gpu-tests  conformance test binaries for that machine, into dist/tests/
#   make lint    gofmt and go vet (with and without the cuda tag)

GO      ?= go
PYTHON  ?= python3
VENV    ?= .venv
NVCC    ?= $(shell command -v nvcc 2>/dev/null)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS := -X github.com/flashcore/bench/cli.Version=$(VERSION) -X github.com/flashcore/bench/cli.GitCommit=$(COMMIT)

# The CUDA plugins are built with the cuda tag where the CUDA toolkit (nvcc
# and cuda.h) is installed; elsewhere their !cuda twins are built, which
# report "built without CUDA".
CUDA_H    := $(wildcard /usr/include/cuda.h $(if $(NVCC),$(dir $(NVCC))../include/cuda.h) /usr/local/cuda/include/cuda.h)
HAVE_CUDA := $(if $(and $(NVCC),$(CUDA_H)),yes,)
CUDA_TAGS := $(if $(HAVE_CUDA),cuda,)

PLUGINS      := cpu-reference pytorch-sdpa triton python-file cuda-scalar cuda-wmma cuda-v8 cuda-file
CUDA_PLUGINS := cuda-scalar cuda-wmma cuda-v8 cuda-file
VENV_PYTHON  := $(abspath $(VENV))/bin/python

include mk/cuda.mk

.PHONY: all build run test test-go test-python setup lint dist gpu-tests clean

all: build

build: $(if $(HAVE_CUDA),cuda-kernels)
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/flashcore ./cmd/flashcore
	@for p in $(filter-out $(CUDA_PLUGINS),$(PLUGINS)); do \
		echo "build $$p"; $(GO) build -ldflags "$(LDFLAGS)" -o bin/flashcore-backend-$$p ./plugins/$$p || exit 1; done
	@for p in $(CUDA_PLUGINS); do \
		echo "build $$p $(if $(HAVE_CUDA),(cuda),(without CUDA))"; \
		$(GO) build -tags "$(CUDA_TAGS)" -ldflags "$(LDFLAGS)" -o bin/flashcore-backend-$$p ./plugins/$$p || exit 1; done

# The Python bridges need torch and triton: they go into a project venv so
# the machine's Python is left alone. The stamp re-runs pip when the pinned
# requirements change.
setup: $(VENV)/.installed

$(VENV)/.installed: python/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -r python/requirements.txt
	touch $@

run: setup build
	FLASHCORE_PYTHON=$(VENV_PYTHON) bin/flashcore run

test: setup build test-go test-python

test-go:
	$(GO) vet ./...
	FLASHCORE_PYTHON=$(VENV_PYTHON) FLASHCORE_BIN=$(abspath bin) $(GO) test -count=1 ./...

test-python:
	$(VENV)/bin/python -m pytest -q python/tests

lint: $(if $(HAVE_CUDA),cuda-kernels)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(if $(HAVE_CUDA),$(GO) vet -tags cuda ./...)

# dist/ carries everything a GPU machine without Go needs: flashcore, every
# plugin built with CUDA (kernels embedded, worker scripts embedded), the
# suites, the GPU check scripts and the Python-file examples.
# Binaries there are stripped (-s -w; panics still name their functions) to
# keep dist/ small enough to copy around.
DIST_FLAGS := -trimpath -ldflags "$(LDFLAGS) -s -w"

dist: cuda-kernels
	rm -rf dist && mkdir -p dist/suites dist/scripts
	$(GO) build $(DIST_FLAGS) -o dist/flashcore ./cmd/flashcore
	@for p in $(filter-out $(CUDA_PLUGINS),$(PLUGINS)); do \
		$(GO) build $(DIST_FLAGS) -o dist/flashcore-backend-$$p ./plugins/$$p || exit 1; done
	@for p in $(CUDA_PLUGINS); do \
		$(GO) build -tags cuda $(DIST_FLAGS) -o dist/flashcore-backend-$$p ./plugins/$$p || exit 1; done
	cp suites/*.toml dist/suites/
	cp -r examples dist/
	cp scripts/gpu-verify.sh scripts/gpu-verify-timing.sh scripts/gpu-cleanup-check.sh scripts/gpu-verify-python-file.sh scripts/gpu-cuda-file.sh scripts/compare-self.sh scripts/ncu_crosscheck.py scripts/ncu_bridge_probe.py scripts/timing_probe.py plugins/triton/triton_attention.py dist/scripts/
	@du -sh dist

# gpu-tests adds to dist/ the conformance test binaries of the plugins that
# need a GPU machine to be checked, and the script that runs them there
# against dist/'s plugins (scripts/gpu-conformance.sh). Kept out of dist
# itself: each binary is about 15 MB.
GPU_TEST_PLUGINS := $(CUDA_PLUGINS) pytorch-sdpa triton

gpu-tests:
	mkdir -p dist/tests dist/scripts
	@for p in $(GPU_TEST_PLUGINS); do \
		$(GO) test -c $(DIST_FLAGS) -o dist/tests/$$p.test ./plugins/$$p || exit 1; done
	cp scripts/gpu-conformance.sh dist/scripts/
	@du -sh dist/tests

clean:
	rm -rf bin dist
