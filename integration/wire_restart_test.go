package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestWireRestartKeepsOffsetsAndTopics: commits and created topics survive
// a restart on the same data dir; memberships do not.
func TestWireRestartKeepsOffsetsAndTopics(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := startBroker(t, func(cfg *broker.Config) { cfg.DataDir = dir })
	c := wiretest.Dial(t, first.Addr(), "c")
	require.Equal(t, codeNone, wiretest.Do[*kmsg.CreateTopicsResponse](t, c, createTopicsRequest(7, false, newTopic("events", 2, 1))).Topics[0].ErrorCode)
	m := join(t, c, "g", "orders", "events")
	require.Equal(t, []int16{0, 0, 0}, commit(t, c, "g", m.MemberID, m.Generation, tp{"events", 1, 5}, tp{"orders", 0, 10}, tp{"orders", 3, 13}))
	req := commitRequest(9, "manual", "", -1, tp{"payments", 0, 99})
	meta := "checkpoint"
	req.Topics[0].Partitions[0].Metadata = &meta
	req.Topics[0].Partitions[0].LeaderEpoch = 7
	require.Equal(t, []int16{0}, wiretest.Commit(t, c, req))
	c.Close()
	require.NoError(t, first.Close())

	second := startBroker(t, func(cfg *broker.Config) { cfg.DataDir = dir })
	c = wiretest.Dial(t, second.Addr(), "c")
	assert.Equal(t, map[string]int64{"events-0": -1, "events-1": 5, "orders-0": 10, "orders-1": -1, "orders-3": 13},
		fetchOffsets(t, c, "g", tp{"events", 0, 0}, tp{"events", 1, 0}, tp{"orders", 0, 0}, tp{"orders", 1, 0}, tp{"orders", 3, 0}))

	all := kmsg.NewPtrOffsetFetchRequest()
	all.Version = 9
	all.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "manual"}}
	resp := wiretest.Do[*kmsg.OffsetFetchResponse](t, c, all)
	require.Len(t, resp.Groups, 1)
	assert.Equal(t, []wiretest.Offset{{Topic: "payments", Partition: 0, Offset: 99, LeaderEpoch: 7, Metadata: "checkpoint", ErrorCode: 0}}, wiretest.FetchedGroupOffsets(resp.Groups[0].Topics),
		"metadata and leader epoch survive too")

	md := wiretest.Do[*kmsg.MetadataResponse](t, c, metadataRequest(12, nil))
	assert.Equal(t, []string{"events:0:2", "orders:0:4", "payments:0:1"}, metadataTopics(md))

	g := describe(t, c, "g")[0]
	assert.Equal(t, "Empty", g.State, "members are not persisted: the group is known by its offsets")
	assert.Empty(t, g.Members)
	assert.Equal(t, codeUnknownMemberID, heartbeat(t, c, "g", m.MemberID, m.Generation))

	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 5
	var listed []string
	for _, x := range wiretest.Do[*kmsg.ListGroupsResponse](t, c, lg).Groups {
		listed = append(listed, x.Group+":"+x.GroupState)
	}
	assert.Equal(t, []string{"g:Empty", "manual:Empty"}, listed)

	again := join(t, c, "g", "orders")
	assert.Equal(t, int32(1), again.Generation, "generations start over")
	assert.Equal(t, "c-000001", again.MemberID, "and so do member ids")
	require.Equal(t, m.MemberID, again.MemberID)
	require.Equal(t, m.Generation, again.Generation)
	assert.Equal(t, codeNone, heartbeat(t, c, "g", m.MemberID, m.Generation),
		"a member from before the restart is indistinguishable from the new one with the same id and generation")
}
