# node-rotation-controller — build, test and the local test world.
# Every target prints what it does; the test binaries are built from Go
# modules into a cache outside the repository (test/world/testbin.sh).

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
# go.mod needs Go >= 1.26.9 (Karpenter v1.15's API module asks for it), newer
# than the go1.26.8 a machine may have: the go command fetches the approved
# go1.27.3 from the Go module proxy once (~76 MB) and runs it
# (docs/design.md#toolchain). `make GOTOOLCHAIN=local` runs a local Go >= 1.26.9.
GOTOOLCHAIN ?= go1.27.3
export GOTOOLCHAIN
# The compilers' collector (docs/test-world.md, "CI time"): every go
# command here runs its compiler, linker and vet with GOGC=800, the heap
# let grow to nine times what is live between collections, under a soft
# limit of 4 GiB a process (GOMEMLIMIT): a fifth less CPU for the same
# packages (measured: k8s.io/api and client-go from an empty build cache,
# 255 CPU-seconds against 321). The test binaries keep the runtime's
# defaults: GOTEST hands them an environment without the two (the
# controller sets its own GOGC, limits.go); bench-scale's go run does the
# same, and so do the release's dist tests and cluster-smoke. The release
# tool's and the image builder's go run do run with them: short programs
# whose collector nothing measures.
GO_BUILD_ENV ?= GOGC=800 GOMEMLIMIT=4GiB
GO ?= $(GO_BUILD_ENV) go
# Every go command here compiles with the flags of the image and the
# release (static, -trimpath): a package vet or a test compiled is then the
# one make image and make release link, not compiled again with other
# flags, and the tests run the code as it ships (docs/test-world.md, "CI
# time"). The Go build cache keys each compiled package by its flags. An
# exported GOFLAGS hides the go env file's, so that one is read in first.
CGO_ENABLED ?= 0
export CGO_ENABLED
ifeq ($(origin GOFLAGS),undefined)
GOFLAGS := $(shell GOTOOLCHAIN=local $(GO) env GOFLAGS 2>/dev/null)
endif
export GOFLAGS := $(strip $(filter-out -trimpath -buildvcs=false,$(GOFLAGS)) -trimpath -buildvcs=false)
TESTBIN := test/world/testbin.sh
CLUSTER := test/world/cluster.sh
FUZZTIME ?= 5s

.PHONY: all build demo test test-all test-matrix test-e2e test-e2e-matrix lint generate fuzz testbin testbin-cluster cluster-up cluster-down cluster-smoke clean bench-scale bench-throughput quiet-day-one

all: build

build: ## compile every package and binary
	@echo "==> go build ./..."
	$(GO) build ./...

# The container image (build/image/README.md): the chart's default image,
# $(IMAGE_REPOSITORY):$(IMAGE_TAG) (values.yaml image.repository, the chart's
# appVersion), built from Go modules without Docker or network as an OCI
# archive for `docker load -i` / `podman load -i`; the same sources give the
# same digest. The Containerfile builds it with Docker, with the same flags.
IMAGE_CHART := charts/node-rotation-controller
# The release version: the VERSION file (docs/releasing.md), which the
# chart's version and appVersion repeat (test/chart checks it); stamped into
# the binaries (internal/version) and the image's labels.
VERSION ?= $(shell cat VERSION)
VERSION_LDFLAG := -X github.com/noderotation/node-rotation-controller/internal/version.stamped=$(VERSION)
IMAGE_REPOSITORY ?= $(shell awk '/^image:/ {in_image=1; next} /^[^ #]/ {in_image=0} in_image && $$1 == "repository:" {print $$2; exit}' $(IMAGE_CHART)/values.yaml)
IMAGE_TAG ?= $(VERSION)
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
IMAGE_GOBUILD_FLAGS := -trimpath -buildvcs=false -ldflags "-s -w $(VERSION_LDFLAG)"
IMAGE_DIR := dist/image
IMAGE_ARCHIVE ?= dist/node-rotation-controller_$(IMAGE_TAG)_linux_$(IMAGE_ARCH).oci.tar

