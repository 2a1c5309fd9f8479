package integration

// The busy scene of the live page's layout test (admin_browser_layout_test.go)
// and of docs/admin.png: what a user sees who points a few services at the
// broker. Ids are as long as real ones: pod names as client ids, kgo's
// default client id "kgo" shared by two members, KIP-848 member ids as kgo
// makes them (22 characters of base64), a transactional id built from a
// pod name.

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// The busy scene's names.
const (
	busyEnricher = "orders-enricher"    // classic, three pods, one of which left
	busyAudit    = "payments-audit"     // consumer (KIP-848), two kgo members
	busyIdle     = "nightly-reconcile"  // Empty and idle: folded, with lag 23
	busyIdleZero = "old-lab-1"          // Empty and idle: folded, caught up
	busyEvents   = "customer-events.v2" // a third topic, six partitions
	busyTxnID    = "orders-enricher-7d9f8c6b5-x2k4q.eos-0"
	busyAuditA   = "Jx8y0B3nQkuR5v2TfG1c9A" // KIP-848 member ids
	busyAuditB   = "r8Xk2vQ9TqKZ1m0yP4sB7w"
)

// busyPods are the client ids of orders-enricher's three members.
var busyPods = [3]string{"orders-enricher-7d9f8c6b5-x2k4q", "orders-enricher-7d9f8c6b5-m8z7w", "orders-enricher-7d9f8c6b5-p3n6r"}

// adminBusyConfig is adminConfig with a third topic.
func adminBusyConfig(cfg *broker.Config) {
	adminConfig(cfg)
	cfg.Topics[busyEvents] = 6
}

// busyScene is what adminBusyScene built: the members of orders-enricher
// that stayed, with their connections and partitions, the member that
// left, and the fault on its heartbeats.
type busyScene struct {
	b        *testBroker
	producer *wireclient.Client
	members  [2]string
	conns    [2]*wireclient.Client
	owner    map[assignor.TopicPartition]int // which of members holds each partition
	gone     string
	faultID  string
}

// consume appends n records to one of orders-enricher's partitions and
// has its owner commit n records further: the group consumes n records
// and its lag stays as it was.
func (s busyScene) consume(t *testing.T, topic string, partition int32, n int) {
	t.Helper()
	var at int64 = -1
	for _, e := range s.b.Committed(busyEnricher) {
		if e.Topic == topic && e.Partition == partition {
			at = e.Offset
		}
	}
	require.GreaterOrEqual(t, at, int64(0), "%s-%d has a commit", topic, partition)
	adminProduce(t, s.producer, topic, partition, n)
	i := s.owner[assignor.TopicPartition{Topic: topic, Partition: partition}]
	require.Zero(t, adminCommit(t, s.conns[i], busyEnricher, s.members[i], 4, topic, partition, at+int64(n)))
}

