#!/usr/bin/env bash
# fuzz.sh FUZZTIME: runs every fuzz target in the module for FUZZTIME each,
# one after the other (make fuzz FUZZTIME=60s), so a run takes the number
# of targets times FUZZTIME, and a build of each target's package besides.
# The targets are found in the test sources, so one package that does not
# build cannot hide the others' targets; fuzz.sh --list prints them, one
# "package target" a line. Every target gets its turn; the run fails at
# the end if any target found a crasher, which go test has then written to
# that package's testdata/fuzz/<target>/ directory: keep it there beside
# the fix, where make test replays it as a seed.
set -euo pipefail
cd "$(dirname "$0")/.."
targets() {
	grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | sed 's/:func /:/' | sort |
		while IFS=: read -r file target; do
			echo "./$(dirname "${file#./}") $target"
		done
}
if [[ ${1:-} == --list ]]; then
	targets
	exit 0
fi
fuzztime=${1:-60s}
failed=()
while read -r pkg target; do
	echo "== $pkg $target ($fuzztime)"
	if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"; then
		failed+=("$pkg $target")
	fi
done < <(targets)
if ((${#failed[@]} > 0)); then
	echo "fuzz: failures in:" >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "fuzz: every target ran for $fuzztime without a failure"
