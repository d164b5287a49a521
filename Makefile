# FlashCore bench — the front door.
#
#   make run     set up, build, and run the embedded default suite
#   make test    set up, build, and run every test (Go and Python)
#   make build   flashcore and every plugin this machine can build, into bin/
#   make dist    everything for a GPU machine without Go, into dist/
#   make gpu-tests  conformance test binaries for that machine, into dist/tests/
#   make lint    gofmt and go vet (with and without the cuda tag)
#   make test-slurm  the Slurm test alone, against a one-node Slurm it starts (root, slurm-wlm, munge)

GO      ?= go
PYTHON  ?= python3
VENV    ?= .venv
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS := -X github.com/flashcore/bench/cli.Version=$(VERSION) -X github.com/flashcore/bench/cli.GitCommit=$(COMMIT)

# Every folder under plugins/ with its own main in
# plugins/NAME/cmd/flashcore-backend-NAME is a plugin; no list to edit here.
# A plugin that needs CUDA says so with a Go file under the cuda build tag
# (paired with a !cuda twin), or by importing cudakit (whose CUDA half is
# behind the tag): those are held by flashcore-plugins-cuda
# (cmd/flashcore-plugins-cuda), which needs libcuda to start, the others by
# flashcore-plugins (cmd/flashcore-plugins). Each of the two imports its
# plugins by name; plugins/all_test.go checks those lists against the
# folders by this same rule.
PLUGINS      := $(sort $(patsubst flashcore-backend-%,%,$(notdir $(wildcard plugins/*/cmd/flashcore-backend-*))))
CUDA_PLUGINS := $(sort $(patsubst plugins/%/,%,$(dir $(shell grep -lE '^//go:build(.*[^!a-z_])?cuda([^a-z_0-9]|$$)|"github.com/flashcore/bench/cudakit"' \
                  $(filter-out %_test.go,$(wildcard plugins/*/*.go)) /dev/null))))
GO_PLUGINS   := $(filter-out $(CUDA_PLUGINS),$(PLUGINS))
VENV_PYTHON  := $(abspath $(VENV))/bin/python

# $(call plugin-binary,OUT,PLUGINS,TAGS,FLAGS) builds the multi-call binary
# OUT (internal/multicall) from cmd/OUT's name, which holds PLUGINS, and
# beside it a link flashcore-backend-NAME to it for each, the name the host
# finds plugins by. With the cuda tag, cgo compiles against the pinned
# toolchain (mk/cuda.mk).
define plugin-binary
	@echo "build $(notdir $(1)): $(2)"
	@$(if $(filter cuda,$(3)),$(CUDA_CGO_ENV)) $(GO) build -tags "$(3)" $(4) -o $(1) ./cmd/$(notdir $(1))
	@for p in $(2); do ln -sfn $(notdir $(1)) $(dir $(1))flashcore-backend-$$p; done
endef

include mk/cuda.mk
include mk/hopper.mk

.PHONY: all build run test test-go test-python test-slurm setup lint dist dist-size gpu-tests clean doctor

all: build

build: $(if $(HAVE_CUDA),cuda-kernels)
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/flashcore ./cmd/flashcore
	$(call plugin-binary,bin/flashcore-plugins,$(GO_PLUGINS),,-ldflags "$(LDFLAGS)")
	$(if $(CUDA_PLUGINS),$(call plugin-binary,bin/flashcore-plugins-cuda,$(CUDA_PLUGINS),$(CUDA_TAGS),-ldflags "$(LDFLAGS)"))
	@echo "the CUDA plugins are built $(if $(HAVE_CUDA),with CUDA (toolchain $(CUDA_TOOLCHAIN)),without CUDA (the pinned CUDA toolchain is for x86-64 Linux))"

# doctor says what this machine has and lacks for each backend, and what
# make build does with the CUDA plugins here.
doctor:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/flashcore ./cmd/flashcore
	FLASHCORE_PYTHON=$(if $(wildcard $(VENV_PYTHON)),$(VENV_PYTHON),$(PYTHON)) bin/flashcore doctor --toolchain $(CUDA_TOOLCHAIN) --cuda-build "$(HAVE_CUDA)"

# The Python bridges need torch and triton: they go into a project venv so
# the machine's Python is left alone. The stamp re-runs pip when the pinned
# requirements change. pip shows what it downloads: PyPI's torch for Linux
# x86-64 brings its CUDA libraries (about 2.7 GB), GPU or not, and cannot
# import without them. PIP_FLAGS is passed to pip, e.g. an index with
# CPU-only torch wheels where one is reachable.
PIP_FLAGS ?=