.PHONY: image
image: ## build the controller's image as an OCI archive in dist/ (no Docker, no network), print its digest, run its binary with -h and --version
	@echo "==> [$$(date +%T)] static controller binary for linux/$(IMAGE_ARCH)"
	@mkdir -p $(IMAGE_DIR)
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build $(IMAGE_GOBUILD_FLAGS) -o $(IMAGE_DIR)/node-rotation-controller ./cmd/node-rotation-controller
	@echo "==> [$$(date +%T)] image $(IMAGE_REPOSITORY):$(IMAGE_TAG) (module build/image)"
	cd build/image && $(GO) run . -binary $(CURDIR)/$(IMAGE_DIR)/node-rotation-controller \
	  -out $(CURDIR)/$(IMAGE_ARCHIVE) -repository $(IMAGE_REPOSITORY) -tag $(IMAGE_TAG) -version $(VERSION) \
	  -arch $(IMAGE_ARCH) -extract $(CURDIR)/$(IMAGE_DIR)/extracted/node-rotation-controller | tee $(CURDIR)/$(IMAGE_DIR)/build.txt
	@echo "==> [$$(date +%T)] the binary read back from the archive: node-rotation-controller -h, --version, and the pre-pull no-op it installs"
	@if [ "linux/$(IMAGE_ARCH)" != "$$($(GO) env GOHOSTOS)/$$($(GO) env GOHOSTARCH)" ]; then \
	  echo "skipped: a linux/$(IMAGE_ARCH) binary does not run on this host"; \
	else \
	  out=$$($(IMAGE_DIR)/extracted/node-rotation-controller -h 2>&1) || { echo "node-rotation-controller -h failed:"; echo "$$out"; exit 1; }; \
	  grep -q '^Usage: node-rotation-controller' <<<"$$out" || { echo "node-rotation-controller -h printed no usage:"; echo "$$out"; exit 1; }; \
	  echo "ok: $$(head -n1 <<<"$$out") ($$(wc -l <<<"$$out") lines, exit 0)"; \
	  v=$$($(IMAGE_DIR)/extracted/node-rotation-controller --version 2>&1) || { echo "node-rotation-controller --version failed: $$v"; exit 1; }; \
	  case "$$v" in "node-rotation-controller $(VERSION) ("*) echo "ok: $$v";; \
	    *) echo "node-rotation-controller --version printed \"$$v\", want node-rotation-controller $(VERSION) (…): the VERSION stamp did not reach the binary"; exit 1;; esac; \
	  noop=$(CURDIR)/$(IMAGE_DIR)/extracted/prepull/noop; rm -rf $$(dirname $$noop); mkdir -p $$(dirname $$noop); \
	  $(IMAGE_DIR)/extracted/node-rotation-controller prepull-install $$noop || { echo "node-rotation-controller prepull-install failed"; exit 1; }; \
	  out=$$(env -i $$noop prepull-noop 2>&1) && [ -z "$$out" ] || { echo "the installed no-op failed or spoke: $$out"; exit 1; }; \
	  echo "ok: prepull-install copied the binary ($$(stat -c '%a %s' $$noop)), and the copy ran prepull-noop with an empty environment: exit 0, no output"; \
	fi
	@echo "==> [$$(date +%T)] make image done"
	@grep -E '^(image digest|archive):' $(IMAGE_DIR)/build.txt

# Reproducibility, as the chart's users need it: the image built twice —
# the second time with every package recompiled (go build -a) into another
# directory — has the same digest.
IMAGE_REBUILD_DIR := dist/image-rebuild

# A proof holds for the inputs it was made from: the controller binary's Go
# action ID (a hash of every source file, flag and the toolchain that went
# into it) and the image builder's sources. Once a full recompile has given
# the same digest for them, it is recorded in REPRODUCIBLE_CACHE and not
# made again until an input changes (docs/test-world.md, "CI time").
REPRODUCIBLE_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/node-rotation-controller/reproducible

