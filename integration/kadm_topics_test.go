package integration_test

// franz-go kadm deleting topics while a kgo group consumes them, and
// creating them again.

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestKadmDeleteTopicUnderConsumer: kadm deletes a topic a kgo group
// subscribes to, beside one it keeps consuming. The group moves to a new
// generation with the reason "topic deleted" and goes on consuming the
// other topic; the group's committed offsets of the deleted topic are
// gone; a second delete is UNKNOWN_TOPIC_OR_PARTITION; the topic created
// again under its name has a new topic id and an empty log.
func TestKadmDeleteTopicUnderConsumer(t *testing.T) {
	t.Parallel()
	b := startBroker(t, kgoConfig(t, map[string]int32{"orders": 2, "payments": 2}))
	adm := b.admin(t)
	ctx := kadmCtx(t)
	kgoProduceAll(t, b, "payments", "pay", 4)
	m := newKgoMember(t, b, "a", kgoMemberConfig{Group: "g", Topics: []string{"orders", "payments"}})
	kgoEventually(t, kgoWait, func() string {
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
	require.Equal(t, before+1, v.Generation)
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
	kgoEventually(t, kgoWait, func() string {
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
