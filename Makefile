# gpnb — build, test and notebook targets. `make help` lists them.
#
# Set-up on a fresh Debian machine: `make demo` and `make test` install what
# they need (Debian packages only when missing, as root or with sudo; the Go
# tools pinned in tools/go.mod; the GoNB kernel).

GO        ?= go
# The UCI datasets (see ../shared/data/uci/README). Tests that need them skip
# when GPNB_DATA is no folder, and fail when it is one without their files
# (internal/ucitest); GPNB_DOWNLOAD=1 downloads them into the user cache.
GPNB_DATA ?= $(abspath $(CURDIR)/../shared/data/uci)
export GPNB_DATA

# gotest: where the tests that skipped for want of the UCI files write their
# names, for one summary line at the end.
SKIPLOG := $(CURDIR)/.cache/gotest-skipped-uci

# OPENBLAS=1 builds with the cgo OpenBLAS backend (build tag openblas) for
# dgemm; it is on by default when the library is installed. `make OPENBLAS=0 ...` to switch
# it off.
OPENBLAS_LIB ?= /usr/lib/x86_64-linux-gnu/libopenblas.so
OPENBLAS     ?= $(if $(wildcard $(OPENBLAS_LIB)),1,0)
TAGS         ?= $(if $(filter 1,$(OPENBLAS)),openblas)
TAGFLAGS      = $(if $(strip $(TAGS)),-tags '$(TAGS)')

TOOLBIN := $(shell $(GO) env GOPATH)/bin
export PATH := $(TOOLBIN):$(PATH)

# Debian's Python has Jupyter; the first python3 on PATH may not.
PYTHON ?= /usr/bin/python3

ECHARTS_VERSION ?= 5.6.0
ECHARTS_JS      := .cache/echarts/node_modules/echarts/dist/echarts.min.js

# bench: which benchmarks, how long, where.
BENCH     ?= .
BENCHTIME ?= 3x
BENCHPKG  ?= ./...

# lint: the platforms `go vet` checks besides this one's tagged build.
CROSS ?= linux/amd64 linux/arm64 darwin/arm64 windows/amd64

# gotest: a package whose dependencies include this one uses BLAS, and its
# tests run twice: with cgo and $(TAGS), and pure Go (CGO_ENABLED=0), so
# two BLAS implementations and both kernel paths check every assertion.
BLAS64 := gonum.org/v1/gonum/blas/blas64

# ptx: the CUDA compiler cuda/kernels/gen.sh uses (CUDA 11.8 or later).
NVCC ?= nvcc

# The steps of `make test` depend on one another's set-up: never in parallel.
.NOTPARALLEL:

.PHONY: help all build demo test gotest lint check-notebooks test-notebooks \
	strip-notebooks notebook notebook-deps deps tools echarts bench ptx clean \
	test-slurm

help:
	@echo "gpnb make targets:"
	@echo "  demo             build bin/gpnb and run 'gpnb demo' (warm vs cold start, embedded data)"
	@echo "  test             lint, check-notebooks, go test ./... (GPNB_DATA=$(GPNB_DATA)), again pure Go where BLAS is used, -tags cudaemu ./cuda ./gpnb/nb, test-slurm, test-notebooks"
	@echo "  build            go build -o bin/gpnb ./cmd/gpnb (tags: '$(TAGS)'; OPENBLAS=0 for gonum's BLAS)"
	@echo "  lint             gofmt -l (must be empty), go vet, staticcheck, go vet for $(CROSS)"
	@echo "  echarts          npm install echarts@$(ECHARTS_VERSION) into .cache/echarts (offline charts)"
	@echo "  notebook         install gonb, goimports, gopls; gonb --install; start Jupyter on notebooks/"
	@echo "  test-notebooks   execute every notebook headless (notebooks/testdata/* 5 times) and fail on any cell error, lost output or undrawn chart"
	@echo "  test-slurm       run scripts/slurm/reproduce.sbatch on a one-node Slurm cluster started for the test (root or sudo)"
	@echo "  check-notebooks  fail if a committed notebook carries outputs or execution counts"
	@echo "  strip-notebooks  remove outputs and execution counts from notebooks/*.ipynb"
	@echo "  bench            short Go benchmarks (BENCH=$(BENCH) BENCHTIME=$(BENCHTIME) BENCHPKG=$(BENCHPKG))"
	@echo "  ptx              regenerate the GPU backend's PTX and cubin from cuda/kernels/gpnb.cu (needs nvcc 11.8+)"
	@echo "  deps             install missing Debian packages, the Go tools and the gonb kernel"
	@echo "  clean            remove bin/ and the notebook run outputs"

all: build

# --- set-up ---------------------------------------------------------------

# deps: everything the tests need. Cheap when all is there already.
deps:
	scripts/install-deps.sh apt tools kernel

tools:
	scripts/install-deps.sh tools

notebook-deps:
	scripts/install-deps.sh tools kernel

echarts: $(ECHARTS_JS)

$(ECHARTS_JS):
	@command -v npm >/dev/null || { echo "make echarts: npm not found: apt-get install nodejs npm (or scripts/install-deps.sh apt)"; exit 1; }
	npm install --no-audit --no-fund --prefix .cache/echarts echarts@$(ECHARTS_VERSION)
	@test -f $@ || { echo "make echarts: $@ missing after npm install"; exit 1; }

# --- build and run ----------------------------------------------------------