.PHONY: image-reproducible
image-reproducible: $(if $(IMAGE_BUILT),,image) ## build the image a second time from a full recompile and require the same digest (once per set of inputs)
	@key=$$($(GO) tool buildid $(IMAGE_DIR)/node-rotation-controller | cut -d/ -f1)-$$(find build/image -type f | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16); \
	  first=$$(grep '^image digest:' $(IMAGE_DIR)/build.txt); \
	  if [ -n "$$first" ] && [ "$$(cat $(REPRODUCIBLE_CACHE)/$$key 2>/dev/null)" = "$$first" ]; then \
	    echo "==> [$$(date +%T)] the image is reproducible: a full recompile of these inputs ($$key) gave $$first before"; exit 0; fi; \
	  $(MAKE) --no-print-directory image-rebuild && mkdir -p $(REPRODUCIBLE_CACHE) && echo "$$first" > $(REPRODUCIBLE_CACHE)/$$key

.PHONY: image-rebuild
image-rebuild:
	@echo "==> [$$(date +%T)] the image again, every package recompiled (go build -a)"
	@mkdir -p $(IMAGE_REBUILD_DIR)
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -a $(IMAGE_GOBUILD_FLAGS) -o $(IMAGE_REBUILD_DIR)/node-rotation-controller ./cmd/node-rotation-controller
	cd build/image && $(GO) run . -binary $(CURDIR)/$(IMAGE_REBUILD_DIR)/node-rotation-controller \
	  -out $(CURDIR)/$(IMAGE_REBUILD_DIR)/image.oci.tar -repository $(IMAGE_REPOSITORY) -tag $(IMAGE_TAG) -version $(VERSION) \
	  -arch $(IMAGE_ARCH) > $(CURDIR)/$(IMAGE_REBUILD_DIR)/build.txt
	@first=$$(grep '^image digest:' $(IMAGE_DIR)/build.txt); second=$$(grep '^image digest:' $(IMAGE_REBUILD_DIR)/build.txt); \
	  echo "first build:  $$first"; echo "second build: $$second"; \
	  if [ -z "$$first" ] || [ "$$first" != "$$second" ]; then echo "the image is not reproducible"; exit 1; fi; \
	  echo "ok: the same digest twice"

# A release (docs/releasing.md): everything a tag publishes, in
# RELEASE_DIR, offline once the module cache is filled, and reproducibly.
# The controller for each image platform and rotationctl for each archive
# platform are built with the
# image's flags (static, -trimpath, the VERSION stamp); build/release
# assembles them; its dist tests read the result back. The release's time
# (image creation, every archive entry) is SOURCE_DATE_EPOCH, by default
# the commit's.
RELEASE_DIR ?= dist/release
RELEASE_IMAGE_ARCHES := amd64 arm64
RELEASE_CLI_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)

.PHONY: release
release: ## the release in dist/release: multi-arch image index, rotationctl archives and checksums, chart with the digest pinned, CRDs, SBOMs, krew manifest, manifest.json
	@echo "==> [$$(date +%T)] release $(VERSION): binaries"
	@rm -rf $(RELEASE_DIR) && mkdir -p $(RELEASE_DIR)/bin
	@for arch in $(RELEASE_IMAGE_ARCHES); do \
	  echo "    node-rotation-controller linux/$$arch"; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build $(IMAGE_GOBUILD_FLAGS) -o $(RELEASE_DIR)/bin/linux_$$arch/node-rotation-controller ./cmd/node-rotation-controller || exit 1; \
	done
	@for p in $(RELEASE_CLI_PLATFORMS); do \
	  echo "    rotationctl $$p"; \
	  CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build $(IMAGE_GOBUILD_FLAGS) -o $(RELEASE_DIR)/bin/$${p%/*}_$${p#*/}/rotationctl ./cmd/rotationctl || exit 1; \
	done
	@echo "==> [$$(date +%T)] release $(VERSION): assembling (build/release)"
	cd build/release && SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run . -version $(VERSION) -dist $(CURDIR)/$(RELEASE_DIR) \
	  -repository $(IMAGE_REPOSITORY) -repo-root $(CURDIR)
	@echo "==> [$$(date +%T)] release $(VERSION): reading dist back (build/release dist tests)"
	cd build/release && NRC_RELEASE_DIST=$(CURDIR)/$(RELEASE_DIR) $(GO) test -count=1 -exec "env -u GOGC -u GOMEMLIMIT" -run '^TestDist' .

