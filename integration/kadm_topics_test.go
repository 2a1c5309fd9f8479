package integration

// franz-go kadm deleting topics while a kgo group consumes them, and
// creating them again.

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minibroker/minibroker/internal/testutil"
)

// TestKadmDeleteTopicUnderConsumer: kadm deletes a topic a kgo group
// subscribes to, beside one it keeps consuming. The group moves to a new
// generation with the reason "topic deleted" and goes on consuming the
// other topic; the group's committed offsets of the deleted topic are
// gone; a second delete is UNKNOWN_TOPIC_OR_PARTITION; the topic created
// again under its name has a new topic id and an empty log.
func TestKadmDeleteTopicUnderConsumer(t *testing.T) {
	t.Parallel()
	b := startBroker(t, kgoConfig(map[string]int32{"orders": 2, "payments": 2}))
	adm := b.admin(t)
	ctx := kadmCtx(t)
	kgoProduceAll(t, b, "payments", "pay", 4)
	m := newKgoMember(t, b, "a", kgoMemberConfig{Group: "g", Topics: []string{"orders", "payments"}})
	testutil.Eventually(t, kgoWait, func() string {
		if owned := m.Owned(); len(owned["orders"]) != 2 || len(owned["payments"]) != 2 {
			return "the member does not own both topics yet"
		}
		return ""
	})
	before := b.describe("g").Generation
	offs := kadm.Offsets{}
	offs.AddOffset("payments", 0, 2, -1)
	offs.AddOffset("orders", 1, 1, -1)
	require.NoError(t, adm.CommitAllOffsets(ctx, "other", offs))
	topics, err := adm.ListTopics(ctx, "payments")
	require.NoError(t, err)
	oldID := topics["payments"].ID

	deleted, err := adm.DeleteTopics(ctx, "payments")
	require.NoError(t, err)
	require.NoError(t, deleted["payments"].Err)
	require.Equal(t, oldID, deleted["payments"].ID)

	v := b.describe("g")
	require.Equal(t, before+1, v.Generation, "the delete is one rebalance: %s", kgoRebalances(b, "g"))
	reasons := []string{}
	for _, r := range b.Logs.Find("rebalance complete") {
		if r.Attrs["group"] == "g" {
			reasons = append(reasons, r.Attrs["reason"])
		}
	}
	require.Contains(t, reasons, "topic deleted")
	for _, mv := range v.Members {
		for _, tp := range mv.Assignment {
			require.Equal(t, "orders", tp.Topic, "the deleted topic is assigned to nobody")
		}
	}
	fetched, err := adm.FetchOffsets(ctx, "other")
	require.NoError(t, err)
	_, kept := fetched.Lookup("orders", 1)
	_, gone := fetched.Lookup("payments", 0)
	require.True(t, kept)
	require.False(t, gone, "the deleted topic's offsets are removed")

	kgoProduceAll(t, b, "orders", "after", 6)
	testutil.Eventually(t, kgoWait, func() string {
		n := 0
		for _, r := range m.Records() {
			if strings.Contains(r, ":after-") {
				n++
			}
		}
		if n < 6 {
			return "the member has not consumed the other topic's new records"
		}
		return ""
	})

	again, err := adm.DeleteTopics(ctx, "payments")
	require.NoError(t, err)
	require.ErrorIs(t, again["payments"].Err, kerr.UnknownTopicOrPartition)

	created, err := adm.CreateTopic(ctx, 3, 1, nil, "payments")
	require.NoError(t, err)
	require.NoError(t, created.Err)
	require.NotEqual(t, oldID, created.ID, "a topic made again is new")
	ends, err := adm.ListEndOffsets(ctx, "payments")
	require.NoError(t, err)
	ends.Each(func(o kadm.ListedOffset) {
		require.Zero(t, o.Offset, "%s-%d: an empty log", o.Topic, o.Partition)
	})
}

