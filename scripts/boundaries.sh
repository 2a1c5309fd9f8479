#!/usr/bin/env bash
# Fails when an import runs the wrong way (docs/design.md section 1): the
# semantic core reaching the wire, a small store reaching up into the
# broker, anything but the command lines and tests reaching the tools, the
# coordinator reading the time on its own, or the minibroker binary linking
# kfake.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=$(go list -m)
status=0
fail() {
	echo "boundaries: $*" >&2
	status=1
}

# deps PKG: the packages of this module that PKG imports, itself excluded.
deps() { go list -deps "./$1" | grep -E "^$mod/" | grep -v "^$mod/$1\$" || true; }

# The codec dials nothing: the raw client is wireclient/.
if go list -deps ./protocol | grep -qx net; then
	fail "protocol/ imports net (the dialing client belongs in wireclient/)"
fi

# The raw client stands on the codec alone: no rules, no server.
if [ -d wireclient ]; then
	bad=$(deps wireclient | grep -vE "^$mod/(protocol|assignor)$" || true)
	[ -z "$bad" ] || fail "wireclient/ imports $(echo $bad) (it may import only protocol/ and the assignor types the codec uses)"
fi

# The core knows nothing of the wire.
for pkg in assignor clock coordinator offsets records txn; do
	[ -d "$pkg" ] || continue
	bad=$(go list -deps "./$pkg" | grep -E "franz-go/pkg/(kgo|kerr|kfake)|^net$|^net/http$|^$mod/(server|protocol|broker|admin)$" || true)
	[ -z "$bad" ] || fail "$pkg/ imports $(echo $bad)"
done
for pkg in coordinator offsets; do
	bad=$(go list -deps "./$pkg" | grep -E "franz-go/pkg/(kmsg|kbin)$" || true)
	[ -z "$bad" ] || fail "$pkg/ imports $(echo $bad)"
done
[ -z "$(deps assignor)" ] || fail "assignor/ imports $(deps assignor)"
[ -z "$(deps clock)" ] || fail "clock/ imports $(deps clock)"
deps offsets | grep -qE "^$mod/(coordinator|records)$" && fail "offsets/ imports the coordinator or records"
# The partition logs take the topic-name rule from the catalog and stand on
# nothing else of the module but the small stores and the settings error.
if [ -d records ]; then
	bad=$(deps records | grep -vE "^$mod/(catalog|internal/(atomicfile|datadir|settings))$" || true)
	[ -z "$bad" ] || fail "records/ imports $(echo $bad) (it may import only catalog/, the small stores and internal/settings)"
fi

# The small stores of the data directory stand on the standard library.
for pkg in catalog internal/atomicfile internal/datadir internal/settings internal/testutil; do
	[ -d "$pkg" ] || continue
	bad=$(deps "$pkg" | grep -vE "^$mod/internal/(atomicfile|datadir)$" || true)
	[ -z "$bad" ] || fail "$pkg/ imports $(echo $bad)"
done

# The test helpers are for tests: no package's non-test files import
# testkit/wiretest (wire helpers), testkit/coretest (the core assembled
# in memory) or testkit/frametest (frames by hand); wiretest knows only
# the raw client and the codec, coretest nothing of the wire, frametest
# nothing of ours.
for pkg in $(go list ./... | grep -vE "^$mod/testkit/(wiretest|coretest|frametest)$"); do
	bad=$(go list -f '{{join .Imports "\n"}}' "$pkg" | grep -E "^$mod/testkit/(wiretest|coretest|frametest)$" || true)
	[ -z "$bad" ] || fail "${pkg#$mod/} imports $(echo $bad) outside its _test.go files"
done
if [ -d testkit/wiretest ]; then
	bad=$(deps testkit/wiretest | grep -vE "^$mod/(wireclient|protocol|assignor)$" || true)
	[ -z "$bad" ] || fail "testkit/wiretest imports $(echo $bad)"
fi
if [ -d testkit/frametest ]; then
	bad=$(deps testkit/frametest)
	[ -z "$bad" ] || fail "testkit/frametest imports $(echo $bad) (the codec's own tests use it)"
fi
if [ -d testkit/coretest ]; then
	bad=$(deps testkit/coretest | grep -E "^$mod/(server|protocol|wireclient|broker|admin|testkit/wiretest)$" || true)
	[ -z "$bad" ] || fail "testkit/coretest imports $(echo $bad)"
fi

# Only command lines, examples and tests use the tools; only the broker,
# the tools, the command lines and tests assemble a broker.
for pkg in $(go list ./... | grep -vE "^$mod/(tools|cmd|examples|integration)(/|$)"); do
	bad=$(go list -deps "$pkg" | grep -E "^$mod/tools/" || true)
	[ -z "$bad" ] || fail "${pkg#$mod/} imports $(echo $bad)"
done
for pkg in assignor clock coordinator offsets protocol server admin; do
	deps "$pkg" | grep -qx "$mod/broker" && fail "$pkg/ imports broker/"
done

# An embedded broker links no admin side: a Go test that embeds one without
# the admin API links neither package admin nor Prometheus and protobuf
# (broker/adminapi serves it; examples/embedded checks its own link too).
bad=$(go list -deps ./broker | grep -E "^$mod/admin$|^github.com/prometheus/|^google.golang.org/protobuf/" || true)
[ -z "$bad" ] || fail "broker/ links $(echo $bad) (the admin side belongs in broker/adminapi)"

# The broker binary does not link kfake: the comparison is cmd/minicompare.
if go list -deps ./cmd/minibroker | grep -q "franz-go/pkg/kfake"; then
	fail "cmd/minibroker links kfake"
fi

# The coordinator and the assignor read time only through the injected Clock.
if grep -nE 'time\.(Now|Sleep|After|Tick|NewTimer|NewTicker)\(' $(ls coordinator/*.go assignor/*.go txn/*.go | grep -v _test.go); then
	fail "coordinator/, assignor/ and txn/ read time only through the injected Clock"
fi
[ $status -eq 0 ] && echo "boundaries: ok"
exit $status
