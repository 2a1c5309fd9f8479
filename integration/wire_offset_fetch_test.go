package integration

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// seedOffsets commits, directly and at v9 (leader epochs), to "g":
// orders-0 = 10 (epoch 3, metadata "m"), orders-2 = 12, and to "h":
// payments-0 = 1.
func seedOffsets(t *testing.T, b *testBroker) {
	t.Helper()
	c := wiretest.Dial(t, b.Addr(), "seed")
	req := commitRequest(9, "g", "", -1, tp{"orders", 0, 10}, tp{"orders", 2, 12})
	meta := "m"
	req.Topics[0].Partitions[0].Metadata = &meta
	req.Topics[0].Partitions[0].LeaderEpoch = 3
	require.Equal(t, []int16{0, 0}, wiretest.Commit(t, c, req))
	require.Equal(t, []int16{0}, commit(t, c, "h", "", -1, tp{"payments", 0, 1}))
}

// TestWireOffsetFetchV1 answers the named partitions, per partition: no
// commit, an unknown topic or an unknown group is -1 with NONE.
func TestWireOffsetFetchV1(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	seedOffsets(t, b)
	c := wiretest.Dial(t, b.Addr(), "c")
	for _, group := range []string{"g", "unknown"} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group = 1, group
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{2, 1, 0}}, {Topic: "nope", Partitions: []int32{0}}}
		resp := wiretest.Do[*kmsg.OffsetFetchResponse](t, c, req)
		want := []wiretest.Offset{
			{Topic: "orders", Partition: 2, Offset: 12, LeaderEpoch: -1, Metadata: "", ErrorCode: 0},
			{Topic: "orders", Partition: 1, Offset: -1, LeaderEpoch: -1, Metadata: "", ErrorCode: 0},
			{Topic: "orders", Partition: 0, Offset: 10, LeaderEpoch: -1, Metadata: "m", ErrorCode: 0}, // no leader epoch before v5
			{Topic: "nope", Partition: 0, Offset: -1, LeaderEpoch: -1, Metadata: "", ErrorCode: 0},
		}
		if group == "unknown" {
			want[0].Offset, want[2].Offset, want[2].Metadata = -1, -1, ""
		}
		assert.Equal(t, want, wiretest.FetchedOffsets(resp.Topics), group)
	}
}

// TestWireOffsetFetchAll: from v2, null topics means every committed
// offset of the group; an empty list means none.
func TestWireOffsetFetchAll(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	seedOffsets(t, b)
	c := wiretest.Dial(t, b.Addr(), "c")
	for v := int16(2); v <= 7; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			epoch := int32(-1)
			if v >= 5 {
				epoch = 3
			}
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Version, req.Group, req.Topics = v, "g", nil
			resp := wiretest.Do[*kmsg.OffsetFetchResponse](t, c, req)
			assert.Equal(t, codeNone, resp.ErrorCode)
			assert.Equal(t, []wiretest.Offset{{Topic: "orders", Partition: 0, Offset: 10, LeaderEpoch: epoch, Metadata: "m", ErrorCode: 0}, {Topic: "orders", Partition: 2, Offset: 12, LeaderEpoch: -1, Metadata: "", ErrorCode: 0}}, wiretest.FetchedOffsets(resp.Topics))

			req.Group = "unknown"
			resp = wiretest.Do[*kmsg.OffsetFetchResponse](t, c, req)
			assert.Empty(t, resp.Topics, "an unknown group has nothing")

			req.Group, req.Topics = "g", []kmsg.OffsetFetchRequestTopic{}
			resp = wiretest.Do[*kmsg.OffsetFetchResponse](t, c, req)
			assert.Empty(t, resp.Topics, "an empty list asks for nothing")
		})
	}
}

// TestWireOffsetFetchGroups: v8+ fetch several groups at once, each with
// named or null (all) topics.
func TestWireOffsetFetchGroups(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	seedOffsets(t, b)
	c := wiretest.Dial(t, b.Addr(), "c")
	for _, v := range []int16{8, 9} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = v
		req.Groups = []kmsg.OffsetFetchRequestGroup{
			{Group: "h", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "payments", Partitions: []int32{0}}, {Topic: "orders", Partitions: []int32{0}}}},
			{Group: "g"},
			{Group: "unknown", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "orders", Partitions: []int32{3}}}},
			{Group: "unknown-all"},
		}
		if v == 9 {
			req.Groups[1].MemberID, req.Groups[1].MemberEpoch = ptrTo("ignored"), 99
		}
		resp := wiretest.Do[*kmsg.OffsetFetchResponse](t, c, req)
		require.Len(t, resp.Groups, 4, "v%d", v)
		for i, g := range req.Groups {
			assert.Equal(t, g.Group, resp.Groups[i].Group)
			assert.Equal(t, codeNone, resp.Groups[i].ErrorCode)
		}
		assert.Equal(t, []wiretest.Offset{{Topic: "payments", Partition: 0, Offset: 1, LeaderEpoch: -1, Metadata: "", ErrorCode: 0}, {Topic: "orders", Partition: 0, Offset: -1, LeaderEpoch: -1, Metadata: "", ErrorCode: 0}}, wiretest.FetchedGroupOffsets(resp.Groups[0].Topics))
		assert.Equal(t, []wiretest.Offset{{Topic: "orders", Partition: 0, Offset: 10, LeaderEpoch: 3, Metadata: "m", ErrorCode: 0}, {Topic: "orders", Partition: 2, Offset: 12, LeaderEpoch: -1, Metadata: "", ErrorCode: 0}}, wiretest.FetchedGroupOffsets(resp.Groups[1].Topics),
			"v%d: member id and epoch are ignored for classic groups", v)
		assert.Equal(t, []wiretest.Offset{{Topic: "orders", Partition: 3, Offset: -1, LeaderEpoch: -1, Metadata: "", ErrorCode: 0}}, wiretest.FetchedGroupOffsets(resp.Groups[2].Topics))
		assert.Empty(t, resp.Groups[3].Topics)
	}
}

func ptrTo[T any](v T) *T { return &v }
