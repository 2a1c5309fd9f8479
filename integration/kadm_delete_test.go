package integration

// franz-go kadm deleting groups and offsets, and offsets retention seen
// through kadm.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/coordinator"
)

// TestKadmDeleteGroups: kadm's DeleteGroups deletes the Empty groups (one
// a kgo consumer left, one known only by offsets kadm committed) and
// reports Kafka's errors for the others; ListGroups and FetchOffsets then
// show nothing of the deleted ones.
func TestKadmDeleteGroups(t *testing.T) {
	t.Parallel()
	b := startBroker(t, kgoConfig(map[string]int32{"orders": 4}))
	adm := b.admin(t)
	ctx := kadmCtx(t)

	live := newKgoMember(t, b, "a", kgoMemberConfig{Group: "live", Topics: []string{"orders"}})
	waitKgoConverged(t, b, "live", "orders", 4, live)
	gone := newKgoMember(t, b, "gone", kgoMemberConfig{Group: "left", Topics: []string{"orders"}})
	waitKgoConverged(t, b, "left", "orders", 4, gone)
	gone.Close()
	require.Equal(t, coordinator.Empty, b.describe("left").State)
	offs := kadm.Offsets{}
	offs.AddOffset("orders", 0, 5, -1)
	require.NoError(t, adm.CommitAllOffsets(ctx, "offsets-only", offs))
	require.NoError(t, adm.CommitAllOffsets(ctx, "left", offs))

	deleted, err := adm.DeleteGroups(ctx, "left", "offsets-only", "live", "nope")
	require.NoError(t, err)
	assert.NoError(t, deleted["left"].Err)
	assert.NoError(t, deleted["offsets-only"].Err)
	assert.ErrorIs(t, deleted["live"].Err, kerr.NonEmptyGroup)
	assert.ErrorIs(t, deleted["nope"].Err, kerr.GroupIDNotFound)

	listed, err := adm.ListGroups(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"live"}, listed.Groups())
	for _, g := range []string{"left", "offsets-only"} {
		fetched, err := adm.FetchOffsets(ctx, g)
		require.NoError(t, err)
		assert.Empty(t, fetched.Offsets(), g)
	}
	_, err = adm.DeleteGroup(ctx, "left")
	assert.ErrorIs(t, err, kerr.GroupIDNotFound, "deleted already")
	assert.Equal(t, coordinator.Stable, b.describe("live").State, "the group with a member is untouched")
}

// TestKadmDeleteOffsets: kadm's DeleteOffsets removes the offsets of
// topics no member subscribes to and reports GROUP_SUBSCRIBED_TO_TOPIC
// for the others; an unknown group is GROUP_ID_NOT_FOUND.
func TestKadmDeleteOffsets(t *testing.T) {
	t.Parallel()
	b := startBroker(t, kgoConfig(map[string]int32{"orders": 4, "payments": 1}))
	adm := b.admin(t)
	ctx := kadmCtx(t)
	live := newKgoMember(t, b, "a", kgoMemberConfig{Group: "live", Topics: []string{"orders"}})
	waitKgoConverged(t, b, "live", "orders", 4, live)
	offs := kadm.Offsets{}
	offs.AddOffset("orders", 1, 5, -1)
	offs.AddOffset("payments", 0, 9, -1)
	require.NoError(t, adm.CommitAllOffsets(ctx, "live", offs))

	resp, err := adm.DeleteOffsets(ctx, "live", kadm.TopicsSet{"orders": {1: {}}, "payments": {0: {}}})
	require.NoError(t, err)
	ordersErr, ok := resp.Lookup("orders", 1)
	require.True(t, ok)
	assert.ErrorIs(t, ordersErr, kerr.GroupSubscribedToTopic)
	paymentsErr, ok := resp.Lookup("payments", 0)
	require.True(t, ok)
	assert.NoError(t, paymentsErr)

	fetched, err := adm.FetchOffsets(ctx, "live")
	require.NoError(t, err)
	kept, ok := fetched.Lookup("orders", 1)
	require.True(t, ok)
	assert.Equal(t, int64(5), kept.At)
	_, ok = fetched.Lookup("payments", 0)
	assert.False(t, ok, "payments-0 was deleted")

	_, err = adm.DeleteOffsets(ctx, "nope", kadm.TopicsSet{"orders": {0: {}}})
	assert.ErrorIs(t, err, kerr.GroupIDNotFound)
}

// TestKadmOffsetsRetention: with --offsets-retention on the manual clock,
// offsets kadm committed are there one millisecond before the retention
// and gone, with their group, at the expiry step after it.
func TestKadmOffsetsRetention(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(cfg *broker.Config) {
		cfg.Topics, cfg.DataDir, cfg.OffsetsRetention = map[string]int32{"orders": 4}, "", 24*time.Hour
	})
	adm := b.admin(t)
	ctx := kadmCtx(t)
	_, err := b.Advance(time.Second) // a commit at Unix 0 carries no commit time
	require.NoError(t, err)
	offs := kadm.Offsets{}
	offs.AddOffset("orders", 2, 7, -1)
	require.NoError(t, adm.CommitAllOffsets(ctx, "manual", offs))

	_, err = b.Advance(24*time.Hour - time.Millisecond)
	require.NoError(t, err)
	b.Expire()
	fetched, err := adm.FetchOffsets(ctx, "manual")
	require.NoError(t, err)
	kept, ok := fetched.Lookup("orders", 2)
	require.True(t, ok)
	assert.Equal(t, int64(7), kept.At)

	_, err = b.Advance(time.Millisecond)
	require.NoError(t, err)
	b.Expire()
	fetched, err = adm.FetchOffsets(ctx, "manual")
	require.NoError(t, err)
	assert.Empty(t, fetched.Offsets())
	listed, err := adm.ListGroups(ctx)
	require.NoError(t, err)
	assert.Empty(t, listed.Groups())
	_, err = adm.DeleteGroup(ctx, "manual")
	assert.ErrorIs(t, err, kerr.GroupIDNotFound)
}