#
# EXTRAS names optional third-party kernel libraries to install besides,
# for the bridge backends that call them: make setup EXTRAS=fa4,flashinfer
# (or all). They are pinned with their hashes in
# python/requirements-extras.txt and installed --no-deps (the list is each
# extra's whole closure); scripts/extras.py says which lines an extra
# needs, and installs them on a machine without a package index. Without
# EXTRAS nothing of theirs is installed, and their backends show in
# `flashcore list` as unavailable with this command.
EXTRAS  ?=
comma   := ,
EXTRAS_STAMP := $(if $(EXTRAS),$(VENV)/.extras-$(subst $(comma),-,$(EXTRAS)))

setup: $(VENV)/.installed $(EXTRAS_STAMP)

$(VENV)/.installed: python/requirements.txt
	@echo "setup 1/3: $(VENV) from $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	@echo "setup 2/3: pip"
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	@echo "setup 3/3: python/requirements.txt (torch with its CUDA wheels, triton: about 2.7 GB to download, about 4.7 GB installed, minutes)"
	@$(PYTHON) scripts/disk_check.py --need-gb 8 --what "$(VENV) (torch, triton and pip's downloads)" $(VENV)
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) -r python/requirements.txt
	touch $@

$(VENV)/.extras-%: python/requirements-extras.txt scripts/extras.py $(VENV)/.installed
	@echo "setup extras $(EXTRAS): the pinned wheels of python/requirements-extras.txt, hash-checked, --no-deps"
	$(VENV)/bin/python scripts/extras.py requirements --extras $(EXTRAS) > $(VENV)/requirements-extras-selected.txt
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) --no-deps --require-hashes -r $(VENV)/requirements-extras-selected.txt
	touch $@

run: setup build
	FLASHCORE_PYTHON=$(VENV_PYTHON) bin/flashcore run

test: setup build test-go test-python

# One package at a time (-p 1): many packages run real plugin processes
# whose rows the host times and holds to its clock rules, and on a
# two-core machine packages run side by side starve each other's plugins
# (a CI run refused a CPU row for a 123 ms stall in every one of its
# batches). The packages' tests took 542 s one after another in a CI run.
test-go:
	$(GO) vet ./...
	FLASHCORE_PYTHON=$(VENV_PYTHON) FLASHCORE_BIN=$(abspath bin) FLASHCORE_CUDA_BUILT=$(HAVE_CUDA) $(GO) test -p 1 -count=1 ./...

# test-slurm runs flashcore slurm's job array and merge through a real
# Slurm that the test starts on localhost (it skips, saying why, without
# root or without the slurm-wlm and munge packages). make test runs it too.
test-slurm: setup build
	FLASHCORE_PYTHON=$(VENV_PYTHON) FLASHCORE_BIN=$(abspath bin) $(GO) test -count=1 -v ./cli/slurmtest

test-python:
	$(VENV)/bin/python -m pytest -q python/tests

lint: $(if $(HAVE_CUDA),cuda-vet)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

# dist/ carries everything a GPU machine without Go needs: flashcore, the
# two multi-call plugin binaries (CUDA built in, kernels and worker scripts
# embedded) with a link per plugin, the suites, the GPU check scripts and
# the Python-file examples.
# Binaries there are stripped (-s -w; panics still name their functions) to
# keep dist/ small enough to copy around.
DIST_FLAGS := -trimpath -ldflags "$(LDFLAGS) -s -w"

dist: cuda-kernels
	rm -rf dist && mkdir -p dist/suites dist/scripts
	$(GO) build $(DIST_FLAGS) -o dist/flashcore ./cmd/flashcore
	$(call plugin-binary,dist/flashcore-plugins,$(GO_PLUGINS),,$(DIST_FLAGS))
	$(if $(CUDA_PLUGINS),$(call plugin-binary,dist/flashcore-plugins-cuda,$(CUDA_PLUGINS),cuda,$(DIST_FLAGS)))
	cp suites/*.toml dist/suites/
	cp -r examples dist/
	@# every top-level script: the GPU check scripts and the probes they run
	cp scripts/*.sh scripts/*.py plugins/triton/triton_attention.py dist/scripts/
	@# the extras' pinned list, where scripts/extras.py looks for it
	mkdir -p dist/python && cp python/requirements-extras.txt dist/python/
	@du -sh dist

# dist-size measures dist/ as it lies and packed with tar -cJ, the figures
# the README quotes.
dist-size: dist
	scripts/dist-size.sh dist

# gpu-tests adds to dist/ the conformance test binaries of the plugins that
# need a GPU machine to be checked, and the script that runs them there
# against dist/'s plugins (scripts/gpu-conformance.sh). Kept out of dist
# itself: each binary is about 15 MB.
GPU_TEST_PLUGINS := $(CUDA_PLUGINS) pytorch-sdpa triton flash-attn-4 flashinfer

gpu-tests:
	mkdir -p dist/tests dist/scripts
	@for p in $(GPU_TEST_PLUGINS); do \
		$(GO) test -c $(DIST_FLAGS) -o dist/tests/$$p.test ./plugins/$$p || exit 1; done
	cp scripts/gpu-conformance.sh dist/scripts/
	@du -sh dist/tests

clean:
	rm -rf bin dist