.PHONY: release-reproducible
release-reproducible: ## make release twice into two directories: the same manifest.json, digest for digest
	@$(MAKE) --no-print-directory release RELEASE_DIR=dist/release
	@$(MAKE) --no-print-directory release RELEASE_DIR=dist/release-again
	@if cmp -s dist/release/manifest.json dist/release-again/manifest.json; then \
	  echo "==> [$$(date +%T)] the release is reproducible: the same manifest.json twice ($$(grep -c '"sha256"' dist/release/manifest.json) artifacts, image index $$(sed -n 's/.*"index": "\(.*\)".*/\1/p' dist/release/manifest.json))"; \
	else echo "the release is not reproducible:"; diff dist/release/manifest.json dist/release-again/manifest.json; exit 1; fi

lint: ## gofmt + go vet + go mod tidy leaves no diff
	@echo "==> [$$(date +%T)] gofmt"
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@echo "==> [$$(date +%T)] go vet (each module once, with every build tag)"
	$(GO) vet -tags e2e,scale ./...
	cd test/promql && $(GO) vet ./...
	cd test/chart && $(GO) vet -tags e2e ./... && $(GO) mod tidy -diff
	cd build/image && $(GO) vet ./...
	cd build/release && $(GO) vet ./...
	@echo "==> [$$(date +%T)] go mod tidy -diff"
	$(GO) mod tidy -diff
	cd build/image && $(GO) mod tidy -diff
	cd build/release && $(GO) mod tidy -diff

testbin: ## build etcd + kube-apiserver for envtest (cached)
	@echo "==> [$$(date +%T)] test binaries for envtest"
	$(TESTBIN) envtest

testbin-cluster: ## build every binary the local cluster needs (cached)
	@echo "==> [$$(date +%T)] test binaries for the local cluster"
	$(TESTBIN) cluster

# go test's own vet is off (-vet=off): make lint's go vet ran every
# analyzer, a superset of go test's, over the same packages and their
# test files, each module with every build tag. The unit tests need no
# test binary, so they run before envtest's are built (make test-all
# builds those beside, make early-builds).
GOTEST := $(GO) test -count=1 -vet=off -exec "env -u GOGC -u GOMEMLIMIT"

test: lint ## unit + envtest + the CRD compatibility of every supported version + a short run of every fuzz target (CI runs test-all, which runs this first)
	@echo "==> [$$(date +%T)] unit and golden tests, no test binaries (everything outside test/)"
	env -u KUBEBUILDER_ASSETS $(GOTEST) $$($(GO) list ./... | grep -v '/test/')
	@$(MAKE) --no-print-directory testbin
	@echo "==> [$$(date +%T)] envtest and layering suites: go test ./test/... (envtest assets: $$($(TESTBIN) path))"
	KUBEBUILDER_ASSETS=$$($(TESTBIN) path) $(GOTEST) $$($(GO) list ./test/... | grep -v '/test/compat$$')
	@echo "==> [$$(date +%T)] CRD compatibility: the controller's reads and writes on the CRDs of every supported Karpenter version, and on the Kubernetes minimum where its control plane is built (test/compat)"
	KUBEBUILDER_ASSETS=$$($(TESTBIN) path) $(GOTEST) -v ./test/compat/
	@echo "==> [$$(date +%T)] PromQL of the chart's alerts and dashboard (module test/promql)"
	cd test/promql && $(GOTEST) ./...
	@echo "==> [$$(date +%T)] chart tests (module test/chart)"
	cd test/chart && KUBEBUILDER_ASSETS=$$($(CURDIR)/$(TESTBIN) path) $(GOTEST) ./...
	@echo "==> [$$(date +%T)] the image builder (module build/image)"
	cd build/image && $(GOTEST) ./...
	@echo "==> [$$(date +%T)] the release tool and workflow (module build/release; its dist tests run in make release)"
	cd build/release && env -u NRC_RELEASE_DIST $(GOTEST) ./...
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME)
	@echo "==> [$$(date +%T)] make test done"

