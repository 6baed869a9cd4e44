# feedsub — every target installs what is missing first, so a fresh clone needs only Node.js >= 20.19 and make.
.PHONY: deps serve test lint format typecheck bench build clean

NPM ?= npm
TSX := node_modules/.bin/tsx

# node_modules is (re)installed when package.json or the lockfile changes.
node_modules/.feedsub-installed: package.json package-lock.json
	$(NPM) ci --no-audit --no-fund
	@touch $@

deps: node_modules/.feedsub-installed

serve: deps
	$(TSX) src/main.ts serve

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
