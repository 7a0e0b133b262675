# node-rotation-controller — build, test and the local test world.
# Every target prints what it does; the test binaries are built from Go
# modules into a cache outside the repository (test/world/testbin.sh).

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
GO ?= go
TESTBIN := test/world/testbin.sh
CLUSTER := test/world/cluster.sh
FUZZTIME ?= 5s

.PHONY: all build demo test test-e2e lint generate fuzz testbin testbin-cluster cluster-up cluster-down cluster-smoke clean

all: build

build: ## compile every package and binary
	@echo "==> go build ./..."
	$(GO) build ./...

lint: ## gofmt + go vet + go mod tidy leaves no diff
	@echo "==> [$$(date +%T)] gofmt"
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@echo "==> [$$(date +%T)] go vet"
	$(GO) vet ./...
	$(GO) vet -tags e2e ./test/e2e/...
	cd test/promql && $(GO) vet ./...
	@echo "==> [$$(date +%T)] go mod tidy -diff"
	$(GO) mod tidy -diff

testbin: ## build etcd + kube-apiserver for envtest (cached)
	@echo "==> [$$(date +%T)] test binaries for envtest"
	$(TESTBIN) envtest

testbin-cluster: ## build every binary the local cluster needs (cached)
	@echo "==> test binaries for the local cluster"
	$(TESTBIN) cluster

test: lint testbin ## unit + envtest + a short run of every fuzz target (the command CI runs)
	@echo "==> [$$(date +%T)] unit and golden tests, no test binaries (everything outside test/)"
	env -u KUBEBUILDER_ASSETS $(GO) test -count=1 $$($(GO) list ./... | grep -v '/test/')
	@echo "==> [$$(date +%T)] envtest and layering suites: go test ./test/... (envtest assets: $$($(TESTBIN) path))"
	KUBEBUILDER_ASSETS=$$($(TESTBIN) path) $(GO) test -count=1 ./test/...
	@echo "==> [$$(date +%T)] PromQL of the chart's alerts and dashboard (module test/promql)"
	cd test/promql && $(GO) test -count=1 ./...
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME)
	@echo "==> [$$(date +%T)] make test done"

# Every Fuzz target of every package, one at a time (go test runs one fuzz
# target per invocation). `make fuzz` runs them for FUZZTIME each.
fuzz: ## run each fuzz target for FUZZTIME (default 5s; try FUZZTIME=2m)
	@for dir in $$(grep -l '^func Fuzz' $$(git ls-files '*_test.go' 2>/dev/null || find . -name '*_test.go') | xargs -n1 dirname | sort -u); do \
	  for target in $$(grep -h '^func Fuzz' $$dir/*_test.go | sed 's/func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
	    echo "==> fuzz $$dir $$target for $(FUZZTIME)"; \
	    $(GO) test -run='^$$' -fuzz="^$$target$$" -fuzztime=$(FUZZTIME) ./$$dir || exit 1; \
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
	KUBECONFIG=$$($(CLUSTER) kubeconfig) $(GO) test -count=1 -v -tags e2e ./test/e2e/ -ginkgo.label-filter=smoke -ginkgo.v

# The e2e cluster boots nodes with a delay (kwok's node-initialize stage), as
# a cloud does: the extra-NodeClaim effect of docs/design.md#deviation-placeholder-first
# only shows with one.
NODE_BOOT_DELAY_MS ?= 4000

test-e2e: testbin-cluster ## bring the cluster up (with a node boot delay), run the e2e suite, bring it down
	@echo "==> e2e (node boot delay $(NODE_BOOT_DELAY_MS)ms)"
	$(CLUSTER) down >/dev/null 2>&1 || true
	NODE_BOOT_DELAY_MS=$(NODE_BOOT_DELAY_MS) $(CLUSTER) up
	rc=0; KUBECONFIG=$$($(CLUSTER) kubeconfig) $(GO) test -count=1 -v -timeout 30m -tags e2e ./test/e2e/ -ginkgo.v || rc=$$?; \
	  $(CLUSTER) down; exit $$rc

clean: ## stop the cluster; the binary cache is kept
	$(CLUSTER) down
