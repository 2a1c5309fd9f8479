package broker

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestInjectFaultNoneSurvivesARestart: a fault applies to the requests
// it matches on the broker's wire and is listed with its hit; a bad one
// is refused; a broker started again on the same data dir has none.
func TestInjectFaultNoneSurvivesARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := Start(t.Context(), Config{DataDir: dir, Topics: map[string]int32{"orders": 1}, ManualClock: true})
	require.NoError(t, err)
	_, err = b.InjectFault(Fault{Keys: []int16{12}, Drop: true, Close: true})
	require.ErrorContains(t, err, "exactly one action")
	f, err := b.InjectFault(Fault{Keys: []int16{8}, Group: "g", Err: kerr.NotCoordinator.Code})
	require.NoError(t, err)

	c := wiretest.Dial(t, b.Addr(), "test")
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 8, "g", -1
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 4}}}}
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	resp, err := c.Request(ctx, req)
	require.NoError(t, err)
	require.Equal(t, kerr.NotCoordinator.Code, resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode)
	require.NoError(t, f.Wait(ctx))
	list := b.Faults()
	require.Len(t, list, 1)
	require.Equal(t, int64(1), list[0].Hits)
	require.Zero(t, list[0].Remaining)
	_, ok := b.Coordinator().CommittedOffset("g", "orders", 0)
	require.False(t, ok, "the faulted commit was not applied")
	require.NoError(t, b.Close())

	again := start(t, Config{DataDir: dir, ManualClock: true})
	require.Empty(t, again.Faults(), "faults live in memory only")
}

// TestInjectFaultWarnsOfWhatDoesNotExist: through the broker's own
// coordinator and catalog, a fault naming a member that has not joined
// and a topic it lacks is put in force with warnings that say so; once
// the member joins (member ids are the client id and a sequence) and the
// topic exists, it has none, and it applies to the member's heartbeat.
func TestInjectFaultWarnsOfWhatDoesNotExist(t *testing.T) {
	t.Parallel()
	b := start(t, Config{Topics: map[string]int32{"orders": 1}, ManualClock: true})
	f, err := b.InjectFault(Fault{Keys: []int16{12}, Group: "billing", Member: "billing-app-000001", Err: kerr.RebalanceInProgress.Code, Count: -1})
	require.NoError(t, err, "a fault may come before its target")
	require.Equal(t, []string{`no group "billing" now, so no member "billing-app-000001" in it`}, f.Warnings())
	typo, err := b.InjectFault(Fault{Keys: []int16{1}, Topic: "order", Err: kerr.NotLeaderForPartition.Code})
	require.NoError(t, err)
	require.Equal(t, []string{`no topic "order" now`}, typo.Warnings())
	require.Equal(t, []string{`no topic "order" now`}, b.Faults()[1].Warnings)

	c := wiretest.Dial(t, b.Addr(), "billing-app")
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.ProtocolType, join.SessionTimeoutMillis = 3, "billing", "consumer", 30_000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: (&kmsg.ConsumerMemberMetadata{Topics: []string{"orders"}}).AppendTo(nil)}}
	resp, err := c.Request(ctx, join)
	require.NoError(t, err)
	joined := resp.(*kmsg.JoinGroupResponse)
	require.Zero(t, joined.ErrorCode)
	require.Equal(t, "billing-app-000001", joined.MemberID)
	require.Nil(t, f.Warnings(), "the member it names has joined")
	require.NoError(t, b.CreateTopic("order", 1))
	require.Nil(t, typo.Warnings())

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.Generation = 3, "billing", joined.MemberID, joined.Generation
	got, err := c.Request(ctx, hb)
	require.NoError(t, err)
	require.Equal(t, kerr.RebalanceInProgress.Code, got.(*kmsg.HeartbeatResponse).ErrorCode)
	require.Equal(t, int64(1), f.Hits())
}
