package integration

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestK848MetadataTopicIDsStableAcrossRestart: the consumer protocol names
// topics by id, so Metadata v10+ carries each topic's id: non-zero,
// distinct, the same on every request and after a restart on the same data
// dir, and the one heartbeat assignments use. Before v10 there is none.
func TestK848MetadataTopicIDsStableAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	onDir := func(cfg *broker.Config) { cfg.DataDir = dir }
	b := startBroker(t, onDir)
	c := wiretest.Dial(t, b.Addr(), "k848")
	ids := k848TopicIDs(t, c)
	require.Equal(t, []string{"orders", "payments"}, slices.Sorted(maps.Keys(ids)))
	assert.NotZero(t, ids["orders"])
	assert.NotZero(t, ids["payments"])
	assert.NotEqual(t, ids["orders"], ids["payments"])
	assert.Equal(t, ids, k848TopicIDs(t, c), "the same on every request")
	require.NoError(t, b.CreateTopic("invoices", 2, nil))
	created := k848TopicIDs(t, c)
	assert.NotZero(t, created["invoices"])
	assert.NotContains(t, []([16]byte){ids["orders"], ids["payments"]}, created["invoices"])

	resp := k848Join(t, c, "g", "a", "uniform", "orders", "invoices")
	assert.Equal(t, map[string][]int32{"invoices": {0, 1}, "orders": {0, 1, 2, 3}}, k848Parts(t, created, resp.Assignment))

	for _, v := range []int16{10, 11, 12} {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
		mr := wiretest.Do[*kmsg.MetadataResponse](t, c, req)
		require.Len(t, mr.Topics, 1)
		assert.Equal(t, ids["orders"], mr.Topics[0].TopicID, "v%d", v)
	}
	c.Close()
	require.NoError(t, b.Close())

	again := startBroker(t, onDir)
	assert.Equal(t, created, k848TopicIDs(t, wiretest.Dial(t, again.Addr(), "k848")), "kept in the data dir")
}
