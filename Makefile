# nats-version-auditor. `make demo` shows the problem; `make test` is what CI runs.

GO          ?= go
BIN         := bin/nats-version-auditor
# The release is the VERSION file's, the one source of truth of the image tag,
# the chart's appVersion and deploy/'s manifests too (TestOneVersion holds them
# to it); the revision is the commit, -dirty when the tree differs from it.
VERSION     := $(shell cat VERSION)
REVISION    ?= $(shell git describe --always --dirty --abbrev=40 --exclude='*' 2>/dev/null || echo unknown)
VERSION_PKG := github.com/prometheus/common/version
LDFLAGS     := -s -w -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Revision=$(REVISION)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

TOOLS_BIN   := $(CURDIR)/.cache/tools/bin
HELM        := $(TOOLS_BIN)/helm
PROMTOOL    := $(TOOLS_BIN)/promtool
PROMETHEUS  := $(TOOLS_BIN)/prometheus
NATSCLI     := $(TOOLS_BIN)/nats
# The raw fetch that checks its replies, the floor `make bench` measures.
VALIDFETCH  := $(CURDIR)/.cache/bench/validfetch

# A count, not a duration: in Go 1.26 a duration -fuzztime can fail at its
# deadline with "context deadline exceeded" and no crasher (golang/go#75804).
FUZZTIME    ?= 50000x
# Each target as package:name, run in the package it lives in.
FUZZ_TARGETS := ./auditor/collect:FuzzStatsz ./auditor/collect:FuzzLeafz ./auditor/collect:FuzzJSZ \
	./auditor/collect/internal/jsonscan:FuzzSkipMatchesValid ./auditor/version:FuzzParseVersion

SOAK        ?= 10m

.PHONY: all build servers tools demo test lint unit fuzz fuzz-seeds bench bench-continuous bench-freshness bench-pulls soak stress generate clean

all: build

# The Dockerfile runs exactly this target's command.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/nats-version-auditor

# Builds (once, into .cache/nats-server) every nats-server version the tests run.
servers:
	$(GO) run ./internal/natstest/servers

# helm, promtool and prometheus for the deploy/ tests, built from the module proxy once.
# prometheus runs the shipped rules against real auditors (no UI assets: its API is enough).
tools: $(HELM) $(PROMTOOL) $(PROMETHEUS)

$(HELM):
	GOBIN=$(TOOLS_BIN) $(GO) install helm.sh/helm/v3/cmd/helm@v3.22.0

$(PROMTOOL):
	GOBIN=$(TOOLS_BIN) $(GO) install github.com/prometheus/prometheus/cmd/promtool@v0.316.0

$(PROMETHEUS):
	GOBIN=$(TOOLS_BIN) $(GO) install github.com/prometheus/prometheus/cmd/prometheus@v0.316.0

$(NATSCLI):
	GOBIN=$(TOOLS_BIN) $(GO) install github.com/nats-io/natscli/nats@v0.5.0

# Side-by-side measurements on a real mixed cluster (about 12 to 17 minutes once
# the servers are built, as BENCHMARKS.md measured; with 100,000 consumers when
# the machine has the memory); writes the results into BENCHMARKS.md. Not part
# of `make test`.
bench: servers build $(NATSCLI)
	$(GO) build -o $(VALIDFETCH) ./internal/bench/validfetch
	$(GO) test -run '^$$' -bench . -benchmem ./auditor ./metrics ./cmd/nats-version-auditor/internal/render | tee .cache/gobench.txt
	$(GO) run ./internal/bench -auditor $(BIN) -natscli $(NATSCLI) -validfetch $(VALIDFETCH) -gobench .cache/gobench.txt -out BENCHMARKS.md
	$(GO) run ./internal/bench -freshness -auditor $(BIN) -out BENCHMARKS.md
	$(GO) run ./internal/bench -continuous -auditor $(BIN) -out BENCHMARKS.md
	$(GO) run ./internal/bench -continuous -continuous-shards 10 -auditor $(BIN) -out BENCHMARKS.md

# Only what `serve` scraped every 15 s costs the servers, today's design
# against its defaults, at 10k, 30k and 100k consumers, then the same with
# ten shards besides (BENCHMARKS.md).
bench-continuous: servers build
	$(GO) run ./internal/bench -continuous -auditor $(BIN) -out BENCHMARKS.md
	$(GO) run ./internal/bench -continuous -continuous-shards 10 -auditor $(BIN) -out BENCHMARKS.md

# Only the freshness measurement of BENCHMARKS.md (about 6 minutes).
bench-freshness: servers build
	$(GO) run ./internal/bench -freshness -auditor $(BIN) -out BENCHMARKS.md

# The pull watch (docs/pulls.md): a puller across leader elections with and
# without it, then its cost at 10,000 pinned consumers, the servers' and the
# auditor's (about 4 minutes, then 8 to 22). Prints the tables BENCHMARKS.md's two
# pull-watch sections quote, to .cache/bench/. Not part of `make test`.
bench-pulls: servers build
	@mkdir -p .cache/bench
	$(GO) run ./internal/bench/pullelection | tee .cache/bench/pullelection.txt
	$(GO) run ./internal/bench/pullcost -auditor $(BIN) | tee .cache/bench/pullcost.txt

# serve under continuous scraping while servers restart and leaders move;
# fails if goroutines, heap or open fds grow. Not part of `make test`.
soak: servers build
	$(GO) run ./internal/soak -auditor $(BIN) -duration $(SOAK)

demo: build
	$(GO) run ./internal/natstest/servers v2.14.0 v2.12.15
	$(GO) run ./internal/demo -auditor $(BIN)

test: lint unit fuzz

# The Go client is a module of its own: ./... stops at its go.mod, so each
# target that checks the code runs in it too.
CLIENT_MODULE := auditor/client

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change: $$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) -C $(CLIENT_MODULE) vet ./...
	$(GO) -C $(CLIENT_MODULE) run $(STATICCHECK) ./...

unit: servers build tools
	TOOLS_BIN=$(TOOLS_BIN) $(GO) test -race -count=1 -timeout 30m ./...
	$(GO) -C $(CLIENT_MODULE) test -race -count=1 ./...

# Each fuzz target for $(FUZZTIME) inputs (10-20 s each here), from the committed
# seeds of real replies.
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t#*:}; \
		echo "fuzz $$name in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) -timeout 5m $$pkg || exit 1; \
	done

# Re-records the fuzz seeds from real servers of every version the tests run.
fuzz-seeds: servers
	$(GO) run ./internal/recordseeds auditor/collect/testdata/fuzz

# Rewrites the generated files under deploy/ (alert rules and their copies,
# the Grafana dashboard); the deploy tests fail when they are out of date.
generate:
	$(GO) generate ./deploy/...

clean:
	rm -rf bin .cache

# Every fault test STRESS_RUNS times beside a CPU burner on each core (as on a
# CI machine shared with other jobs): runs and failures per test, and fails
# if an audit ever exited 0 while a server was down. Not part of `make test`.
STRESS_RUNS ?= 20
stress: servers
	$(GO) run ./internal/stress -runs $(STRESS_RUNS)
