package integration

// Real requests of many elements, as kadm sends them, at the default
// memory budget: each is served, whole, with its exact answer, and the
// budget refuses nothing. What a request holds beyond its frame is
// counted from its elements (server/amplification.go), so a request of
// ten thousand 40-byte names reserves what they hold, not what ten
// thousand empty ones would.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/broker"
)

// largeRequestTimeout bounds each of the large requests on a loaded
// machine.
const largeRequestTimeout = 2 * time.Minute

// longName is the i-th of n 40-byte names with prefix.
func longName(prefix string, i int) string {
	n := fmt.Sprintf("%s-%0*d", prefix, 39-len(prefix), i)
	if len(n) != 40 {
		panic(n)
	}
	return n
}

// longNames returns n distinct 40-byte names.
func longNames(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = longName(prefix, i)
	}
	return names
}

// largeAdmin returns a kadm client for b that waits up to
// largeRequestTimeout for each answer (kgo's default is 10 s beyond a
// request's own timeout).
func largeAdmin(t *testing.T, b *testBroker) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID("admin"), kgo.RequestTimeoutOverhead(largeRequestTimeout))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(largeRequestTimeout / time.Millisecond))
	return adm
}

// requireNoRefusals fails the test if the broker's budget refused a
// request.
func requireNoRefusals(t *testing.T, b *testBroker) {
	t.Helper()
	st := b.MemoryStats()
	require.Zero(t, st.Frames.Refusals+st.Work.Refusals, "requests refused by the memory budget: %+v", st)
}

// TestLargeAdminRequestsAreServed: CreateTopics of 10,000 topics of
// 40-byte names, Metadata naming them, DescribeGroups of 10,000 groups
// (and the FindCoordinator of 10,000 keys kgo sends first) and DeleteTopics
// of 10,000 40-byte names, at the default budget: each is answered for
// every element, with its exact code and values.
func TestLargeAdminRequestsAreServed(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(cfg *broker.Config) { cfg.DataDir = "" }) // 10,000 partitions: more than the disk's open-file limit allows
	adm := largeAdmin(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 4*largeRequestTimeout)
	defer cancel()
	topics := longNames("topic", 10_000)

	start := time.Now()
	created, err := adm.CreateTopics(ctx, 1, 1, nil, topics...)
	require.NoError(t, err)
	t.Logf("created 10,000 topics in %v", time.Since(start))
	require.Len(t, created, len(topics))
	for _, name := range topics {
		c, ok := created[name]
		require.True(t, ok, "%s answered", name)
		require.NoError(t, c.Err, name)
		require.Equal(t, int32(1), c.NumPartitions, name)
		require.Equal(t, int16(1), c.ReplicationFactor, name)
	}

	md, err := adm.Metadata(ctx, topics...)
	require.NoError(t, err)
	require.Len(t, md.Topics, len(topics))
	for _, name := range topics {
		td, ok := md.Topics[name]
		require.True(t, ok, "%s answered", name)
		require.NoError(t, td.Err, name)
		require.Len(t, td.Partitions, 1, name)
		require.NotEqual(t, kadm.TopicID{}, td.ID, name)
	}

	groups := longNames("group", 10_000)
	described, err := adm.DescribeGroups(ctx, groups...)
	require.NoError(t, err)
	require.Len(t, described, len(groups))
	for _, g := range groups {
		d, ok := described[g]
		require.True(t, ok, "%s answered", g)
		require.NoError(t, d.Err, g)
		assert.Equal(t, "Dead", d.State, "%s: a group nobody joined", g)
		assert.Empty(t, d.Members, g)
	}

	// Names no topic has: each is answered with an error and its message,
	// the most a name holds (deleting 10,000 real topics takes the broker
	// 4 ms each, which the gate cannot afford).
	gone := longNames("gone", 10_000)
	deleted, err := adm.DeleteTopics(ctx, gone...)
	require.NoError(t, err)
	require.Len(t, deleted, len(gone))
	for _, name := range gone {
		d, ok := deleted[name]
		require.True(t, ok, "%s answered", name)
		require.ErrorIs(t, d.Err, kerr.UnknownTopicOrPartition, name)
	}
	requireNoRefusals(t, b)
}

// TestLargeCommitAndFetchAreServed: an OffsetCommit of 100,000
// partitions (1,000 topics of 40-byte names, 100 partitions each: the
// catalog's limit) and the OffsetFetch of them back, in the flexible
// versions kgo sends, at the default budget: every partition is
// committed and fetched with its offset and metadata.
func TestLargeCommitAndFetchAreServed(t *testing.T) {
	t.Parallel()
	topics := longNames("commit", 1_000)
	b := startBroker(t, func(cfg *broker.Config) {
		cfg.DataDir = "" // 100,000 partitions: more than the disk's open-file limit allows
		cfg.Topics = map[string]int32{}
		for _, topic := range topics {
			cfg.Topics[topic] = 100
		}
	})
	adm := largeAdmin(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 2*largeRequestTimeout)
	defer cancel()
	want := kadm.Offsets{}
	for i, topic := range topics {
		for p := range int32(100) {
			want.Add(kadm.Offset{Topic: topic, Partition: p, At: int64(i)*1000 + int64(p), LeaderEpoch: -1, Metadata: "m"})
		}
	}
	committed, err := adm.CommitOffsets(ctx, "wide", want)
	require.NoError(t, err)
	require.NoError(t, committed.Error())
	n := 0
	committed.Each(func(r kadm.OffsetResponse) {
		n++
		require.NoError(t, r.Err, "%s %d", r.Topic, r.Partition)
	})
	require.Equal(t, 100_000, n, "partitions answered")

	fetched, err := adm.FetchOffsets(ctx, "wide")
	require.NoError(t, err)
	require.NoError(t, fetched.Error())
	n = 0
	fetched.Each(func(r kadm.OffsetResponse) {
		n++
		w, ok := want.Lookup(r.Topic, r.Partition)
		require.True(t, ok, "%s %d was committed", r.Topic, r.Partition)
		require.Equal(t, w.At, r.At, "%s %d", r.Topic, r.Partition)
		require.Equal(t, "m", r.Metadata, "%s %d", r.Topic, r.Partition)
	})
	require.Equal(t, 100_000, n, "partitions fetched")
	requireNoRefusals(t, b)
}
