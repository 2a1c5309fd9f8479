package server

import (
	"testing"

	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// BenchmarkHeartbeatFrame is the server's part of one Heartbeat without
// the socket, as minibench's hb-c64 sends it (v4, kgo's version): the
// frame's header and body decoded, the handler and the coordinator run
// for a member of a stable group, and the answer encoded into a reused
// buffer, as the connection loop does.
func BenchmarkHeartbeatFrame(b *testing.B) {
	srv := commitBenchServer(b, offsets.NewMemory())
	commit := commitBenchMember(b, srv, "bench")
	benchFrame(b, srv, wiretest.HeartbeatRequest(4, commit.Group, commit.MemberID, commit.Generation))
}