// TestKadmCreatePartitionsUnderConsumer: kadm adds partitions to a topic
// two kgo members consume. The group moves to a new generation with the
// reason "partitions added", the members own all the partitions between
// them, and records produced to the new partitions are consumed. Fewer or
// equal partitions, and a count past the broker's cap (100,000 in all), are
// INVALID_PARTITIONS; ValidateOnly changes nothing.
func TestKadmCreatePartitionsUnderConsumer(t *testing.T) {
	t.Parallel()
	b := startBroker(t, kgoConfig(map[string]int32{"orders": 2}))
	adm := b.admin(t)
	ctx := kadmCtx(t)
	m1 := newKgoMember(t, b, "a", kgoMemberConfig{Group: "g", Topics: []string{"orders"}})
	m2 := newKgoMember(t, b, "b", kgoMemberConfig{Group: "g", Topics: []string{"orders"}})
	before := waitKgoConverged(t, b, "g", "orders", 2, m1, m2)

	checked, err := adm.ValidateCreatePartitions(ctx, 3, "orders")
	require.NoError(t, err)
	require.NoError(t, checked["orders"].Err)
	n, _ := b.Catalog().Partitions("orders")
	require.Equal(t, int32(2), n, "validate only")

	added, err := adm.CreatePartitions(ctx, 3, "orders")
	require.NoError(t, err)
	require.NoError(t, added["orders"].Err)
	after := waitKgoConverged(t, b, "g", "orders", 5, m1, m2)
	require.Greater(t, after, before)
	reasons := []string{}
	for _, r := range b.Logs.Find("rebalance complete") {
		if r.Attrs["group"] == "g" {
			reasons = append(reasons, r.Attrs["reason"])
		}
	}
	require.Contains(t, reasons, "partitions added")

	produced := kgoProduceAll(t, b, "orders", "new", 40)
	want := 0
	for p, recs := range produced {
		if p >= 2 {
			want += len(recs)
		}
	}
	require.NotZero(t, want, "some records went to the new partitions")
	testutil.Eventually(t, kgoWait, func() string {
		got := 0
		for _, m := range []*kgoMember{m1, m2} {
			for _, r := range m.Records() {
				if (strings.HasPrefix(r, "2@") || strings.HasPrefix(r, "3@") || strings.HasPrefix(r, "4@")) && strings.Contains(r, ":new-") {
					got++
				}
			}
		}
		if got < want {
			return "the new partitions' records are not all consumed yet"
		}
		return ""
	})

	same, err := adm.UpdatePartitions(ctx, 5, "orders")
	require.NoError(t, err)
	require.ErrorIs(t, same["orders"].Err, kerr.InvalidPartitions)
	fewer, err := adm.UpdatePartitions(ctx, 1, "orders")
	require.NoError(t, err)
	require.ErrorIs(t, fewer["orders"].Err, kerr.InvalidPartitions)
	huge, err := adm.UpdatePartitions(ctx, 100_001, "orders")
	require.NoError(t, err)
	require.ErrorIs(t, huge["orders"].Err, kerr.InvalidPartitions, "past the broker's cap of 100,000 partitions in all")
	require.Contains(t, huge["orders"].ErrMessage, "limit 100000")
	n, _ = b.Catalog().Partitions("orders")
	require.Equal(t, int32(5), n)
}

// TestKadmDeleteRecordsUnderConsumer: kadm moves the log start of a
// partition a kgo group has committed below; ListStartOffsets shows it,
// a delete past the high watermark is OFFSET_OUT_OF_RANGE, and the kgo
// member that then starts from the old commit is refused the deleted
// offsets (OFFSET_OUT_OF_RANGE), resets to the new log start and
// consumes from there: not one deleted record is served.
func TestKadmDeleteRecordsUnderConsumer(t *testing.T) {
	t.Parallel()
	b := startBroker(t, kgoConfig(map[string]int32{"orders": 1}))
	adm := b.admin(t)
	ctx := kadmCtx(t)
	kgoProduceAll(t, b, "orders", "v", 10)
	offs := kadm.Offsets{}
	offs.AddOffset("orders", 0, 2, -1)
	require.NoError(t, adm.CommitAllOffsets(ctx, "g", offs))

	del := kadm.Offsets{}
	del.AddOffset("orders", 0, 6, -1)
	deleted, err := adm.DeleteRecords(ctx, del)
	require.NoError(t, err)
	require.NoError(t, deleted["orders"][0].Err)
	require.Equal(t, int64(6), deleted["orders"][0].LowWatermark)
	starts, err := adm.ListStartOffsets(ctx, "orders")
	require.NoError(t, err)
	start, _ := starts.Lookup("orders", 0)
	require.Equal(t, int64(6), start.Offset)
	past := kadm.Offsets{}
	past.AddOffset("orders", 0, 11, -1)
	refused, err := adm.DeleteRecords(ctx, past)
	require.NoError(t, err)
	require.ErrorIs(t, refused["orders"][0].Err, kerr.OffsetOutOfRange)

	m := newKgoMember(t, b, "a", kgoMemberConfig{Group: "g", Topics: []string{"orders"}})
	testutil.Eventually(t, kgoWait, func() string {
		if len(m.Records()) < 4 {
			return "the member has not consumed the records left"
		}
		return ""
	})
	require.Equal(t, []string{"0@6:v-0006", "0@7:v-0007", "0@8:v-0008", "0@9:v-0009"}, m.Records())
}
