package integration

// Faults on demand against stock kgo clients: each action as a client
// meets it. A NOT_COORDINATOR on a commit is retried by kgo and stored; a
// delayed Fetch arrives late but whole; a connection closed under a
// produce is re-dialed and the produce retried, stored once; and a
// member whose heartbeats are dropped becomes the chapter's zombie: its
// lease runs out on the manual clock while it keeps fetching, the other
// member takes its partition at a new generation, and its commit is
// fenced.

import (
	"context"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/internal/testutil"
)

// kgoCommit commits offsets for m's partitions of orders through kgo's
// CommitOffsetsSync and returns what its callback got.
func kgoCommit(t *testing.T, m *kgoMember, offsets map[int32]int64) kgoCommitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), kgoWait)
	defer cancel()
	parts := map[int32]kgo.EpochOffset{}
	for p, o := range offsets {
		parts[p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	var got kgoCommitResult
	m.Client.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{"orders": parts},
		func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			got = kgoCommitResult{Req: req, Resp: resp, Err: err}
		})
	return got
}

// kgoProduce produces values to orders' partition through a fresh kgo
// producer and requires each acknowledged.
func kgoProduce(t *testing.T, b *testBroker, partition int32, values ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID("producer"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	for _, v := range values {
		require.NoError(t, cl.ProduceSync(t.Context(), &kgo.Record{Topic: "orders", Partition: partition, Value: []byte(v)}).FirstErr())
	}
}

// TestKgoFaultNotCoordinatorOnCommit: one NOT_COORDINATOR answered to a
// member's commit: kgo looks the coordinator up again and retries, and
// the retry is stored.
func TestKgoFaultNotCoordinatorOnCommit(t *testing.T) {
	t.Parallel()
	b := startBroker(t, kgoConfig(map[string]int32{"orders": 2}))
	const group = "fault-commit"
	m := newKgoMember(t, b, "a", kgoMemberConfig{Group: group, Topics: []string{"orders"}})
	waitKgoConverged(t, b, group, "orders", 2, m)
	f, err := b.InjectFault(broker.Fault{Keys: []int16{8}, Group: group, Err: kerr.NotCoordinator.Code})
	require.NoError(t, err)

	got := kgoCommit(t, m, map[int32]int64{0: 5, 1: 9})
	require.NoError(t, got.Err)
	for _, p := range got.Resp.Topics[0].Partitions {
		require.Zero(t, p.ErrorCode, "the retry is answered NONE")
	}
	require.Equal(t, int64(1), f.Hits())
	require.NoError(t, f.Wait(t.Context()))
	for p, want := range map[int32]int64{0: 5, 1: 9} {
		off, ok := b.Coordinator().CommittedOffset(group, "orders", p)
		require.True(t, ok)
		require.Equal(t, want, off.Offset)
	}
	require.Len(t, b.Logs.Find("fault applied"), 1)
}

// TestKgoFaultDelayedFetch: the first Fetch of one client is held 300 ms
// and then served: the record arrives, no sooner.
func TestKgoFaultDelayedFetch(t *testing.T) {
	t.Parallel()
	b := startBroker(t, kgoConfig(map[string]int32{"orders": 1}))
	kgoProduce(t, b, 0, "late")
	const delay = 300 * time.Millisecond
	f, err := b.InjectFault(broker.Fault{Keys: []int16{1}, ClientID: "slow", Delay: delay})
	require.NoError(t, err)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID("slow"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders": {0: kgo.NewOffset().AtStart()}}))
	require.NoError(t, err)
	defer cl.Close()
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), kgoWait)
	defer cancel()
	var got []string
	for len(got) == 0 && ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		fetches.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	require.Equal(t, []string{"late"}, got)
	require.GreaterOrEqual(t, time.Since(start), delay)
	require.Equal(t, int64(1), f.Hits())
}

// kgoDisconnects counts the connections a kgo client saw close.
type kgoDisconnects struct{ n atomic.Int32 }

func (d *kgoDisconnects) OnBrokerDisconnect(kgo.BrokerMetadata, net.Conn) { d.n.Add(1) }

// TestKgoFaultCloseRedials: the connection a produce arrives on is closed
// instead of answered; kgo re-dials, retries the produce, and the record
// is stored once.
func TestKgoFaultCloseRedials(t *testing.T) {
	t.Parallel()
	b := startBroker(t, kgoConfig(map[string]int32{"orders": 1}))
	f, err := b.InjectFault(broker.Fault{Keys: []int16{0}, ClientID: "closed", Close: true})
	require.NoError(t, err)
	hooks := &kgoDisconnects{}
	// kgo refreshes its metadata after a failed produce, no sooner than
	// MetadataMinAge (5 s by default) after the last refresh.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID("closed"), kgo.WithHooks(hooks),
		kgo.RetryBackoffFn(func(int) time.Duration { return kgoRetryBackoff }), kgo.MetadataMinAge(10*time.Millisecond))
	require.NoError(t, err)
	defer cl.Close()
	res := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "orders", Value: []byte("once")})
	require.NoError(t, res.FirstErr())
	require.Equal(t, int64(0), res[0].Record.Offset)
	require.Equal(t, int64(1), f.Hits())
	require.GreaterOrEqual(t, hooks.n.Load(), int32(1), "kgo saw the connection close")
	_, end, err := b.Log().Offsets("orders", 0)
	require.NoError(t, err)
	require.Equal(t, int64(1), end, "the closed produce was not applied; its retry was, once")
}

