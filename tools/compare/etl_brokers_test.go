package compare

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/tools/lab"
	"github.com/minibroker/minibroker/wireclient"
)

// TestCompareETLBrokersHeartbeat: both brokers StartETLBrokers starts tell
// a consumer-protocol member the heartbeat interval asked for.
func TestCompareETLBrokersHeartbeat(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	addrs, stop, err := StartETLBrokers(ctx, 150*time.Millisecond)
	require.NoError(t, err)
	defer stop()
	for _, side := range Sides() {
		require.NoError(t, lab.EnsureTopics(ctx, addrs[side], map[string]int32{"etl-beat": 1}), side)
		conn, err := wireclient.Dial(ctx, addrs[side], "etl-test")
		require.NoError(t, err, side)
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberID = lab.ConsumerGroupHeartbeatVersion, "etl-beat", "etl-beat-member-0000000001"
		req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 10_000, []string{"etl-beat"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp, err := lab.Request[*kmsg.ConsumerGroupHeartbeatResponse](ctx, conn, req)
		conn.Close()
		require.NoError(t, err, side)
		require.Zero(t, resp.ErrorCode, side)
		require.Equal(t, int32(150), resp.HeartbeatIntervalMillis, side)
	}
}
