# minibroker: the two README commands are `make run` and `make test`.

GO        ?= go
FUZZTIME  ?= 60s
DATA_DIR  ?= ./minibroker-data
LISTEN    ?= 127.0.0.1:9092
ADMIN     ?= 127.0.0.1:9644
# BIN is where make build puts the binaries.
BIN       ?= bin
# TOPICS are created at start unless they exist: make run TOPICS="orders:4 audit:1".
TOPICS    ?= orders:4 payments:1
COVER_MIN ?= 90
# Packages whose statement coverage make test holds at COVER_MIN percent.
COVER_PKGS = assignor coordinator offsets

.PHONY: all test fmt-check vet boundaries chromium kcat kafkajs unit run build bench fuzz lab compare cover clean reset

all: build

## test: the whole gate CI runs: format, vet, boundaries, race tests, coverage floor.
test: fmt-check vet boundaries unit

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

boundaries:
	@./scripts/boundaries.sh

## chromium: install Debian's chromium for the admin page's browser test, if missing.
chromium:
	@./scripts/chromium.sh

## kcat: install Debian's kcat for the real-client tests, if missing.
kcat:
	@./scripts/kcat.sh

## kafkajs: install kafkajs from the npm registry into .cache/kafkajs for the
## real-client tests, if missing (needs node and npm; without node they skip).
kafkajs:
	@./scripts/kafkajs.sh

unit: chromium kcat kafkajs
	@mkdir -p .cache
	$(GO) test -race -count=1 -cover ./... 2>&1 | tee .cache/test.out
	@./scripts/cover-floor.sh .cache/test.out $(COVER_MIN) $(COVER_PKGS)
	@# It measures allocations, which the race detector changes.
	$(GO) test -count=1 -run '^TestRequestBoundsHoldHostileShapes$$' ./server/
	@# The embedding example is a module of its own: it sees only the public API.
	cd examples/embedded && $(GO) test -race -count=1 ./...

## run: build, then start the broker with $(TOPICS) on $(LISTEN), the admin
## API and live page on $(ADMIN). The binary runs in the foreground, so
## Ctrl-C stops it cleanly (exit 0).
run: build
	$(BIN)/minibroker serve --listen $(LISTEN) --admin $(ADMIN) --data-dir $(DATA_DIR) \
		$(foreach t,$(TOPICS),--topic $(t))

## build: the minibroker binary, and minicompare beside it.
build:
	$(GO) build -o $(BIN)/minibroker ./cmd/minibroker
	$(GO) build -o $(BIN)/minicompare ./cmd/minicompare

## bench: the Go benchmarks (assignor, coordinator, offsets store, records,
## server, ...), then the load generator: every scenario against minibroker,
## kfake, kfake with fsync and the floor server, as child processes, the
## records scenarios through a kgo client; the tables on stdout and in
## $(BENCH_OUT) (docs/performance.md explains them; about 7 minutes).
## BENCH_FLAGS adds "minibench run" flags, e.g. BENCH_FLAGS='-only hb -rounds 5'
## or BENCH_FLAGS='-only produce'.
BENCH_OUT   ?= .cache/bench/report.md
BENCH_FLAGS ?=
bench: build
	@mkdir -p .cache/bench
	$(GO) test -run '^$$' -bench . -benchmem ./...
	$(GO) build -o .cache/bench/minibench ./cmd/minibench
	@echo "load average: $$(cut -d' ' -f1-3 /proc/loadavg)"
	.cache/bench/minibench run -minibroker $(BIN)/minibroker -work-dir .cache/bench -out $(BENCH_OUT) $(BENCH_FLAGS)
	@echo "load average at the end: $$(cut -d' ' -f1-3 /proc/loadavg)"

## fuzz: run every fuzz target in turn for FUZZTIME each (make fuzz
## FUZZTIME=60s); scripts/fuzz.sh --list names them.
fuzz:
	@./scripts/fuzz.sh $(FUZZTIME)

## lab: every lab of the chapter, against an in-process broker: the classic
## protocol's, then the consumer protocol's (KIP-848), then the record labs
## (exercise 1's replay, the zombie's commit with and without the fence, and
## a zombie made by a fault on its heartbeats, and the zombie with output, at
## least once and exactly once), then member identity (a static member's
## restart and its fenced zombie).
lab: build
	$(BIN)/minibroker lab rebalance
	$(BIN)/minibroker lab fencing
	$(BIN)/minibroker lab expiry
	$(BIN)/minibroker lab rebalance-848
	$(BIN)/minibroker lab fencing-848
	$(BIN)/minibroker lab replay
	$(BIN)/minibroker lab zombie
	$(BIN)/minibroker lab exactly-once
	$(BIN)/minibroker lab partition
	$(BIN)/minibroker lab identity

## compare: the scenarios against minibroker and kfake side by side.
compare: build
	$(BIN)/minicompare

cover:
	@mkdir -p .cache
	$(GO) test -race -coverprofile=.cache/cover.out ./...
	$(GO) tool cover -func=.cache/cover.out | tail -1

## clean: the binaries and caches; the data dir stays (make reset removes it).
clean:
	rm -rf bin .cache

## reset: start over: remove $(DATA_DIR), with every committed offset, topic
## and record make run kept. A data dir a running broker holds is left alone.
reset:
	@if [ -e "$(DATA_DIR)/.lock" ] && command -v flock >/dev/null && ! flock -n "$(DATA_DIR)/.lock" true; then \
		echo "make reset: a running broker holds $(DATA_DIR); stop it (Ctrl-C make run) first" >&2; exit 1; fi
	rm -rf "$(DATA_DIR)"
