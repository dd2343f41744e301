#!/usr/bin/env bash
# Installs the third-party clients the tests drive (clients/package.json, pinned by
# clients/package-lock.json) with npm ci, when node_modules is missing or older than the lockfile.
# Node 22 comes from the npm package node@22 (clients/node_modules/.bin/node): the MCP conformance
# suite and the Inspector need it, the machine's Node may be older.
set -euo pipefail
cd "$(dirname "$0")/../clients"
if ! command -v npm >/dev/null; then
	echo "npm is missing: install Node.js (20 or later) with npm, then make test again" >&2
	exit 1
fi
stamp=node_modules/.flipbook-installed
if [[ -f $stamp && $stamp -nt package-lock.json && $stamp -nt package.json ]]; then
	exit 0
fi
echo "==> installing the test clients (npm ci in clients/)"
npm ci --no-audit --no-fund --loglevel=error
touch "$stamp"
