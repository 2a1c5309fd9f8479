package integration

// franz-go kadm against minibroker: topics, metadata, groups and offsets.

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/coordinator"
)

func kadmCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kgoWait)
	t.Cleanup(cancel)
	return ctx
}

// TestKadmCreateTopics creates topics with kadm and lists them back:
// partitions and replication factor as asked, Kafka's codes for what a
// single broker cannot create, and the catalog saved in the data dir.
func TestKadmCreateTopics(t *testing.T) {
	t.Parallel()
	b := startBroker(t, kgoConfig(map[string]int32{"orders": 4}))
	adm := b.admin(t)
	ctx := kadmCtx(t)

	created, err := adm.CreateTopics(ctx, 3, 1, nil, "events")
	require.NoError(t, err)
	require.NoError(t, created["events"].Err)
	assert.Equal(t, int32(3), created["events"].NumPartitions)
	assert.Equal(t, int16(1), created["events"].ReplicationFactor)

	defaulted, err := adm.CreateTopic(ctx, -1, -1, nil, "defaults")
	require.NoError(t, err, "-1 asks for the broker defaults (KIP-464)")
	assert.Equal(t, int32(1), defaulted.NumPartitions)
	assert.Equal(t, int16(1), defaulted.ReplicationFactor)

	dry, err := adm.ValidateCreateTopics(ctx, 2, 1, nil, "dry-run")
	require.NoError(t, err)
	require.NoError(t, dry["dry-run"].Err)
	assert.Equal(t, int32(2), dry["dry-run"].NumPartitions)

	for _, tc := range []struct {
		name       string
		topic      string
		partitions int32
		rf         int16
		want       error
	}{
		{"existing topic", "orders", 1, 1, kerr.TopicAlreadyExists},
		{"replication factor above the broker count", "replicated", 1, 3, kerr.InvalidReplicationFactor},
		{"no partitions", "empty", 0, 1, kerr.InvalidPartitions},
		{"invalid name", "bad name", 1, 1, kerr.InvalidTopicException},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := adm.CreateTopic(ctx, tc.partitions, tc.rf, nil, tc.topic)
			require.ErrorIs(t, err, tc.want)
			assert.NotEmpty(t, resp.ErrMessage)
		})
	}

	topics, err := adm.ListTopics(ctx)
	require.NoError(t, err)
	require.NoError(t, topics.Error())
	assert.Equal(t, []string{"defaults", "events", "orders"}, topics.Names(), "the dry run created nothing")
	assert.Len(t, topics["events"].Partitions, 3)

	saved, err := catalog.Open(catalog.Config{Dir: b.DataDir()})
	require.NoError(t, err)
	assert.Equal(t, map[string]int32{"defaults": 1, "events": 3, "orders": 4}, saved.Counts(), "CreateTopics persists the catalog")
}

// TestKadmMetadata checks ListTopics and Metadata: this broker as the only
// node, controller and leader of every partition, and
// UNKNOWN_TOPIC_OR_PARTITION for a topic that does not exist.
func TestKadmMetadata(t *testing.T) {
	t.Parallel()
	b := startBroker(t, kgoConfig(map[string]int32{"orders": 4, "payments": 1}))
	adm := b.admin(t)
	ctx := kadmCtx(t)
	host, portText, err := net.SplitHostPort(b.Addr())
	require.NoError(t, err)
	port, err := strconv.Atoi(portText)
	require.NoError(t, err)

	meta, err := adm.Metadata(ctx)
	require.NoError(t, err)
	assert.Equal(t, "minibroker", meta.Cluster)
	assert.Equal(t, int32(0), meta.Controller)
	assert.Equal(t, kadm.BrokerDetails{{NodeID: 0, Host: host, Port: int32(port)}}, meta.Brokers)
	assert.Equal(t, []string{"orders", "payments"}, meta.Topics.Names())

	topics, err := adm.ListTopics(ctx)
	require.NoError(t, err)
	require.NoError(t, topics.Error())
	for name, n := range map[string]int{"orders": 4, "payments": 1} {
		td := topics[name]
		assert.False(t, td.IsInternal)
		require.Len(t, td.Partitions, n, name)
		for p, pd := range td.Partitions {
			assert.NoError(t, pd.Err)
			assert.Equal(t, int32(0), pd.Leader, "%s-%d", name, p)
			assert.Equal(t, []int32{0}, pd.Replicas)
			assert.Equal(t, []int32{0}, pd.ISR)
		}
	}

	unknown, err := adm.ListTopics(ctx, "nope")
	require.NoError(t, err)
	assert.ErrorIs(t, unknown["nope"].Err, kerr.UnknownTopicOrPartition)
}

