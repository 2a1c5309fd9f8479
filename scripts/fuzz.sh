#!/usr/bin/env bash
# fuzz.sh FUZZTIME: runs every fuzz target in the module for FUZZTIME each.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-60s}
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "== $pkg $target ($fuzztime)"
		go test -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" "$pkg"
	done
done
