#!/usr/bin/env bash
# fuzz.sh FUZZTIME: runs every fuzz target in the module for FUZZTIME each
# (make fuzz FUZZTIME=60s). The targets are found in the test sources, so
# one package that does not build cannot hide the others' targets. Every
# target gets its turn; the run fails at the end if any target found a
# crasher, which go test has then written to that package's
# testdata/fuzz/<target>/ directory: keep it there beside the fix, where
# make test replays it as a seed.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-60s}
failed=()
while IFS=: read -r file target; do
	pkg=./$(dirname "${file#./}")
	echo "== $pkg $target ($fuzztime)"
	if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"; then
		failed+=("$pkg $target")
	fi
done < <(grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | sed 's/:func /:/' | sort)
if ((${#failed[@]} > 0)); then
	echo "fuzz: failures in:" >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "fuzz: every target ran for $fuzztime without a failure"
