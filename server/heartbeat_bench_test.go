package server

import (
	"testing"

	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/protocol"
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
	req := wiretest.HeartbeatRequest(4, commit.Group, commit.MemberID, commit.Generation)
	from := &peer{remote: "127.0.0.1:40000", host: "/127.0.0.1", clientID: "bench"}
	r := &request{ctx: b.Context(), logger: srv.logger, peer: from, acct: &account{mem: srv.mem, wait: srv.frameTimeout}}
	frame := rawRequest(req, 7, "bench")[4:]
	var out []byte
	b.ReportAllocs()
	for b.Loop() {
		resp, corr, err := srv.handleFrame(r, frame)
		if err != nil || r.code != 0 {
			b.Fatalf("heartbeat: %v, code %d", err, r.code)
		}
		out = protocol.AppendResponse(out[:0], corr, resp)
	}
}
