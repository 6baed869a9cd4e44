# feedsub — every target installs what is missing first, so a fresh clone needs only Node.js >= 20.19 and make.
.PHONY: deps serve test typecheck bench build clean

NPM ?= npm
TSX := node_modules/.bin/tsx

# node_modules is (re)installed when package.json or the lockfile changes.
node_modules/.feedsub-installed: package.json package-lock.json
	$(NPM) ci --no-audit --no-fund
	@touch $@

deps: node_modules/.feedsub-installed

serve: deps
	$(TSX) src/main.ts serve

test: deps
	bash scripts/test-setup.sh
	$(NPM) test

typecheck: deps
	node_modules/.bin/tsc --noEmit -p .

bench: deps
	$(TSX) scripts/bench.ts

build: deps
	$(TSX) scripts/build.ts

clean:
	rm -rf dist build
