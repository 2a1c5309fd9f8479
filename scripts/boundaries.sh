#!/usr/bin/env bash
# Fails if the semantic core reaches the wire, or reads the time on its own.
# DESIGN.md section 1: assignor/, coordinator/ and offsets/ must not import
# kmsg, kerr, net or server; records/ must not import net, kerr, kgo,
# server, protocol or coordinator; coordinator/ and assignor/ use only the
# injected clock.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=$(go list -m)
status=0
for pkg in assignor coordinator offsets; do
	bad=$(go list -deps "./$pkg" | grep -E "franz-go/pkg/(kmsg|kerr|kgo|kbin)|^net$|^$mod/(server|protocol)$" || true)
	if [ -n "$bad" ]; then
		echo "boundaries: $pkg/ imports $(echo $bad)" >&2
		status=1
	fi
done
if [ -n "$(go list -deps ./assignor | grep -E "^$mod/" | grep -v "^$mod/assignor$" || true)" ]; then
	echo "boundaries: assignor/ imports another minibroker package" >&2
	status=1
fi
if go list -deps ./offsets | grep -qE "^$mod/coordinator$"; then
	echo "boundaries: offsets/ imports coordinator/" >&2
	status=1
fi
# records/ may know kmsg's record format, never the wire or the rules.
bad=$(go list -deps ./records | grep -E "franz-go/pkg/(kerr|kgo)|^net$|^net/http$|^$mod/(server|protocol|coordinator)$" || true)
if [ -n "$bad" ]; then
	echo "boundaries: records/ imports $(echo $bad)" >&2
	status=1
fi
if grep -nE 'time\.(Now|Sleep|After|Tick|NewTimer|NewTicker)\(' $(ls coordinator/*.go assignor/*.go | grep -v _test.go); then
	echo "boundaries: coordinator/ and assignor/ read time only through the injected Clock" >&2
	status=1
fi
[ $status -eq 0 ] && echo "boundaries: ok"
exit $status
