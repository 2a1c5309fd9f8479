#!/usr/bin/env bash
# Installs kafkajs, at the version integration/clients/testdata/kafkajs/
# package-lock.json pins, from the npm registry into .cache/kafkajs for the
# real-client tests (integration/clients/kafkajs_test.go, which runs this
# script too), unless that very lockfile is installed there already. It
# needs node and npm; without node it installs nothing and says so (the
# kafkajs tests then skip).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
src=$root/integration/clients/testdata/kafkajs
dst=$root/.cache/kafkajs

if ! command -v node >/dev/null 2>&1; then
	echo "kafkajs.sh: node is not on PATH; the kafkajs tests will skip (Debian: apt-get install nodejs npm)" >&2
	exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
	echo "kafkajs.sh: node is here but npm is not; install npm (Debian: apt-get install npm)" >&2
	exit 1
fi
if cmp -s "$src/package-lock.json" "$dst/package-lock.json" && [ -f "$dst/node_modules/kafkajs/package.json" ]; then
	exit 0
fi
mkdir -p "$dst"
cp "$src/package.json" "$src/package-lock.json" "$dst/"
echo "kafkajs.sh: installing kafkajs into .cache/kafkajs for the real-client tests" >&2
cd "$dst"
npm ci --no-audit --no-fund --loglevel=error >&2
