# modwright: build, test, benchmark.
GO        ?= go
FUZZTIME  ?= 20s
BENCHTIME ?= 2s
BENCHCOUNT ?= 6
BENCHFLAGS ?=

.PHONY: all build test lint unit tools generate fuzz bench bench-micro clean

# Pinned tools (helm, controller-gen) built into .cache/tools/bin by
# hack/tools.sh; tests find them on PATH. MODWRIGHT_REQUIRE_TOOLS=1 makes a
# test that needs a missing tool fail instead of skipping.
TOOLS_BIN := $(CURDIR)/.cache/tools/bin
export PATH := $(TOOLS_BIN):$(PATH)

all: build

build:
	$(GO) build -o bin/modwright ./cmd/modwright

# The test command (README, CI): formatting, vet, every unit test, the KubeMod
# conformance cases, the testdata corpus, the examples, and the fuzz seeds.
test: lint tools unit

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

unit:
	MODWRIGHT_REQUIRE_TOOLS=1 $(GO) test -count=1 ./...

tools:
	hack/tools.sh >/dev/null

# Regenerate the CRD from api/v1beta1 (deploy/crds, and the Helm chart's
# copy). TestGeneratedCRD fails when the committed files are stale.
generate:
	hack/tools.sh controller-gen >/dev/null
	controller-gen crd:crdVersions=v1 paths=./api/... output:crd:dir=deploy/crds
	mkdir -p deploy/helm/modwright/crds
	cp deploy/crds/api.kubemod.io_modrules.yaml deploy/helm/modwright/crds/

# Short fuzzing runs of every fuzz target (not part of make test).
fuzz:
	$(GO) test ./internal/jsonpath -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/jsonpath -run '^$$' -fuzz '^FuzzEvaluate$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/patch -run '^$$' -fuzz '^FuzzApply$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/patch -run '^$$' -fuzz '^FuzzDiff$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/template -run '^$$' -fuzz '^FuzzParseValue$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/engine -run '^$$' -fuzz '^FuzzEngine$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/value -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/value -run '^$$' -fuzz '^FuzzObjectMembers$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/webhook -run '^$$' -fuzz '^FuzzDecodeReview$$' -fuzztime $(FUZZTIME)

# The benchmark harness (BENCHMARKS.md): engine and handler micro-benchmarks,
# then load tests of `modwright serve --standalone` and of the floor server
# over HTTPS/HTTP2; prints one table. BENCHFLAGS=-quick for a smoke run.
bench:
	$(GO) run ./test/load/cmd/bench $(BENCHFLAGS)

# Only the Go micro-benchmarks.
bench-micro:
	$(GO) test ./internal/engine ./internal/webhook ./internal/value -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count $(BENCHCOUNT)

clean:
	rm -rf bin
