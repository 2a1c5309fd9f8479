#!/usr/bin/env bash
# cover-floor.sh TEST_OUTPUT MIN PKG...: fails unless each named package's
# statement coverage in a `go test -cover` output is at least MIN percent,
# and unless the test run itself passed.
set -euo pipefail
out=$1 min=$2
shift 2
if grep -qE '^(FAIL|--- FAIL|panic:)' "$out"; then
	echo "tests failed" >&2
	exit 1
fi
status=0
for pkg in "$@"; do
	line=$(grep -E "^ok\s+\S+/$pkg\s" "$out" || true)
	pct=$(echo "$line" | sed -nE 's/.*coverage: ([0-9.]+)% of statements.*/\1/p')
	if [ -z "$pct" ]; then
		echo "coverage: no result for $pkg" >&2
		status=1
	elif awk -v p="$pct" -v m="$min" 'BEGIN { exit !(p < m) }'; then
		echo "coverage: $pkg at $pct%, below $min%" >&2
		status=1
	else
		echo "coverage: $pkg $pct% (floor $min%)"
	fi
done
exit $status
