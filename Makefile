# feedsub — every target installs what is missing first, so a fresh clone needs only Node.js >= 20.19 and make.
.PHONY: deps serve test lint format typecheck bench build clean

NPM ?= npm
TSX := node_modules/.bin/tsx

# node_modules is (re)installed when package.json or the lockfile changes.
node_modules/.feedsub-installed: package.json package-lock.json
	$(NPM) ci --no-audit --no-fund
	@touch $@

deps: node_modules/.feedsub-installed

# node --import tsx keeps the server in this one process, so Ctrl-C or SIGTERM reaches it directly and it stops
# gracefully (the tsx command relays signals to a child and SIGKILLs it if it does not answer within 30 ms).
serve: deps
	node --import tsx src/main.ts serve

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
	node_modules/.bin/tsc --noEmit -p .

bench: deps
	$(TSX) scripts/bench.ts

build: deps
	$(TSX) scripts/build.ts

clean:
	rm -rf dist build
