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
