# umtrace. `make test` is the test command CI runs (.ci/run).
GO ?= go
BIN ?= bin/umtrace

.PHONY: all build test vet bench demo clean fuzz

all: build

build:
	$(GO) build -o $(BIN) ./cmd/umtrace

# Runs the main job on the bundled storm trace: the terminal report, then
# the same analysis as HTML in bin/demo.html.
demo: build
	$(BIN) analyze testdata/traces/um_pingpong_default.sqlite
	$(BIN) analyze testdata/traces/um_pingpong_default.sqlite -o $(dir $(BIN))demo.html
	@echo "wrote $(dir $(BIN))demo.html; next: $(BIN) help"

vet:
	$(GO) vet ./...

# Tests that need ../shared (or $$UMTRACE_SHARED) skip when it is absent;
# each skip is logged (ingest/testshared) and one line at the end counts them.
test: vet
	@log=$$(mktemp); echo "$(GO) test -race -count=1 -timeout 30m ./..."; \
	UMTRACE_SKIPLOG=$$log $(GO) test -race -count=1 -timeout 30m ./...; rc=$$?; \
	if [ -s $$log ]; then \
		echo "umtrace: shared material absent ($$(head -n1 $$log | cut -f3)): $$(wc -l < $$log) tests in $$(cut -f1 $$log | sort -u | wc -l) packages skipped"; \
	fi; rm -f $$log; exit $$rc

# Prints the performance table (see docs/performance.md).
bench: build
	./scripts/bench.sh

clean:
	rm -rf bin

# Runs every fuzz target (every func FuzzXxx in a _test.go file, found by
# grep, so a new one is included) for FUZZTIME each; CI runs it with 30s
# after make test. A failing input is written to the package's
# testdata/fuzz/FuzzXxx/ (commit it: it then runs in make test).
# New inputs are minimized for at most FUZZMINTIME (Go's default, 60s, is
# a whole CI run; the exec counter shows 0/sec meanwhile, golang/go#51484).
# scripts/fuzz.sh tells Go's coordinator race at the end of a window
# (a bare "context deadline exceeded", go.dev/issue/75804) from a finding.
FUZZTIME ?= 30s
FUZZMINTIME ?= 5s
FUZZTIMEOUT ?= 10m
fuzz:
	@GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMINTIME=$(FUZZMINTIME) FUZZTIMEOUT=$(FUZZTIMEOUT) ./scripts/fuzz.sh