build:
	$(GO) build -buildvcs=auto $(TAGFLAGS) -o bin/gpnb ./cmd/gpnb

demo: build
	bin/gpnb demo

# --- checks -----------------------------------------------------------------

test: deps echarts lint check-notebooks gotest test-slurm test-notebooks

lint: tools
	@echo "==> gofmt -l"
	@out="$$(find . \( -path ./.git -o -path ./.cache -o -path ./bin \) -prune -o -name '*.go' -print | xargs -r gofmt -l)"; \
	if [ -n "$$out" ]; then echo "gofmt: these files need 'gofmt -w':"; echo "$$out"; exit 1; fi
	@echo "==> go vet"
	$(GO) vet $(TAGFLAGS) ./...
	@echo "==> staticcheck"
	$(TOOLBIN)/staticcheck $(TAGFLAGS) ./...
	@echo "==> go vet for $(CROSS) (no cgo, no cuda tag)"
	@for p in $(CROSS); do echo "    $$p"; GOOS=$${p%/*} GOARCH=$${p#*/} CGO_ENABLED=0 $(GO) vet ./... || exit 1; done

gotest: export GPNB_SKIPLOG = $(SKIPLOG)
gotest: echarts
	@mkdir -p $(dir $(SKIPLOG)) && rm -f $(SKIPLOG)
	@echo "==> go test $(TAGFLAGS) (GPNB_DATA=$(GPNB_DATA))"
	GPNB_REQUIRE_BROWSER=1 $(GO) test $(TAGFLAGS) -count=1 -p 1 ./...
	@echo "==> go test, pure Go (no cgo: gonum's BLAS, Go's kernel code): the packages that use BLAS"
	CGO_ENABLED=0 GPNB_REQUIRE_BROWSER=1 $(GO) test -count=1 -p 1 $$(CGO_ENABLED=0 $(GO) list -f '{{.ImportPath}}{{range .Deps}}{{if eq . "$(BLAS64)"}} blas{{end}}{{end}}' ./... | awk '$$2 == "blas" {print $$1}')
	@echo "==> go test -tags cudaemu ./cuda ./gpnb/nb (the GPU kernels compiled as host C++; nb picks the emulated GPU)"
	$(GO) test -tags cudaemu -count=1 ./cuda/... ./gpnb/nb
	@if [ -s $(SKIPLOG) ]; then \
	  echo "skipped: $$(sort -u $(SKIPLOG) | wc -l) tests need the UCI files (GPNB_DATA=$(GPNB_DATA) is no folder; GPNB_DOWNLOAD=1 downloads them): $$(sort -u $(SKIPLOG) | paste -sd ' ' -)"; fi

# test-slurm: the array job of scripts/slurm/reproduce.sbatch on a real
# Slurm, a one-node cluster (munged, slurmctld, slurmd) that
# scripts/slurm/test-local.sh starts in a temporary directory and stops
# again; it installs Debian's slurmctld, slurmd, slurm-client and munge when
# missing (root or sudo).
test-slurm: build
	@echo "==> test-slurm"
	GPNB=$(CURDIR)/bin/gpnb scripts/slurm/test-local.sh

check-notebooks:
	@echo "==> check-notebooks"
	$(PYTHON) scripts/nbcheck_test.py
	@nbs="$$(ls notebooks/*.ipynb notebooks/testdata/*.ipynb 2>/dev/null)"; \
	if [ -z "$$nbs" ]; then echo "no notebooks"; else $(PYTHON) scripts/nbcheck.py stripped $$nbs && echo "notebooks stripped: $$(echo $$nbs | wc -w)"; fi

strip-notebooks:
	$(PYTHON) scripts/nbcheck.py strip notebooks/*.ipynb $(wildcard notebooks/testdata/*.ipynb)

test-notebooks: notebook-deps
	@echo "==> test-notebooks"
	GPNB_REQUIRE_BROWSER=1 scripts/run-notebooks.sh

notebook: notebook-deps
	@test -x /usr/bin/jupyter-notebook || { \
	  if [ "$$(id -u)" = 0 ]; then DEBIAN_FRONTEND=noninteractive apt-get install -y -q jupyter-notebook; \
	  else echo "make notebook: Jupyter's notebook server is missing: sudo apt-get install jupyter-notebook"; exit 1; fi; }
	/usr/bin/jupyter-notebook --notebook-dir=notebooks --no-browser --ip=127.0.0.1 $$([ "$$(id -u)" = 0 ] && echo --allow-root)

bench:
	$(GO) test $(TAGFLAGS) -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) -benchmem $(BENCHPKG)

# ptx regenerates the checked-in PTX and cubin of the GPU backend from
# cuda/kernels/gpnb.cu (cuda/kernels/gen.sh: nvcc -ptx -fmad=false for sm_90
# and sm_60, ptxas for the sm_90 cubin).
ptx:
	@test -f cuda/kernels/gen.sh || { echo "make ptx: cuda/kernels/gen.sh not found"; exit 1; }
	@if ! command -v $(NVCC) >/dev/null; then \
	  echo "make ptx: $(NVCC) not found: install the CUDA toolkit (11.8 or later; Debian 12: nvidia-cuda-toolkit from non-free) to regenerate cuda/kernels/; the checked-in kernels are used as they are"; \
	else NVCC=$(NVCC) sh cuda/kernels/gen.sh; fi

clean:
	rm -rf bin .cache/notebooks