# Every Fuzz target of every package, one at a time (go test runs one fuzz
# target per invocation). `make fuzz` runs them for FUZZTIME each.
fuzz: ## run each fuzz target for FUZZTIME (default 5s; try FUZZTIME=2m)
	@for dir in $$(grep -l '^func Fuzz' $$(git ls-files '*_test.go' 2>/dev/null || find . -name '*_test.go') | xargs -n1 dirname | sort -u); do \
	  for target in $$(grep -h '^func Fuzz' $$dir/*_test.go | sed 's/func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
	    echo "==> [$$(date +%T)] fuzz $$dir $$target for $(FUZZTIME)"; \
	    $(GO) test -exec "env -u GOGC -u GOMEMLIMIT" -run='^$$' -fuzz="^$$target$$" -fuzztime=$(FUZZTIME) ./$$dir || exit 1; \
	  done; \
	done

generate: ## regenerate CRDs, deepcopy and generated docs
	@echo "==> generate"
	$(GO) generate ./...

demo: testbin-cluster ## the main job: a local cluster with real Karpenter and the controller rotating nodes (Ctrl-C stops)
	@echo "==> demo"
	test/world/demo.sh

cluster-up: ## start the local e2e cluster (loopback only)
	@echo "==> cluster up"
	$(CLUSTER) up

cluster-down: ## stop the local e2e cluster by recorded PIDs
	@echo "==> cluster down"
	$(CLUSTER) down

cluster-smoke: ## prove the local cluster provisions, drains and surges
	@echo "==> cluster smoke"
	KUBECONFIG=$$($(CLUSTER) kubeconfig) $(GO) test -count=1 -exec "env -u GOGC -u GOMEMLIMIT" -v -tags e2e ./test/e2e/ -ginkgo.label-filter=smoke -ginkgo.v

# The suites on real Karpenter (test/world/suites.sh), each on its own
# local cluster whose nodes boot in NODE_BOOT_DELAY_MS, as a cloud's do (the
# extra-NodeClaim effect of docs/design.md#deviation-placeholder-first only
# shows with a delay), SUITE_CONCURRENCY clusters at once: the crash
# campaigns (one slot and several), the e2e matrix in four parts, the
# fault run and the chart-identity e2e (E2E_SUITES, the longest first),
# and the version matrix (KARPENTER_MATRIX, KUBERNETES_MATRIX), each running
# the controller binary taken out of the image `make image` builds.
NODE_BOOT_DELAY_MS ?= 8000
E2E_SUITES ?= crash-slots crash e2e.2 e2e.1 e2e.4 e2e.3 faults identity
SUITE_CONCURRENCY ?= 4
SUITES_ENV = NODE_BOOT_DELAY_MS=$(NODE_BOOT_DELAY_MS) SUITE_CONCURRENCY=$(SUITE_CONCURRENCY) KARPENTER_MATRIX="$(KARPENTER_MATRIX)" KUBERNETES_MATRIX="$(KUBERNETES_MATRIX)" \
  NRC_CONTROLLER_BIN=$(CURDIR)/$(IMAGE_DIR)/extracted/node-rotation-controller NRC_ROW_RESULTS=$(NRC_ROW_RESULTS)

# IMAGE_BUILT=1: the image of this checkout is built already;
# CLUSTER_BINS_BUILT=1: so are the cluster's binaries (both: test-all).
test-e2e: $(if $(CLUSTER_BINS_BUILT),,testbin-cluster) $(if $(IMAGE_BUILT),,image) ## every suite on real Karpenter: E2E_SUITES and each version of KARPENTER_MATRIX and KUBERNETES_MATRIX, a cluster each, SUITE_CONCURRENCY at once
	$(SUITES_ENV) test/world/suites.sh $(E2E_SUITES) $(MATRIX_JOBS)

# The fleet-scale benchmark (docs/performance.md, "Fleet scale"): its own
# local cluster (run directory /tmp/nrc-scale, ports no other cluster here
# uses, nodes Ready at once), SCALE_NODES NodeClaims and Nodes across
# SCALE_POOLS NodePools and SCALE_PODS Pods, the controller watching them
# under a closed window: memory, idle CPU and CPU per NodeClaim status
# update; then rotations on that fleet, one pool alone and then
# SCALE_ROTATE_POOLS pools at once (the per-rotation overhead over the
# provision+drain floor), printed as tables. A measurement, never part of
# test-all or CI. NRC_CONTROLLER_BIN names the binary to measure (default:
# built from the checkout); SCALE_PROFILE_DIR=dir also saves the
# controller's heap and CPU profiles there.
SCALE_NODES ?= 1000
SCALE_PODS ?= 10000
SCALE_POOLS ?= 20
SCALE_ROTATE_POOLS ?= 20

bench-scale: ## measure the controller's memory, CPU and rotation overhead at fleet scale on its own local cluster (about 17 minutes; not in test-all)
	@echo "==> [$$(date +%T)] fleet-scale benchmark: $(SCALE_NODES) nodes, $(SCALE_PODS) Pods, $(SCALE_POOLS) NodePools, $(SCALE_ROTATE_POOLS) pools rotating at once"
	$(GO) run -exec "env -u GOGC -u GOMEMLIMIT" -tags scale ./test/scale -nodes $(SCALE_NODES) -pods $(SCALE_PODS) -pools $(SCALE_POOLS) -rotate-pools $(SCALE_ROTATE_POOLS)

# The throughput benchmark (docs/performance.md, "Several rotations of a
# pool at once on real Karpenter"): on one local
# cluster with real Karpenter (8 s node boot), a twelve-node pool behind a
# PDB rotated whole one at a time, then four at a time; each phase's wall
# against the provision+drain floor, overhead, requests and CPU per
# rotation, as a table (also in $(BENCH_REPORT)). A measurement, never part
# of test-all or CI; the controller is built from the checkout unless
# NRC_CONTROLLER_BIN names one.
BENCH_REPORT ?= /tmp/node-rotation-controller/bench-throughput.md

bench-throughput: testbin-cluster ## measure whole-pool rotation time one at a time against four at a time on real Karpenter (about 10 minutes; not in test-all)
	NODE_BOOT_DELAY_MS=$(NODE_BOOT_DELAY_MS) NRC_BENCH_REPORT=$(BENCH_REPORT) test/world/suites.sh bench
	@cat $(BENCH_REPORT)

# Day one on real Karpenter (docs/test-world.md, "quiet"): a NodePool with
# Karpenter's defaults, the demo's workload and policy, watched ten minutes
# for a Warning Event from the controller. Not in test-all or CI (ten
# minutes); run it after a change to what the controller warns of.
quiet-day-one: testbin-cluster ## watch a default pool rotate under the demo policy for ten minutes: no Warning Event (about 13 minutes; not in test-all)
	NODE_BOOT_DELAY_MS=$(NODE_BOOT_DELAY_MS) test/world/suites.sh quiet

# The Karpenter versions besides the default that the e2e smoke and rotation
# run against, and the Kubernetes versions besides the shared control
# plane's (test/world/testbin.sh K8S_VERSION) they run on with the default
# Karpenter (README.md, "Supported versions"): the compatibility rows.
KARPENTER_MATRIX ?= 1.0.8 1.6.4 1.10.0 1.12.1 1.13.0 1.14.3
KUBERNETES_MATRIX ?= 1.30.14
ALL_ROWS = $(addprefix kubernetes:,$(KUBERNETES_MATRIX)) $(addprefix matrix:,$(KARPENTER_MATRIX))
# MATRIX_JOBS: the rows a run of make test-e2e runs (every row by default;
# make test-all passes the gate's: the bookend row and those whose inputs
# changed, test/world/proven.sh plan).
MATRIX_JOBS ?= $(ALL_ROWS)

test-e2e-matrix: testbin-cluster $(if $(IMAGE_BUILT),,image) ## only the e2e smoke and rotation on each Karpenter version of KARPENTER_MATRIX and each Kubernetes version of KUBERNETES_MATRIX (a cluster each, SUITE_CONCURRENCY at once); it records nothing: make test-matrix does
	$(SUITES_ENV) test/world/suites.sh $(ALL_ROWS)

# The per-submission gate (docs/test-world.md, "What each submission
# proves, what each release proves"): make test (with make early-builds
# beside it), the image, then every suite on the default Karpenter and the
# gate's rows. Which rows: test/world/proven.sh plan, printed first, with
# why each runs or is reused (proven by make test-matrix, inputs
# unchanged); when a row besides the bookend must run, it says so at once,
# with the make test-matrix that proves it once for every later run.
test-all: ## everything CI runs: make test (with make early-builds beside it), the image, then every suite on the default Karpenter and the gate's compatibility rows (make test-e2e)
	@start=$$(date +%s); plan=$$(test/world/proven.sh plan); \
	  rows=$$(awk '$$1 == "run" { printf "%s ", $$2 }' <<<"$$plan"); \
	  echo "==> [$$(date +%T)] compatibility rows: $$(grep -c '^run ' <<<"$$plan") to run, $$(grep -c '^reuse ' <<<"$$plan" || true) reused (test/world/proven.sh plan)"; \
	  sed 's/^/    /' <<<"$$plan"; \
	  extra=$$(grep '^run ' <<<"$$plan" | grep -vc 'the bookend row' || true); \
	  if [ "$$extra" -gt 0 ]; then \
	    echo "==> [$$(date +%T)] $$extra row(s) besides the bookend must run: each builds its own kwok provider or control plane (on a cold 2-core machine 4-8 minutes each, one at a time beside the suites; docs/test-world.md, \"CI time\")."; \
	    echo "    Run make test-matrix first and commit test/world/proven.yaml and README.md: the rows are then proven once and reused until their inputs change."; \
	  fi; \
	  log=$(CURDIR)/dist/early-builds.log; mkdir -p dist; \
	  echo "==> [$$(date +%T)] beside make test, at nice 19: make early-builds ROWS=\"$$rows\" (output: $$log)"; \
	  setsid test/world/niced.sh 19 $(MAKE) --no-print-directory early-builds ROWS="$$rows" >"$$log" 2>&1 & eb=$$!; \
	  trap 'kill -- -$$eb 2>/dev/null || true' EXIT; \
	  $(MAKE) --no-print-directory test || exit 1; \
	  ended="ended by itself"; if kill -- -$$eb 2>/dev/null; then ended="stopped as make test ended"; wait $$eb 2>/dev/null || true; fi; trap - EXIT; \
	  built=$$({ grep -a -o '[^ ]* [^ ]*: built in [0-9]*s' $$log || true; } | tr '\n' ',' | sed 's/,$$//;s/,/, /g'); \
	  echo "==> [$$(date +%T)] the builds beside make test ($$ended) built: $${built:-nothing}"; \
	  $(MAKE) --no-print-directory test-e2e MATRIX_JOBS="$$rows" && \
	  echo "==> [$$(date +%T)] make test-all done in $$(( $$(date +%s) - start ))s"

# The release gate (docs/releasing.md; the release workflow runs it before
# it pushes anything): every compatibility row on real Karpenter and,
# beside them, the image built twice to one digest and the release twice
# to one manifest; then the CRD compatibility check on the Kubernetes
# minimum's own API server, built by its row by then (test/compat); then
# test/world/proven.yaml records each row's result with the fingerprint of
# its inputs as the run began (a snapshot taken before anything is built:
# a row whose inputs changed while it ran is recorded not proven), and
# README.md's versions table is made from it. Commit both: the
# per-submission gate then reuses each passing row until its inputs
# change. PROVE names a subset (`make test-matrix PROVE=matrix:1.6.4`):
# the record keeps every other row as it was.
PROVE ?= $(ALL_ROWS)
.PHONY: proven-snapshot
proven-snapshot:
	@test -n "$(strip $(PROVE))" || { echo "make test-matrix: PROVE names no row (every row: $(strip $(ALL_ROWS)))" >&2; exit 2; }
	@mkdir -p dist && test/world/proven.sh snapshot >dist/proven-snapshot.txt
test-matrix: proven-snapshot testbin-cluster image ## the release gate: every compatibility row (KARPENTER_MATRIX, KUBERNETES_MATRIX; PROVE a subset) and the reproducibility builds; records each row in test/world/proven.yaml and README.md
	@results="$(CURDIR)/dist/row-results.txt"; rm -f "$$results"; rc=0; \
	  $(MAKE) --no-print-directory suites-beside-builds MATRIX_JOBS="$(PROVE)" E2E_SUITES= NRC_ROW_RESULTS="$$results" IMAGE_BUILT=1 || rc=$$?; \
	  echo "==> [$$(date +%T)] CRD compatibility on the Kubernetes minimum's API server (test/compat)"; \
	  NRC_COMPAT_REQUIRE_MINIMUM=$(if $(filter kubernetes:%,$(PROVE)),1,) KUBEBUILDER_ASSETS=$$($(TESTBIN) path) $(GOTEST) -v -run 'TestTheKubernetesMinimumServesTheController' ./test/compat/ || rc=$$?; \
	  if [ -s "$$results" ]; then \
	    mapfile -t r <"$$results"; test/world/proven.sh record --from dist/proven-snapshot.txt "$${r[@]}" || rc=$$?; \
	    test/world/proven.sh readme; \
	    echo "==> [$$(date +%T)] recorded in test/world/proven.yaml and README.md's versions table:"; sed 's/^/    /' "$$results"; \
	  fi; \
	  exit $$rc

# early-builds: what make test-all builds beside make test, at nice 19, so
# that it takes only the CPU make test leaves idle (module downloads,
# envtest suites waiting on their API servers, one link at a time): the
# cluster's binaries (envtest's first), then those of the gate's rows
# (ROWS: the bookend's kwok provider, and any row whose inputs changed), in
# the order the run needs them. On a warm machine each is cached and this
# ends within seconds; on a cold one it does early what would otherwise be
# built after make test (docs/test-world.md, "CI time"). test-all stops it
# when make test ends: what it had compiled stays in the Go build cache,
# what it had not is built where it was before (testbin.sh's locks keep
# two runs from building one binary at once), and a failure here is left
# for that later build to report.
ROWS ?=
.PHONY: early-builds
early-builds: ## what test-all builds beside make test, niced: the test world's binaries and those of ROWS (cached ones cost nothing)
	-$(TESTBIN) envtest
	-$(TESTBIN) cluster
	-@for r in $(ROWS); do case $$r in matrix:*) $(TESTBIN) karpenter $${r#matrix:};; kubernetes:*) $(TESTBIN) kubernetes $${r#kubernetes:};; esac; done

# suites-beside-builds: the image, then the suites (make test-e2e) and, at
# the same time, at nice 15 (test/world/niced.sh: its session's autogroup
# too), the image's and the release's reproducibility builds — CPU the
# suites, which mostly wait on boot delays and Karpenter's batch window,
# leave idle (docs/test-world.md, "CI time"); make test-matrix runs it.
# They start once the
# cluster's binaries are built (every cluster waits for those), never
# touch the image's binary the suites run, and run in a session of their
# own, so an interrupted run stops them too. Their stage lines follow the
# suites' table (their whole log when they failed); either failing fails
# the target.
.PHONY: suites-beside-builds
suites-beside-builds: $(if $(IMAGE_BUILT),,image) testbin-cluster
	@log=$(CURDIR)/dist/beside-suites.log; mkdir -p dist; rm -f $$log.rc; t0=$$(date +%s); \
	  echo "==> [$$(date +%T)] beside the suites, niced: make image-reproducible release-reproducible (output: $$log)"; \
	  setsid test/world/niced.sh 15 bash -c 'r=0; $(MAKE) --no-print-directory image-reproducible release-reproducible IMAGE_BUILT=1 >"$$1" 2>&1 || r=$$?; \
	    echo "$$r $$(( $$(date +%s) - $$2 ))" >"$$1.rc"' _ "$$log" "$$t0" & bg=$$!; \
	  trap 'kill -- -$$bg 2>/dev/null || true' EXIT; \
	  rc=0; $(MAKE) --no-print-directory test-e2e IMAGE_BUILT=1 CLUSTER_BINS_BUILT=1 || rc=$$?; \
	  kill -0 $$bg 2>/dev/null && echo "==> [$$(date +%T)] waiting for the reproducibility builds"; \
	  wait $$bg || true; read -r brc bsecs <$$log.rc || { brc=1; bsecs=?; }; \
	  echo "==> [$$(date +%T)] the reproducibility builds beside the suites took $${bsecs}s (rc $$brc):"; \
	  if [ "$$brc" = 0 ]; then grep -a '^==> ' $$log | sed 's/^/    | /'; else sed 's/^/    | /' $$log; fi; \
	  [ "$$rc" = 0 ] && [ "$$brc" = 0 ]

clean: ## stop the cluster; the binary cache is kept
	$(CLUSTER) down
