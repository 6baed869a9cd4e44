# feedsub — every target installs what is missing first, so a fresh clone needs only Node.js >= 20.19 and make.
.PHONY: deps serve wait test lint format typecheck bench bench-scale bench-cluster bench-rss2email build clean

NPM ?= npm
TSX := node_modules/.bin/tsx

# node_modules is (re)installed when package.json, the lockfile or a patch of a dependency (patches/, applied by npm
# ci's postinstall) changes. A line before and one after: on a fresh clone npm ci takes a minute or more, and without a
# terminal it prints nothing until it is done.
node_modules/.feedsub-installed: package.json package-lock.json $(wildcard patches/*.patch)
	@echo "make: installing dependencies (npm ci; a minute or more on a fresh clone) ..."
	@started=$$(date +%s) && $(NPM) ci --no-audit --no-fund && \
	  echo "make: dependencies installed in $$(( $$(date +%s) - started )) s"
	@touch $@

deps: node_modules/.feedsub-installed

# node --import tsx keeps the server in this one process, so Ctrl-C or SIGTERM reaches it directly and it stops
# gracefully (the tsx command relays signals to a child and SIGKILLs it if it does not answer within 30 ms).
# The heap flags of server.heap_limit_mb's default (512; src/heap.ts heapFlags): Node 20 cannot restart itself with
# them, so they are given here (a test checks they match). With another server.heap_limit_mb in your config, run
# `make serve HEAP_FLAGS=...` with the flags feedsub's warning names, or use Node.js >= 22.15, which restarts in place.
# MALLOC_ARENA_MAX: glibc's malloc arenas, capped as the restart does (src/heap.ts MALLOC_ARENA_MAX); exported rather
# than prefixed to the command, which would put a shell between make and node.
HEAP_FLAGS ?= --max-old-space-size=512 --max-semi-space-size=4
serve: export MALLOC_ARENA_MAX ?= 2
serve: deps
	node $(HEAP_FLAGS) --import tsx src/main.ts serve

# Blocks until the daemon answers /healthz (the walkthrough's second step, after `make serve &`), at most WAIT_SECONDS.
# It installs nothing, so it never races the install that `make serve` may be running.
FEEDSUB_URL ?= http://127.0.0.1:$(or $(FEEDSUB_SERVER_PORT),8080)
WAIT_SECONDS ?= 300
wait:
	@sh scripts/wait-healthy.sh "$(FEEDSUB_URL)/healthz" "$(WAIT_SECONDS)"

# The lint step (format check + type check) runs first: a tree that does not type-check is not tested.
test: deps
	bash scripts/test-setup.sh
	$(NPM) run --silent lint
	$(NPM) test

lint: deps
	$(NPM) run --silent lint

format: deps
	$(NPM) run --silent format

typecheck: deps
	$(TSX) scripts/typecheck.ts

# The test hub of the push phases is https with the test certificate (test/fixtures/tls), which feedsub must trust.
# BENCH_ENGINES (default sqlite,postgres): the polls, delivery and bytes written run on each engine named, PostgreSQL
# on a durable server the bench starts and stops; the other phases on SQLite only, when it is named.
bench: export NODE_EXTRA_CA_CERTS = $(CURDIR)/test/fixtures/tls/cert.pem
bench: deps
	$(TSX) scripts/bench.ts

# SCALE_FEEDS feeds (default 100000), 10 subscriptions each: cycles (healthy and half the receivers failing), mixed vs
# read-only API throughput, list p99s, bytes written per 304 poll and per subscription, SCALE_LOAD_SECONDS (default 600)
# of mixed load, peak RSS of serve and poll --once (docs/benchmarks.md). SCALE_ENGINE=postgres runs it on a durable
# PostgreSQL server the bench starts and stops (default sqlite).
bench-scale: deps
	$(TSX) scripts/bench-scale.ts

# 1, 2 and 3 `serve` nodes on one durable PostgreSQL server the bench starts and stops: the all-304 and changed cycles'
# rates, each node's share, double fetches and deliveries (must be 0), failover after a SIGKILL, CPU of the nodes and of
# the server, WAL per poll (docs/benchmarks.md). BENCH_CLUSTER_FEEDS (default 2,000), BENCH_CLUSTER_SUBS (per feed,
# default 2), BENCH_CLUSTER_NODES (default 1,2,3).
bench-cluster: deps
	$(TSX) scripts/bench-cluster.ts

# feedsub against rss2email (apt-get install -y rss2email) on one local origin of PEER_FEEDS (default 1,000) ~50 KB
# feeds: first poll, a round where 305 feeds gain 2 entries each, a round where nothing changed. feedsub runs as
# dist/feedsub when it is built (make build), else under tsx (docs/benchmarks.md).
bench-rss2email: deps
	$(TSX) scripts/bench-rss2email.ts

build: deps
	$(TSX) scripts/build.ts

clean:
	rm -rf dist build
