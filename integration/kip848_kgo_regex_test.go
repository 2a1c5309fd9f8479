package integration

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestK848KgoRegexConsumerPicksUpNewTopic: a kgo consumer with
// kgo.ConsumeRegex on the consumer protocol sends SubscribedTopicRegex;
// the broker matches it against the catalog at every heartbeat, so a
// topic created while the consumer runs is a subscription change (a new
// group epoch) and its partitions reach the consumer.
func TestK848KgoRegexConsumerPicksUpNewTopic(t *testing.T) {
	t.Parallel()
	b := startBroker(t, k848RealClock)
	m := k848Start(t, b, "g", "regex", kgo.RangeBalancer(), []string{"orders.*"}, kgo.ConsumeRegex())
	v := k848AwaitConverged(t, b, "g", m)
	require.Equal(t, map[string][]int32{"orders": {0, 1, 2, 3}}, m.assigned())
	require.NotEmpty(t, v.Members[0].Regex, "kgo sent a regex")
	require.Empty(t, v.Members[0].Topics, "and no names")

	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "orders-eu", 2, 1
	req.Topics = append(req.Topics, rt)
	resp := wiretest.Do[*kmsg.CreateTopicsResponse](t, wiretest.Dial(t, b.Addr(), "admin"), req)
	require.Zero(t, resp.Topics[0].ErrorCode)

	want := map[string][]int32{"orders": {0, 1, 2, 3}, "orders-eu": {0, 1}}
	eventually(t, func() bool { return maps.EqualFunc(m.assigned(), want, slices.Equal) },
		fmt.Sprintf("the regex consumer never got %v", want))
	now := k848AwaitConverged(t, b, "g", m)
	require.Equal(t, v.Generation+1, now.Generation, "the new topic was one subscription change")
	require.Equal(t, []string{"orders", "orders-eu"}, now.Members[0].Matched)
}