// TestKadmGroups checks ListGroups and DescribeGroups for a Stable group of
// two kgo members, a group whose only member left (Empty), a group known
// only by its committed offsets (Empty) and a group that does not exist
// (Dead).
func TestKadmGroups(t *testing.T) {
	t.Parallel()
	b := startBroker(t, kgoConfig(map[string]int32{"orders": 4}))
	adm := b.admin(t)
	ctx := kadmCtx(t)

	live := kgoMemberConfig{Group: "live", Topics: []string{"orders"}}
	a := newKgoMember(t, b, "a", live)
	bm := newKgoMember(t, b, "b", live)
	waitKgoConverged(t, b, "live", "orders", 4, a, bm)

	gone := newKgoMember(t, b, "gone", kgoMemberConfig{Group: "left", Topics: []string{"orders"}})
	waitKgoConverged(t, b, "left", "orders", 4, gone)
	gone.Close()
	require.Equal(t, coordinator.Empty, b.describe("left").State)

	offs := kadm.Offsets{}
	offs.AddOffset("orders", 0, 5, -1)
	require.NoError(t, adm.CommitAllOffsets(ctx, "offsets-only", offs))

	t.Run("ListGroups", func(t *testing.T) {
		listed, err := adm.ListGroups(ctx)
		require.NoError(t, err)
		assert.Equal(t, kadm.ListedGroups{
			"live":         {Coordinator: 0, Group: "live", GroupType: "classic", ProtocolType: "consumer", State: "Stable"},
			"left":         {Coordinator: 0, Group: "left", GroupType: "classic", ProtocolType: "consumer", State: "Empty"},
			"offsets-only": {Coordinator: 0, Group: "offsets-only", GroupType: "classic", ProtocolType: "consumer", State: "Empty"},
		}, listed)

		stable, err := adm.ListGroups(ctx, "stable")
		require.NoError(t, err)
		assert.Equal(t, []string{"live"}, stable.Groups(), "the state filter is case-insensitive")
		empty, err := adm.ListGroups(ctx, "Empty")
		require.NoError(t, err)
		assert.Equal(t, []string{"left", "offsets-only"}, empty.Groups())
	})

	t.Run("DescribeGroups", func(t *testing.T) {
		described, err := adm.DescribeGroups(ctx, "live", "left", "nope")
		require.NoError(t, err)
		require.NoError(t, described.Error())

		g := described["live"]
		assert.Equal(t, "Stable", g.State)
		assert.Equal(t, "consumer", g.ProtocolType)
		assert.Equal(t, "roundrobin", g.Protocol)
		require.Len(t, g.Members, 2)
		for i, want := range []struct {
			m     *kgoMember
			parts []int32
		}{{a, []int32{0, 2}}, {bm, []int32{1, 3}}} {
			dm := g.Members[i]
			assert.Equal(t, want.m.MemberID(), dm.MemberID)
			assert.Equal(t, want.m.Name, dm.ClientID)
			assert.Equal(t, "/127.0.0.1", dm.ClientHost)
			assert.Nil(t, dm.InstanceID)
			join, ok := dm.Join.AsConsumer()
			require.True(t, ok)
			assert.Equal(t, []string{"orders"}, join.Topics)
			assigned, ok := dm.Assigned.AsConsumer()
			require.True(t, ok)
			require.Len(t, assigned.Topics, 1)
			assert.Equal(t, "orders", assigned.Topics[0].Topic)
			assert.Equal(t, want.parts, assigned.Topics[0].Partitions)
			assert.Equal(t, want.m.Owned(), map[string][]int32{"orders": want.parts}, "kgo was assigned what DescribeGroups reports")
		}
		assert.Equal(t, kadm.TopicsSet{"orders": {0: {}, 1: {}, 2: {}, 3: {}}}, g.AssignedPartitions())

		assert.Equal(t, "Empty", described["left"].State)
		assert.Equal(t, "consumer", described["left"].ProtocolType)
		assert.Empty(t, described["left"].Members)

		all, err := adm.DescribeGroups(ctx)
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{"left", "live", "offsets-only"}, all.Names(), "with no names, kadm lists the classic groups and describes them all")

		assert.Equal(t, "Dead", described["nope"].State, "an unknown group is Dead with no error before DescribeGroups v6")
		assert.NoError(t, described["nope"].Err)
		assert.Empty(t, described["nope"].Members)
	})
}