// adminBusyScene builds the scene on b (adminBusyConfig):
//
//   - two idle groups, Empty for six minutes: nightly-reconcile with
//     lag 10 on orders-0 and 10 on orders-1, and 3 more on orders-0 once
//     the transaction below writes there (23 in all), old-lab-1 with
//     lag 0;
//   - orders-enricher, classic: three pods joined; a fault drops the
//     heartbeats of the third, which then leaves (generation 4), so the
//     fault names a member that is gone; the two left commit with lag
//     on orders and customer-events.v2 and fetch on connections of their
//     own; the second one's stale heartbeat is fenced;
//   - payments-audit, consumer (KIP-848): two kgo members, both with
//     client id kgo, so their fetch positions cannot be told apart;
//   - an open transaction of the first pod, on all of orders and
//     customer-events.v2, with offsets staged for orders-enricher.
func adminBusyScene(t *testing.T, b *testBroker) busyScene {
	t.Helper()
	producer := wiretest.Dial(t, b.Addr(), "orders-ingest-5c4b7f9d8-q2w3e")
	for _, p := range []struct {
		topic     string
		partition int32
		n         int
	}{{"orders", 0, 120}, {"orders", 1, 95}, {"orders", 2, 80}, {"orders", 3, 64}, {"payments", 0, 40}, {"payments", 1, 33},
		{busyEvents, 0, 12}, {busyEvents, 1, 30}, {busyEvents, 2, 9}, {busyEvents, 3, 4}, {busyEvents, 4, 50}, {busyEvents, 5, 18}} {
		adminProduce(t, producer, p.topic, p.partition, p.n)
	}

	// The idle groups: joined, committed, left, six minutes ago.
	job := wiretest.Dial(t, b.Addr(), "reconcile-job-28211450-zt9kd")
	for _, g := range []struct {
		group   string
		commits []tp
	}{
		{busyIdle, []tp{{"orders", 0, 110}, {"orders", 1, 85}}},
		{busyIdleZero, []tp{{"payments", 0, 40}}},
	} {
		j := adminJoin(t, job, g.group, "", 30*time.Second, "orders", "payments")
		adminSync(t, job, g.group, j)
		for _, c := range g.commits {
			require.Zero(t, adminCommit(t, job, g.group, j.MemberID, j.Generation, c.topic, c.partition, c.offset))
		}
		require.Zero(t, wiretest.Do[*kmsg.LeaveGroupResponse](t, job, wiretest.LeaveRequest(5, g.group, j.MemberID)).ErrorCode)
	}
	_, err := b.Advance(6 * time.Minute)
	require.NoError(t, err)

	// orders-enricher: three pods, the third cut off and gone.
	var conns [3]*wireclient.Client
	var ids [3]string
	for i, pod := range busyPods {
		conns[i] = wiretest.Dial(t, b.Addr(), pod)
		ids[i] = adminJoin(t, conns[i], busyEnricher, "", 45*time.Second, "orders", busyEvents).MemberID
	}
	f, err := b.InjectFault(broker.Fault{Keys: []int16{12}, Group: busyEnricher, Member: ids[2], Drop: true, Count: -1})
	require.NoError(t, err)
	_, err = b.Advance(1500 * time.Millisecond)
	require.NoError(t, err)
	require.Zero(t, wiretest.Do[*kmsg.LeaveGroupResponse](t, conns[2], wiretest.LeaveRequest(5, busyEnricher, ids[2])).ErrorCode)
	refreshed := adminJoin(t, conns[0], busyEnricher, ids[0], 45*time.Second, "orders", busyEvents)
	require.Equal(t, int32(4), refreshed.Generation)
	adminSync(t, conns[0], busyEnricher, refreshed)
	require.NotZero(t, heartbeat(t, conns[1], busyEnricher, ids[1], 2), "a stale heartbeat is fenced")
	adminSync(t, conns[1], busyEnricher, adminJoin(t, conns[1], busyEnricher, ids[1], 45*time.Second, "orders", busyEvents))

	v := b.describe(busyEnricher)
	owner := map[assignor.TopicPartition]int{}
	for _, m := range v.Members {
		for _, p := range m.Assignment {
			owner[p] = slices.Index(ids[:], m.MemberID)
		}
	}
	member := func(topic string, partition int32) int { // which of the two owns it
		return owner[assignor.TopicPartition{Topic: topic, Partition: partition}]
	}
	for _, c := range []tp{{"orders", 0, 101}, {"orders", 1, 95}, {"orders", 2, 41}, {"orders", 3, 64},
		{busyEvents, 0, 12}, {busyEvents, 1, 22}, {busyEvents, 2, 9}, {busyEvents, 3, 4}, {busyEvents, 4, 17}, {busyEvents, 5, 18}} {
		i := member(c.topic, c.partition)
		require.Zero(t, adminCommit(t, conns[i], busyEnricher, ids[i], 4, c.topic, c.partition, c.offset), "commit %v", c)
	}
	fetchers := [2]*wireclient.Client{wiretest.Dial(t, b.Addr(), busyPods[0]), wiretest.Dial(t, b.Addr(), busyPods[1])}
	for _, c := range []tp{{"orders", 0, 108}, {"orders", 1, 95}, {"orders", 2, 52}, {"orders", 3, 64}, {busyEvents, 1, 27}, {busyEvents, 4, 30}} {
		adminFetch(t, fetchers[member(c.topic, c.partition)], c.topic, c.partition, c.offset)
	}

	// payments-audit: two kgo members of the consumer protocol.
	kgo := wiretest.Dial(t, b.Addr(), "kgo")
	a := k848Join(t, kgo, busyAudit, busyAuditA, "uniform", "payments")
	bm := k848Join(t, kgo, busyAudit, busyAuditB, "uniform", "payments")
	a = wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, kgo, k848Keepalive(busyAudit, busyAuditA, a.MemberEpoch))
	require.Zero(t, a.ErrorCode)
	require.Equal(t, []int16{0}, wiretest.Commit(t, kgo, commitRequest(9, busyAudit, busyAuditA, a.MemberEpoch, tp{"payments", 0, 37})))
	require.Equal(t, []int16{0}, wiretest.Commit(t, kgo, commitRequest(9, busyAudit, busyAuditB, bm.MemberEpoch, tp{"payments", 1, 33})))
	kgoFetch := wiretest.Dial(t, b.Addr(), "kgo")
	adminFetch(t, kgoFetch, "payments", 0, 38)
	adminFetch(t, kgoFetch, "payments", 1, 33)

	// An open transaction of the first pod.
	txc := wiretest.Dial(t, b.Addr(), busyPods[0])
	p := mustInitTxn(t, txc, busyTxnID)
	require.Equal(t, []int16{0, 0, 0, 0}, addPartitions(t, txc, 3, p, "orders", 0, 1, 2, 3))
	require.Equal(t, []int16{0, 0, 0, 0, 0, 0}, addPartitions(t, txc, 3, p, busyEvents, 0, 1, 2, 3, 4, 5))
	require.Zero(t, produceTxn(t, txc, &p.id, "orders", 0, txnBatch(p, 0, "a", "b", "c")).ErrorCode)
	require.Zero(t, addOffsets(t, txc, 3, p, busyEnricher))
	var staged []tp // two of the first pod's partitions, a few records on
	for _, m := range v.Members {
		if m.MemberID == ids[0] {
			for _, q := range m.Assignment[:2] {
				staged = append(staged, tp{q.Topic, q.Partition, 3})
			}
		}
	}
	require.Equal(t, []int16{0, 0}, txnCommit(t, txc, p, busyEnricher, ids[0], 4, staged...))
	_, err = b.Advance(700 * time.Millisecond)
	require.NoError(t, err)

	return busyScene{b: b, producer: producer, members: [2]string{ids[0], ids[1]}, conns: [2]*wireclient.Client{conns[0], conns[1]},
		owner: owner, gone: ids[2], faultID: f.ID()}
}
