package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

func offsetFetchRequest(version int16, group string, topics map[string][]int32, order ...string) *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group = version, group
	if topics != nil {
		req.Topics = []kmsg.OffsetFetchRequestTopic{}
		for _, t := range order {
			req.Topics = append(req.Topics, kmsg.OffsetFetchRequestTopic{Topic: t, Partitions: topics[t]})
		}
	}
	return req
}

func newFetchEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	require.NoError(t, e.coord.CommitDirect("g", []offsets.Entry{
		{Topic: "orders", Partition: 0, Offset: 10, Metadata: "m0", LeaderEpoch: 3},
		{Topic: "orders", Partition: 2, Offset: 12, LeaderEpoch: offsets.NoLeaderEpoch},
		{Topic: "payments", Partition: 0, Offset: 1, LeaderEpoch: 5},
	}))
	return e
}

func TestOffsetFetchNamedPartitions(t *testing.T) {
	t.Parallel()
	e := newFetchEnv(t)
	named := map[string][]int32{"payments": {0}, "orders": {2, 1}, "nope": {0}}
	want := []wiretest.Offset{
		{Topic: "payments", Partition: 0, Offset: 1, LeaderEpoch: 5},
		{Topic: "orders", Partition: 2, Offset: 12, LeaderEpoch: -1},
		{Topic: "orders", Partition: 1, Offset: -1, LeaderEpoch: -1}, // no commit: -1, NONE
		{Topic: "nope", Partition: 0, Offset: -1, LeaderEpoch: -1},   // unknown topic: the same
	}
	for _, v := range []int16{1, 2, 5, 7} {
		resp := call[*kmsg.OffsetFetchResponse](e, "c", offsetFetchRequest(v, "g", named, "payments", "orders", "nope"))
		assert.Zero(t, resp.ErrorCode)
		assert.Equal(t, want, wiretest.FetchedOffsets(resp.Topics), "v%d: request order, every partition", v)
	}

	resp := call[*kmsg.OffsetFetchResponse](e, "c", offsetFetchRequest(3, "unknown", named, "payments", "orders", "nope"))
	for _, f := range wiretest.FetchedOffsets(resp.Topics) {
		assert.Equal(t, int64(-1), f.Offset, "an unknown group has no offsets")
		assert.Zero(t, f.ErrorCode)
	}
	assert.Len(t, wiretest.FetchedOffsets(resp.Topics), 4)
}

// TestOffsetFetchResetSentinels: a committed -1 or -2 (the offsets a
// client commits when it resets) comes back as committed, with its
// metadata and leader epoch, named or listed (Kafka answers the same); a
// partition without a commit is -1 too, without a leader epoch.
func TestOffsetFetchResetSentinels(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	resp := call[*kmsg.OffsetCommitResponse](e, "c", commitRequest(7, "g", "", -1, commitPart{"orders", 0, -2, ptr("reset")}, commitPart{"orders", 1, -1, nil}))
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	require.Zero(t, resp.Topics[0].Partitions[1].ErrorCode)
	want := []wiretest.Offset{
		{Topic: "orders", Partition: 0, Offset: -2, LeaderEpoch: 4, Metadata: "reset"},
		{Topic: "orders", Partition: 1, Offset: -1, LeaderEpoch: 4},
	}
	named := call[*kmsg.OffsetFetchResponse](e, "c", offsetFetchRequest(7, "g", map[string][]int32{"orders": {0, 1, 2}}, "orders"))
	assert.Equal(t, append(want, wiretest.Offset{Topic: "orders", Partition: 2, Offset: -1, LeaderEpoch: -1}), wiretest.FetchedOffsets(named.Topics))
	all := call[*kmsg.OffsetFetchResponse](e, "c", offsetFetchRequest(7, "g", nil))
	assert.Equal(t, want, wiretest.FetchedOffsets(all.Topics), "null topics lists the sentinels as commits")
}

