package coordinator

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/offsets"
)

// benchCoordinator returns a coordinator on the real clock with one topic
// "orders" of partitions partitions and store (memory when nil).
func benchCoordinator(b *testing.B, partitions int32, store OffsetStore) *Coordinator {
	b.Helper()
	if store == nil {
		store = offsets.NewMemory()
	}
	c, err := New(Config{Clock: clock.System{}, Store: store, Topics: StaticTopics{"orders": partitions}})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// benchWireJoin is a join as the server builds it for a kgo-like member.
func benchWireJoin(group, member string) JoinRequest {
	return JoinRequest{
		Group: group, MemberID: member, ClientID: "bench", ClientHost: "/127.0.0.1",
		SessionTimeout: time.Minute, ProtocolType: ConsumerProtocolType, WireRules: true,
		Protocols: []Protocol{{Name: "roundrobin", Metadata: []byte{0, 0, 0, 0, 0, 1, 0, 6, 'o', 'r', 'd', 'e', 'r', 's', 0xff, 0xff, 0xff, 0xff}, Topics: []string{"orders"}}},
	}
}

// benchGroup joins members members into group with the chapter's join and
// returns their ids and the group's generation.
func benchGroup(b *testing.B, c *Coordinator, group string, members int) ([]string, int32) {
	b.Helper()
	ids := make([]string, members)
	var gen int32
	for i := range ids {
		ids[i] = fmt.Sprintf("m-%06d", i)
		res, err := c.Join(JoinRequest{Group: group, MemberID: ids[i], SessionTimeout: time.Minute, Topics: []string{"orders"}})
		if err != nil {
			b.Fatal(err)
		}
		gen = res.Generation
	}
	return ids, gen
}

// BenchmarkRebalance measures one rebalance: a chapter join of a known
// member, which always runs PreparingRebalance, generation+1, the
// round-robin assignment and Stable. The target is members=1000 under
// 10 ms.
func BenchmarkRebalance(b *testing.B) {
	for _, members := range []int{10, 100, 1_000} {
		b.Run(fmt.Sprintf("members=%d/partitions=10000", members), func(b *testing.B) {
			c := benchCoordinator(b, 10_000, nil)
			benchGroup(b, c, "g", members)
			req := JoinRequest{Group: "g", MemberID: "m-000000", SessionTimeout: time.Minute, Topics: []string{"orders"}}
			for b.Loop() {
				if _, err := c.Join(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkJoinLeave is a wire member's churn in a 50-member group on 16
// partitions: join with a new id (one rebalance), leave (another).
func BenchmarkJoinLeave(b *testing.B) {
	c := benchCoordinator(b, 16, nil)
	for i := range 49 {
		if _, err := c.Join(benchWireJoin("g", "")); err != nil {
			b.Fatal(err, i)
		}
	}
	for b.Loop() {
		res, err := c.Join(benchWireJoin("g", ""))
		if err != nil {
			b.Fatal(err)
		}
		c.Leave("g", res.MemberID)
	}
}

// BenchmarkJoinRefresh is the wire's re-join of a member whose
// subscription did not change: no rebalance.
func BenchmarkJoinRefresh(b *testing.B) {
	c := benchCoordinator(b, 16, nil)
	var id string
	for range 10 {
		res, err := c.Join(benchWireJoin("g", ""))
		if err != nil {
			b.Fatal(err)
		}
		id = res.MemberID
	}
	req := benchWireJoin("g", id)
	for b.Loop() {
		if _, err := c.Join(req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHeartbeat heartbeats 64 one-member groups from all processors
// at once: the coordinator's one lock is the shared resource.
func BenchmarkHeartbeat(b *testing.B) {
	c := benchCoordinator(b, 16, nil)
	type member struct {
		group, id string
		gen       int32
	}
	var members []member
	for g := range 64 {
		group := fmt.Sprintf("g%d", g)
		ids, gen := benchGroup(b, c, group, 1)
		members = append(members, member{group, ids[0], gen})
	}
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		m := members[int(next.Add(1))%len(members)]
		for pb.Next() {
			if err := c.Heartbeat(m.group, m.id, m.gen); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkCommit commits one partition per call from 64 goroutines, each
// the single member of its own group: memory is the coordinator's cost
// alone, file adds the journal write and fsync shared by each batch.
func BenchmarkCommit(b *testing.B) {
	for _, kind := range []string{"memory", "file"} {
		b.Run(kind, func(b *testing.B) {
			var store OffsetStore
			if kind == "file" {
				s, err := offsets.Open(offsets.Config{Dir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = s.Close() })
				store = s
			}
			c := benchCoordinator(b, 16, store)
			type member struct {
				group, id string
				gen       int32
			}
			var members []member
			for g := range 64 {
				group := fmt.Sprintf("g%d", g)
				ids, gen := benchGroup(b, c, group, 1)
				members = append(members, member{group, ids[0], gen})
			}
			var next atomic.Int64
			b.SetParallelism(32)
			b.RunParallel(func(pb *testing.PB) {
				m := members[int(next.Add(1))%len(members)]
				offset := int64(0)
				for pb.Next() {
					offset++
					if err := c.Commit(m.group, m.id, m.gen, []offsets.Entry{{Topic: "orders", Partition: int32(offset % 16), Offset: offset, LeaderEpoch: -1}}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkIdleMembers joins 100,000 wire members into 10,000 groups and
// reports the live heap each one holds (target: under 2 KiB).
func BenchmarkIdleMembers(b *testing.B) {
	const groups, perGroup = 10_000, 10
	var perMember float64
	for b.Loop() {
		before := liveHeap()
		c := benchCoordinator(b, 16, nil)
		for g := range groups {
			group := fmt.Sprintf("members-%d", g)
			for range perGroup {
				req := benchWireJoin(group, "")
				req.Protocols[0].Metadata = append([]byte(nil), req.Protocols[0].Metadata...)
				if _, err := c.Join(req); err != nil {
					b.Fatal(err)
				}
			}
		}
		perMember = float64(liveHeap()-before) / (groups * perGroup)
		runtime.KeepAlive(c)
	}
	b.ReportMetric(perMember, "B/member")
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