// TestKadmOffsets commits with kadm (a commit with no member and no
// generation: minibroker's direct commit) and fetches back with
// FetchOffsets and FetchOffsetsForTopics.
func TestKadmOffsets(t *testing.T) {
	t.Parallel()
	b := startBroker(t, kgoConfig(map[string]int32{"orders": 4, "payments": 1}))
	adm := b.admin(t)
	ctx := kadmCtx(t)

	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 7, LeaderEpoch: 3, Metadata: "checkpoint"})
	offs.Add(kadm.Offset{Topic: "orders", Partition: 2, At: 9, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: "payments", Partition: 0, At: 11, LeaderEpoch: -1})
	committed, err := adm.CommitOffsets(ctx, "manual", offs)
	require.NoError(t, err)
	require.NoError(t, committed.Error())
	assert.Len(t, committed.Sorted(), 3)

	fetched, err := adm.FetchOffsets(ctx, "manual")
	require.NoError(t, err)
	require.NoError(t, fetched.Error())
	got := map[string]kadm.Offset{}
	fetched.Each(func(r kadm.OffsetResponse) {
		o := r.Offset
		o.TopicID = kadm.TopicID{}
		got[o.Topic+"-"+strconv.Itoa(int(o.Partition))] = o
	})
	assert.Equal(t, map[string]kadm.Offset{
		"orders-0":   {Topic: "orders", Partition: 0, At: 7, LeaderEpoch: 3, Metadata: "checkpoint"},
		"orders-2":   {Topic: "orders", Partition: 2, At: 9, LeaderEpoch: -1},
		"payments-0": {Topic: "payments", Partition: 0, At: 11, LeaderEpoch: -1},
	}, got, "FetchOffsets returns every committed offset, its leader epoch and metadata")

	forTopics, err := adm.FetchOffsetsForTopics(ctx, "manual", "orders")
	require.NoError(t, err)
	ats := map[int32]int64{}
	forTopics.Each(func(r kadm.OffsetResponse) { ats[r.Partition] = r.At })
	assert.Equal(t, map[int32]int64{0: 7, 1: -1, 2: 9, 3: -1}, ats, "partitions with no commit read -1")

	none, err := adm.FetchOffsets(ctx, "never-committed")
	require.NoError(t, err)
	assert.Empty(t, none.Sorted(), "an unknown group has no offsets and no error")

	t.Run("unknown topic", func(t *testing.T) {
		// kadm resolves topics through Metadata first, learns that
		// "nope" does not exist, and answers for it without sending.
		bad := kadm.Offsets{}
		bad.AddOffset("nope", 0, 1, -1)
		resp, err := adm.CommitOffsets(ctx, "manual", bad)
		require.NoError(t, err)
		assert.ErrorIs(t, resp.Error(), kerr.UnknownTopicOrPartition)
	})

	t.Run("unknown partition rejects the whole commit", func(t *testing.T) {
		// Kafka answers UNKNOWN_TOPIC_OR_PARTITION for orders-9 alone
		// and stores orders-1. minibroker's commit is all-or-nothing,
		// as the chapter's: every partition carries the code and
		// nothing is stored.
		mixed := kadm.Offsets{}
		mixed.AddOffset("orders", 1, 50, -1)
		mixed.AddOffset("orders", 9, 50, -1)
		resp, err := adm.CommitOffsets(ctx, "manual", mixed)
		require.NoError(t, err)
		errs := map[int32]error{}
		resp.Each(func(r kadm.OffsetResponse) { errs[r.Partition] = r.Err })
		assert.Equal(t, map[int32]error{1: kerr.UnknownTopicOrPartition, 9: kerr.UnknownTopicOrPartition}, errs)
		after, err := adm.FetchOffsets(ctx, "manual")
		require.NoError(t, err)
		_, stored := after.Lookup("orders", 1)
		assert.False(t, stored)
	})

	t.Run("negative offset", func(t *testing.T) {
		// docs/design.md section 4: below -2 is refused (Kafka's
		// coordinator has no such check); -1 and -2, the reset
		// sentinels, are stored and read back as committed.
		neg := kadm.Offsets{}
		neg.AddOffset("orders", 3, -5, -1)
		resp, err := adm.CommitOffsets(ctx, "manual", neg)
		require.NoError(t, err)
		assert.ErrorIs(t, resp.Error(), kerr.OffsetOutOfRange)
		reset := kadm.Offsets{}
		reset.AddOffset("orders", 3, -2, -1)
		resp, err = adm.CommitOffsets(ctx, "manual", reset)
		require.NoError(t, err)
		require.NoError(t, resp.Error())
		fetched, err := adm.FetchOffsets(ctx, "manual")
		require.NoError(t, err)
		got, ok := fetched.Lookup("orders", 3)
		require.True(t, ok)
		assert.Equal(t, int64(-2), got.At)
	})

	t.Run("a live group accepts a commit without member or generation", func(t *testing.T) {
		// Kafka rejects such a commit with UNKNOWN_MEMBER_ID unless the
		// group is Empty; minibroker stores it unfenced, as the
		// chapter's direct commit (docs/design.md section 2).
		m := newKgoMember(t, b, "a", kgoMemberConfig{Group: "busy", Topics: []string{"orders"}})
		waitKgoConverged(t, b, "busy", "orders", 4, m)
		direct := kadm.Offsets{}
		direct.AddOffset("orders", 1, 77, -1)
		resp, err := adm.CommitOffsets(ctx, "busy", direct)
		require.NoError(t, err)
		require.NoError(t, resp.Error())
		fetched, err := adm.FetchOffsets(ctx, "busy")
		require.NoError(t, err)
		o, ok := fetched.Lookup("orders", 1)
		require.True(t, ok)
		assert.Equal(t, int64(77), o.At)
	})
}
