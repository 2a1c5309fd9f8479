package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

func TestWireOffsetCommit(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 4097)
	limit := strings.Repeat("x", 4096)
	tests := []struct {
		name   string
		req    func(a, b string, gen int32) *kmsg.OffsetCommitRequest
		want   int16
		stored map[string]int64 // nil: nothing stored
	}{
		{"owner", func(a, _ string, gen int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", a, gen, tp{"orders", 0, 10}, tp{"orders", 2, 20})
		}, codeNone, map[string]int64{"orders-0": 10, "orders-2": 20}},
		{"stale generation", func(a, _ string, gen int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", a, gen-1, tp{"orders", 0, 10}, tp{"orders", 2, 20})
		}, codeIllegalGeneration, nil},
		{"future generation", func(a, _ string, gen int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", a, gen+1, tp{"orders", 0, 10})
		}, codeIllegalGeneration, nil},
		{"not the owner of every partition", func(a, _ string, gen int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", a, gen, tp{"orders", 0, 10}, tp{"orders", 1, 11}, tp{"orders", 2, 12})
		}, codeRebalanceInProgress, nil},
		{"another member's partitions only", func(_, b string, gen int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", b, gen, tp{"orders", 0, 10}, tp{"orders", 2, 12})
		}, codeRebalanceInProgress, nil},
		{"a partition that does not exist", func(a, _ string, gen int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", a, gen, tp{"orders", 0, 10}, tp{"orders", 9, 12})
		}, codeRebalanceInProgress, nil},
		{"an unsubscribed topic", func(a, _ string, gen int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", a, gen, tp{"orders", 0, 10}, tp{"payments", 0, 12})
		}, codeRebalanceInProgress, nil},
		{"the reset sentinels", func(a, _ string, gen int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", a, gen, tp{"orders", 0, -2}, tp{"orders", 2, -1})
		}, codeNone, map[string]int64{"orders-0": -2, "orders-2": -1}},
		{"offset -3", func(a, _ string, gen int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", a, gen, tp{"orders", 0, -2}, tp{"orders", 2, -3})
		}, codeOffsetOutOfRange, nil},
		{"metadata over 4096 bytes", func(a, _ string, gen int32) *kmsg.OffsetCommitRequest {
			req := commitRequest(9, "g", a, gen, tp{"orders", 0, 10}, tp{"orders", 2, 20})
			req.Topics[0].Partitions[1].Metadata = &big
			return req
		}, codeOffsetMetadataTooLarge, nil},
		{"metadata of exactly 4096 bytes", func(a, _ string, gen int32) *kmsg.OffsetCommitRequest {
			req := commitRequest(9, "g", a, gen, tp{"orders", 0, 10})
			req.Topics[0].Partitions[0].Metadata = &limit
			return req
		}, codeNone, map[string]int64{"orders-0": 10}},
		{"metadata that is not UTF-8", func(a, _ string, gen int32) *kmsg.OffsetCommitRequest {
			req := commitRequest(9, "g", a, gen, tp{"orders", 0, 10}, tp{"orders", 2, 20})
			req.Topics[0].Partitions[0].Metadata = ptrTo("\xff")
			return req
		}, codeInvalidRequest, nil},
		{"unknown member", func(_, _ string, gen int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", "c-999999", gen, tp{"orders", 0, 10})
		}, codeUnknownMemberID, nil},
		{"unknown member, stale generation", func(_, _ string, gen int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", "c-999999", gen-1, tp{"orders", 0, 10})
		}, codeIllegalGeneration, nil},
		{"generation -1 with a member id", func(a, _ string, _ int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", a, -1, tp{"orders", 0, 10})
		}, codeIllegalGeneration, nil},
		{"unknown group", func(a, _ string, gen int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "nope", a, gen, tp{"orders", 0, 10})
		}, codeUnknownMemberID, nil},
		{"v1 with a generation", func(a, _ string, gen int32) *kmsg.OffsetCommitRequest {
			return commitRequest(1, "g", a, gen, tp{"orders", 2, 7})
		}, codeNone, map[string]int64{"orders-2": 7}},
		{"v1 stale", func(a, _ string, gen int32) *kmsg.OffsetCommitRequest {
			return commitRequest(1, "g", a, gen-1, tp{"orders", 2, 7})
		}, codeIllegalGeneration, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t)
			c := wiretest.Dial(t, b.Addr(), "c")
			a := join(t, c, "g", "orders")
			bb := join(t, c, "g", "orders")
			req := tc.req(a.MemberID, bb.MemberID, bb.Generation)
			n := 0
			for _, rt := range req.Topics {
				n += len(rt.Partitions)
			}
			assert.Equal(t, repeat(tc.want, n), wiretest.Commit(t, c, req), "one code on every requested partition")

			got := fetchOffsets(t, c, req.Group, tp{"orders", 0, 0}, tp{"orders", 1, 0}, tp{"orders", 2, 0}, tp{"orders", 3, 0}, tp{"payments", 0, 0})
			want := map[string]int64{"orders-0": -1, "orders-1": -1, "orders-2": -1, "orders-3": -1, "payments-0": -1}
			for k, v := range tc.stored {
				want[k] = v
			}
			assert.Equal(t, want, got, "a rejected commit stores nothing")
		})
	}
}

