package server

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/protocol"
	"github.com/minibroker/minibroker/testkit/coretest"
	"github.com/minibroker/minibroker/wireclient"
)

// BenchmarkOffsetCommit sends OffsetCommit v8 requests of one partition
// over loopback sockets from 64 connections at once, each the one member
// of a group of its own, as minibench's commit-c64 does: the connection
// loop, decoding, the handler, the coordinator and the store, to an
// in-memory store (memory) or the offsets journal in a temporary
// directory (file: every commit acknowledged once fdatasynced, concurrent
// commits sharing a record). ns/op, cpu-ns/op (the process's CPU time
// per commit, steadier than ns/op on a shared machine) and allocs/op
// include the client's; commits/record is how many commits the journal
// wrote per record (per fdatasync).
func BenchmarkOffsetCommit(b *testing.B) {
	for _, name := range []string{"memory", "file"} {
		b.Run("store="+name, func(b *testing.B) {
			var store coordinator.OffsetStore = offsets.NewMemory()
			if name == "file" {
				s, err := offsets.Open(offsets.Config{Dir: b.TempDir()})
				require.NoError(b, err)
				b.Cleanup(func() { require.NoError(b, s.Close()) })
				store = s
				defer func() {
					st := s.Stats()
					b.ReportMetric(float64(st.Commits)/float64(max(st.Appends, 1)), "commits/record")
				}()
			}
			srv := commitBenchServer(b, store)
			addr := serveBench(b, srv)
			var n atomic.Int32
			b.SetParallelism(32) // 64 goroutines on 2 CPUs
			b.ReportAllocs()
			cpu := processCPU()
			defer func() { b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op") }()
			b.RunParallel(func(pb *testing.PB) {
				req := commitBenchMember(b, srv, fmt.Sprintf("bench-%d", n.Add(1)))
				c, err := wireclient.Dial(context.Background(), addr, "bench")
				if err != nil {
					b.Error(err)
					return
				}
				defer c.Close()
				for pb.Next() {
					req.Topics[0].Partitions[0].Offset++
					resp, err := c.Request(context.Background(), req)
					if err != nil {
						b.Error(err)
						return
					}
					if code := resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
						b.Errorf("commit: code %d", code)
						return
					}
				}
			})
		})
	}
}

// BenchmarkOffsetCommitFrame is the server's part of one OffsetCommit
// without the socket: the frame's header and body decoded, the handler
// and the coordinator run against an in-memory store, and the answer
// encoded into a reused buffer, as the connection loop does.
func BenchmarkOffsetCommitFrame(b *testing.B) {
	b.Run("partitions=1", func(b *testing.B) {
		srv := commitBenchServer(b, offsets.NewMemory())
		benchFrame(b, srv, commitBenchMember(b, srv, "bench")) // the same offset each time: the store does not mind
	})
	b.Run("partitions=16", func(b *testing.B) { // all of the member's, as kgo's autocommit sends them
		srv := commitBenchServer(b, offsets.NewMemory())
		req := commitBenchMember(b, srv, "bench")
		t := &req.Topics[0]
		for p := int32(1); p < 16; p++ {
			t.Partitions = append(t.Partitions, kmsg.OffsetCommitRequestTopicPartition{Partition: p, LeaderEpoch: -1})
		}
		benchFrame(b, srv, req)
	})
}

// benchFrame handles req's frame on srv over and over, as the connection
// loop does: one request reused, the answer encoded into one buffer. Any
// error or error code fails the benchmark.
func benchFrame(b *testing.B, srv *Server, req kmsg.Request) {
	from := &peer{remote: "127.0.0.1:40000", host: "/127.0.0.1", clientID: "bench"}
	r := &request{ctx: b.Context(), logger: srv.logger, peer: from, acct: &account{mem: srv.mem, wait: srv.frameTimeout}}
	frame := rawRequest(req, 7, "bench")[4:]
	var out []byte
	b.ReportAllocs()
	for b.Loop() {
		resp, corr, err := srv.handleFrame(r, frame)
		if err != nil || r.code != 0 {
			b.Fatalf("%s: %v, code %d", kmsg.NameForKey(req.Key()), err, r.code)
		}
		out = protocol.AppendResponse(out[:0], corr, resp)
	}
}

// commitBenchServer is a Server over store with a topic "bench" of 16
// partitions.
func commitBenchServer(b *testing.B, store coordinator.OffsetStore) *Server {
	b.Helper()
	core := coretest.New(b, coretest.Config{Topics: map[string]int32{"bench": 16},
		Coordinator: coordinator.Config{Clock: clock.System{}, Store: store}})
	srv, err := New(Config{Coordinator: core.Coordinator, Catalog: core.Catalog, Log: core.Log})
	require.NoError(b, err)
	return srv
}

// commitBenchMember joins a member to group, alone, and returns a commit
// of its first partition.
func commitBenchMember(b *testing.B, srv *Server, group string) *kmsg.OffsetCommitRequest {
	r := &request{ctx: context.Background(), logger: srv.logger, clientID: "bench", peer: &peer{remote: "127.0.0.1:40000", host: "/127.0.0.1"}, version: 3}
	join := srv.handleJoinGroup(r, joinRequest(3, group, "", "bench")).(*kmsg.JoinGroupResponse)
	if join.ErrorCode != 0 {
		b.Errorf("join %s: code %d", group, join.ErrorCode)
	}
	return commitRequest(8, group, join.MemberID, join.Generation, commitPart{"bench", 0, 0, nil})
}
