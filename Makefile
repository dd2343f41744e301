# The two commands a newcomer needs: `make run` and `make test` (README.md).
GO ?= go
# pebblegozstd: Pebble's pure-Go zstd instead of compiling the cgo one (saves a minute per cold build).
# duckdb_arrow: duckdb-go's Arrow support, through which the consumer appends event batches.
export GOFLAGS := -tags=pebblegozstd,duckdb_arrow -buildvcs=false
BIN := bin/flipbook

.PHONY: all build run test lint bench clean deps test-deps fuzz fuzz-short

all: build

# Says what it does on a first build (module downloads, then the packages it compiles).
build:
	@GO=$(GO) scripts/gobuild.sh build $(BIN) ./cmd/flipbook

# The Debian packages conversion needs (poppler-utils, LibreOffice, fonts): installed when missing
# if this runs as root (or with password-less sudo), else the one apt-get line to run is printed.
# The list is in scripts/deps.sh (also used by test-deps and .ci/run).
deps:
	@scripts/deps.sh run

# deps plus what the tests need: Chromium for the browser tests, and the third-party clients the
# tests drive (clients/package.json: the MCP TypeScript SDK, the MCP conformance suite, the MCP
# Inspector, Node 22), installed from the lockfile with npm ci when it changed.
test-deps:
	@scripts/deps.sh test
	@scripts/clients.sh

# Starts the service on embedded defaults (127.0.0.1:8080, data in ./data). Extra flags: make run ARGS='--addr :9090'
run: deps build
	./$(BIN) serve $(ARGS)

# The code's checks, as tests (internal/lint): gofmt, go vet, staticcheck, the import layering of
# docs/ARCHITECTURE.md, no fixed sleeps in tests, no package variables set by tests, the code
# figures' ratchets. `make test` runs them with everything else.
lint:
	@GO=$(GO) scripts/gobuild.sh fetch ./...
	$(GO) test -count=1 ./internal/lint

# Every test, with the race detector (internal/lint among them).
test: test-deps
	@GO=$(GO) scripts/gobuild.sh fetch ./...
	@echo "==> go test -race ./... (the first run compiles every package with the race detector: several minutes)"
	$(GO) test -race -count=1 -timeout 30m ./...
	@echo "==> fuzzing each decoder that faces the network for 3 s (make fuzz runs them longer)"
	@$(MAKE) --no-print-directory fuzz FUZZTIME=3s FUZZMINTIME=1s

# Fuzz tests of the decoders that face the network (issue 27): each target in turn for FUZZTIME
# (Go fuzzes one target per run). A failing input is written to <package>/testdata/fuzz/<target>/,
# where `go test` runs it again until the bug is fixed. make fuzz FUZZTIME=10m; make fuzz-short.
FUZZTIME ?= 60s
# A new input is minimised for at most this long (Go's default, 60 s, would take most of a short
# run on a loaded 2-core machine).
FUZZMINTIME ?= 5s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzTextRules$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) ./api
	$(GO) test -run '^$$' -fuzz '^FuzzDomainRules$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) ./api
	$(GO) test -run '^$$' -fuzz '^FuzzRESTValidation$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) ./httpapi
	$(GO) test -run '^$$' -fuzz '^FuzzCursorCodec$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) ./httpapi
	$(GO) test -run '^$$' -fuzz '^FuzzCursorPayloads$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) ./httpapi
	$(GO) test -run '^$$' -fuzz '^FuzzListCursor$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) ./httpapi
	$(GO) test -run '^$$' -fuzz '^FuzzCollectFastPath$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) ./httpapi
	$(GO) test -run '^$$' -fuzz '^FuzzCollector$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) ./httpapi
	$(GO) test -run '^$$' -fuzz '^FuzzMultipartUpload$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) ./httpapi
	$(GO) test -run '^$$' -fuzz '^FuzzBodyFraming$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) ./httpapi
	$(GO) test -run '^$$' -fuzz '^FuzzMCPEndpoint$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) ./httpapi
	$(GO) test -run '^$$' -fuzz '^FuzzWebhookSubscription$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) ./httpapi
	$(GO) test -run '^$$' -fuzz '^FuzzOAuthEndpoints$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) ./httpapi

# Every fuzz target for 5 s (a smoke run: most of it is the first build and the corpus).
fuzz-short:
	$(MAKE) fuzz FUZZTIME=5s FUZZMINTIME=2s

# Benchmark scenarios (bench/): figures are ratios against a baseline measured in the same run.
# The ingest scenario runs 10 minutes by default (-duration overrides it for every scenario).
# make bench BENCH_SCENARIOS=ingest BENCH_ARGS='-duration 2m' (or BENCH_ARGS='-scenario rest')
BENCH_SCENARIOS ?= rest,mcp,convert,ingest,analytics,webhooks,catalog,hostile,cluster,viewer
bench: build
	./$(BIN) bench -scenario $(BENCH_SCENARIOS) $(BENCH_ARGS)

clean:
	rm -rf bin