// TestWireOffsetCommitDirect: generation -1 with an empty member id (and
// every v0 commit) is a direct commit: stored without fencing. An unknown
// topic or partition rejects the whole commit with
// UNKNOWN_TOPIC_OR_PARTITION on every partition.
func TestWireOffsetCommitDirect(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	all := []tp{{"orders", 0, 0}, {"orders", 1, 0}, {"payments", 0, 0}}

	assert.Equal(t, []int16{0, 0}, commit(t, c, "manual", "", -1, tp{"orders", 1, 5}, tp{"payments", 0, 6}))
	assert.Equal(t, map[string]int64{"orders-0": -1, "orders-1": 5, "payments-0": 6}, fetchOffsets(t, c, "manual", all...))

	assert.Equal(t, repeat(codeUnknownTopicOrPartition, 3),
		commit(t, c, "manual", "", -1, tp{"orders", 0, 9}, tp{"orders", 4, 9}, tp{"payments", 0, 9}), "partition 4 of orders(4)")
	assert.Equal(t, repeat(codeUnknownTopicOrPartition, 2), commit(t, c, "manual", "", -1, tp{"orders", 0, 9}, tp{"nope", 0, 9}))
	assert.Equal(t, repeat(codeOffsetOutOfRange, 2), commit(t, c, "manual", "", -1, tp{"orders", 0, 9}, tp{"orders", 1, -3}))
	assert.Equal(t, map[string]int64{"orders-0": -1, "orders-1": 5, "payments-0": 6}, fetchOffsets(t, c, "manual", all...),
		"rejected direct commits store nothing")

	// The reset sentinels are stored and read back as committed.
	assert.Equal(t, []int16{0, 0}, commit(t, c, "manual", "", -1, tp{"orders", 1, -2}, tp{"payments", 0, -1}))
	assert.Equal(t, map[string]int64{"orders-0": -1, "orders-1": -2, "payments-0": -1}, fetchOffsets(t, c, "manual", all...))

	assert.Equal(t, []int16{0}, wiretest.Commit(t, c, commitRequest(0, "v0", "", 0, tp{"orders", 0, 3})), "v0 has no generation")
	assert.Equal(t, map[string]int64{"orders-0": 3}, fetchOffsets(t, c, "v0", tp{"orders", 0, 0}))

	g := describe(t, c, "manual")[0]
	assert.Equal(t, "Empty", g.State, "a group known only by its offsets is Empty")
}

// TestWireOffsetCommitDirectToActiveGroup: a direct commit is stored even
// while the group has members, and overrides the owner's offsets. Kafka
// accepts generation -1 commits only while the group is Empty
// (UNKNOWN_MEMBER_ID otherwise).
func TestWireOffsetCommitDirectToActiveGroup(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	a := join(t, c, "g", "orders")
	require.Equal(t, repeat(codeNone, 1), commit(t, c, "g", a.MemberID, a.Generation, tp{"orders", 0, 10}))
	assert.Equal(t, repeat(codeNone, 1), commit(t, c, "g", "", -1, tp{"orders", 0, 3}))
	assert.Equal(t, map[string]int64{"orders-0": 3}, fetchOffsets(t, c, "g", tp{"orders", 0, 0}))
}

// TestWireOffsetCommitEmptyGroup: once the last member has left, a
// generation commit is REBALANCE_IN_PROGRESS (the group is not Stable),
// even with the current generation.
func TestWireOffsetCommitEmptyGroup(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	a := join(t, c, "g", "orders")
	require.Equal(t, codeNone, wiretest.Do[*kmsg.LeaveGroupResponse](t, c, wiretest.LeaveRequest(5, "g", a.MemberID)).ErrorCode)
	for _, gen := range []int32{1, 2, 3} {
		assert.Equal(t, repeat(codeRebalanceInProgress, 2), commit(t, c, "g", a.MemberID, gen, tp{"orders", 0, 1}, tp{"orders", 1, 1}),
			"generation %d", gen)
	}
	assert.Equal(t, map[string]int64{"orders-0": -1}, fetchOffsets(t, c, "g", tp{"orders", 0, 0}))
}

// TestWireOffsetCommitNamesEveryPartition: the response lists every
// requested topic and partition in request order, including duplicates
// and partitions that do not exist.
func TestWireOffsetCommitNamesEveryPartition(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	req := commitRequest(9, "g", "", -1, tp{"payments", 0, 1}, tp{"orders", 3, 1}, tp{"orders", 1, 1}, tp{"nope", 7, 1}, tp{"orders", 3, 2})
	resp := wiretest.Do[*kmsg.OffsetCommitResponse](t, c, req)
	var got []string
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			got = append(got, fmt.Sprintf("%s:%d", rt.Topic, p.Partition))
			assert.Equal(t, codeUnknownTopicOrPartition, p.ErrorCode)
		}
	}
	assert.Equal(t, []string{"payments:0", "orders:3", "orders:1", "nope:7", "orders:3"}, got)
}