func TestOffsetFetchDuplicateTopicsMerge(t *testing.T) {
	t.Parallel()
	e := newFetchEnv(t)
	req := offsetFetchRequest(3, "g", map[string][]int32{})
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{0}}, {Topic: "orders", Partitions: []int32{2}}}
	resp := call[*kmsg.OffsetFetchResponse](e, "c", req)
	require.Len(t, resp.Topics, 1)
	assert.Equal(t, []wiretest.Offset{
		{Topic: "orders", Partition: 0, Offset: 10, LeaderEpoch: 3, Metadata: "m0"},
		{Topic: "orders", Partition: 2, Offset: 12, LeaderEpoch: -1},
	}, wiretest.FetchedOffsets(resp.Topics))
}

func TestOffsetFetchAll(t *testing.T) {
	t.Parallel()
	e := newFetchEnv(t)
	all := []wiretest.Offset{
		{Topic: "orders", Partition: 0, Offset: 10, LeaderEpoch: 3, Metadata: "m0"},
		{Topic: "orders", Partition: 2, Offset: 12, LeaderEpoch: -1},
		{Topic: "payments", Partition: 0, Offset: 1, LeaderEpoch: 5},
	}
	for _, v := range []int16{2, 7} {
		resp := call[*kmsg.OffsetFetchResponse](e, "c", offsetFetchRequest(v, "g", nil))
		assert.Equal(t, all, wiretest.FetchedOffsets(resp.Topics), "v%d: null topics = every committed offset", v)
		resp = call[*kmsg.OffsetFetchResponse](e, "c", offsetFetchRequest(v, "g", map[string][]int32{}))
		assert.Empty(t, resp.Topics, "v%d: an empty list is none", v)
		resp = call[*kmsg.OffsetFetchResponse](e, "c", offsetFetchRequest(v, "unknown", nil))
		assert.Empty(t, resp.Topics, "v%d: an unknown group has nothing", v)
	}
	resp := call[*kmsg.OffsetFetchResponse](e, "c", offsetFetchRequest(1, "g", nil))
	assert.Empty(t, resp.Topics, "v1 has no null topics: nothing asked, nothing answered")
}

func TestOffsetFetchGroups(t *testing.T) {
	t.Parallel()
	e := newFetchEnv(t)
	require.NoError(t, e.coord.CommitDirect("h", []offsets.Entry{{Topic: "orders", Partition: 3, Offset: 33, LeaderEpoch: -1}}))
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 9
	req.Groups = []kmsg.OffsetFetchRequestGroup{
		{Group: "g"}, // null topics: all
		{Group: "h", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "orders", Partitions: []int32{3, 0}}}},
		{Group: "unknown", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "orders", Partitions: []int32{1}}}},
		{Group: "empty list", Topics: []kmsg.OffsetFetchRequestGroupTopic{}},
	}
	resp := call[*kmsg.OffsetFetchResponse](e, "c", req)
	require.Len(t, resp.Groups, 4)
	for i, g := range req.Groups {
		assert.Equal(t, g.Group, resp.Groups[i].Group, "groups in request order")
		assert.Zero(t, resp.Groups[i].ErrorCode)
	}
	assert.Equal(t, []wiretest.Offset{
		{Topic: "orders", Partition: 0, Offset: 10, LeaderEpoch: 3, Metadata: "m0"},
		{Topic: "orders", Partition: 2, Offset: 12, LeaderEpoch: -1},
		{Topic: "payments", Partition: 0, Offset: 1, LeaderEpoch: 5},
	}, wiretest.FetchedGroupOffsets(resp.Groups[0].Topics))
	assert.Equal(t, []wiretest.Offset{
		{Topic: "orders", Partition: 3, Offset: 33, LeaderEpoch: -1},
		{Topic: "orders", Partition: 0, Offset: -1, LeaderEpoch: -1},
	}, wiretest.FetchedGroupOffsets(resp.Groups[1].Topics))
	assert.Equal(t, []wiretest.Offset{{Topic: "orders", Partition: 1, Offset: -1, LeaderEpoch: -1}},
		wiretest.FetchedGroupOffsets(resp.Groups[2].Topics))
	assert.Empty(t, resp.Groups[3].Topics)
	assert.Empty(t, resp.Topics, "v8+ answers in Groups only")
}