// TestKgoFaultDroppedHeartbeatsMakeAZombie is the chapter's stale owner,
// made by the broker. Two kgo members share orders(2) on the manual
// clock. A's heartbeats are dropped: kgo waits for answers that never
// come, and A's lease is not renewed. The clock moves past A's session
// and the expiry step removes A; B takes both partitions at a new
// generation. A is not told: it keeps fetching its partition, so both
// process the records produced now. A's commit of them is fenced
// (ILLEGAL_GENERATION) and B's is stored.
func TestKgoFaultDroppedHeartbeatsMakeAZombie(t *testing.T) {
	t.Parallel()
	b := startBroker(t, kgoConfig(map[string]int32{"orders": 2}), func(cfg *broker.Config) { cfg.ManualClock = true })
	const group = "fault-zombie"
	// A long session (only the manual clock ends it) keeps kgo heartbeating
	// its retries for as long as the test runs; a short request timeout
	// makes kgo give up on a dropped answer, and re-dial, quickly.
	member := kgoMemberConfig{Group: group, Topics: []string{"orders"}, SessionTimeout: 30 * time.Second,
		Opts: []kgo.Opt{kgo.RequestTimeoutOverhead(time.Second)}}
	a := newKgoMember(t, b, "a", member)
	bm := newKgoMember(t, b, "b", member)
	gen := waitKgoConverged(t, b, group, "orders", 2, a, bm)
	aID, _ := a.Client.GroupMetadata()
	require.Equal(t, map[string][]int32{"orders": {0}}, a.Owned())

	f, err := b.InjectFault(broker.Fault{Keys: []int16{12}, Group: group, Member: aID, Drop: true, Count: -1})
	require.NoError(t, err)
	testutil.Eventually(t, kgoWait, func() string {
		if f.Hits() == 0 {
			return "no heartbeat of A dropped yet"
		}
		return ""
	})
	// Most of the session passes; B's heartbeats renew its lease at the
	// new reading, A's are lost. Then the rest of A's session passes.
	aLease, _ := b.member(group, aID)
	_, err = b.Advance(29 * time.Second)
	require.NoError(t, err)
	bID, _ := bm.Client.GroupMetadata()
	testutil.Eventually(t, kgoWait, func() string {
		if mv, _ := b.member(group, bID); !mv.Deadline.After(aLease.Deadline) {
			return "B has not renewed its lease yet"
		}
		return ""
	})
	mv, _ := b.member(group, aID)
	require.Equal(t, aLease.Deadline, mv.Deadline, "A's lease was never renewed")
	_, err = b.Advance(time.Second + time.Millisecond)
	require.NoError(t, err)
	expired := b.Expire()
	require.Len(t, expired, 1)
	require.Equal(t, aID, expired[0].MemberID)

	testutil.Eventually(t, kgoWait, func() string {
		v := b.describe(group)
		_, bGen := bm.Client.GroupMetadata()
		switch {
		case len(v.Members) != 1 || v.Members[0].MemberID != bID:
			return "B is not alone in the group"
		case v.Generation <= gen || bGen != v.Generation:
			return "B has not rejoined at a new generation"
		case !slices.Equal(bm.Owned()["orders"], []int32{0, 1}):
			return "B does not own both partitions yet"
		}
		return ""
	})
	require.Equal(t, map[string][]int32{"orders": {0}}, a.Owned(), "A was not told")

	kgoProduce(t, b, 0, "r0", "r1", "r2")
	want := []string{"0@0:r0", "0@1:r1", "0@2:r2"}
	for _, m := range []*kgoMember{a, bm} {
		testutil.Eventually(t, kgoWait, func() string {
			if !slices.Equal(m.Records(), want) {
				return m.Name + " has not processed r0-r2"
			}
			return ""
		})
	}

	// A's commit goes out behind a dropped heartbeat; kgo re-dials once
	// its request times out. Removing the fault lets the retries through,
	// and the commit still carries A's old member id and generation.
	done := make(chan kgoCommitResult, 1)
	go func() { done <- kgoCommit(t, a, map[int32]int64{0: 3}) }()
	f.Remove()
	got := <-done
	require.NoError(t, got.Err)
	require.Equal(t, aID, got.Req.MemberID)
	require.Equal(t, gen, got.Req.Generation)
	require.Equal(t, kerr.IllegalGeneration.Code, got.Resp.Topics[0].Partitions[0].ErrorCode)
	_, ok := b.Coordinator().CommittedOffset(group, "orders", 0)
	require.False(t, ok, "the zombie's commit is not stored")

	got = kgoCommit(t, bm, map[int32]int64{0: 3})
	require.Zero(t, got.Resp.Topics[0].Partitions[0].ErrorCode)
	off, ok := b.Coordinator().CommittedOffset(group, "orders", 0)
	require.True(t, ok)
	require.Equal(t, int64(3), off.Offset)
}
