#!/usr/bin/env bash
# Installs what the test suite needs beyond node_modules (nothing yet beyond a check of the Node version).
set -euo pipefail
node -e 'const [a,b]=process.versions.node.split(".").map(Number); if (a<20||(a===20&&b<19)) { console.error("feedsub needs Node.js >= 20.19, found "+process.version); process.exit(1) }'
