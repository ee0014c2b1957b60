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

test: vet
	$(GO) test -race -count=1 ./...

# Prints the performance table (see docs/performance.md).
bench: build
	./scripts/bench.sh

clean:
	rm -rf bin

# Runs every fuzz target for FUZZTIME each (CI: 30s each after make test).
FUZZTIME ?= 30s
FUZZ_TARGETS = ./ingest/sanitizer:FuzzText ./ingest/sanitizer:FuzzXML \
	./ingest/nsys/internal/sqlitefile:FuzzCursor ./ingest/nsys/internal/sqlitefile:FuzzDifferential
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzz $$fn in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	done
