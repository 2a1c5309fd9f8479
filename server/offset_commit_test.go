package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// commitPart is one partition of a commit request.
type commitPart struct {
	topic     string
	partition int32
	offset    int64
	metadata  *string
}

func commitRequest(version int16, group, member string, generation int32, parts ...commitPart) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.MemberID, req.Generation = version, group, member, generation
	for _, p := range parts {
		n := len(req.Topics)
		if n == 0 || req.Topics[n-1].Topic != p.topic {
			req.Topics = append(req.Topics, kmsg.OffsetCommitRequestTopic{Topic: p.topic})
			n++
		}
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.Metadata = p.partition, p.offset, p.metadata
		rp.LeaderEpoch = 4
		req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, rp)
	}
	return req
}

func ptr(s string) *string { return &s }

func TestOffsetCommit(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("m", offsets.MaxMetadataBytes+1)
	tests := []struct {
		name   string
		req    func(member string, gen int32) *kmsg.OffsetCommitRequest
		want   int16
		stored bool
	}{
		{"owner", func(m string, g int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", m, g, commitPart{"orders", 0, 5, ptr("meta")}, commitPart{"orders", 2, 7, nil})
		}, 0, true},
		{"direct", func(string, int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", "", -1, commitPart{"orders", 1, 5, nil}, commitPart{"payments", 0, 1, nil})
		}, 0, true},
		{"v0 is direct", func(string, int32) *kmsg.OffsetCommitRequest {
			return commitRequest(0, "g", "", 0, commitPart{"orders", 1, 5, nil})
		}, 0, true},
		{"direct unknown partition", func(string, int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", "", -1, commitPart{"orders", 1, 5, nil}, commitPart{"orders", 4, 5, nil})
		}, kerr.UnknownTopicOrPartition.Code, false},
		{"direct unknown topic", func(string, int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", "", -1, commitPart{"nope", 0, 5, nil})
		}, kerr.UnknownTopicOrPartition.Code, false},
		{"direct reset sentinels", func(string, int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", "", -1, commitPart{"orders", 0, -1, nil}, commitPart{"orders", 1, -2, nil})
		}, 0, true},
		{"direct offset below -2", func(string, int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", "", -1, commitPart{"orders", 0, -2, nil}, commitPart{"orders", 1, -3, nil})
		}, kerr.OffsetOutOfRange.Code, false},
		{"generation -1 with a member id is not direct", func(m string, _ int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", m, -1, commitPart{"orders", 0, 5, nil})
		}, kerr.IllegalGeneration.Code, false},
		{"stale generation", func(m string, g int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", m, g-1, commitPart{"orders", 0, 5, nil}, commitPart{"orders", 2, 5, nil})
		}, kerr.IllegalGeneration.Code, false},
		{"unknown member", func(_ string, g int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", "c-999999", g, commitPart{"orders", 0, 5, nil})
		}, kerr.UnknownMemberID.Code, false},
		{"unknown group", func(m string, g int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "other", m, g, commitPart{"orders", 0, 5, nil})
		}, kerr.UnknownMemberID.Code, false},
		{"not the owner of one", func(m string, g int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", m, g, commitPart{"orders", 0, 5, nil}, commitPart{"orders", 1, 5, nil}, commitPart{"payments", 0, 5, nil})
		}, kerr.RebalanceInProgress.Code, false},
		{"partition that does not exist", func(m string, g int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", m, g, commitPart{"orders", 0, 5, nil}, commitPart{"orders", 40, 5, nil})
		}, kerr.RebalanceInProgress.Code, false},
		{"reset sentinels", func(m string, g int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", m, g, commitPart{"orders", 0, -2, nil}, commitPart{"orders", 2, -1, nil})
		}, 0, true},
		{"offset below -2", func(m string, g int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", m, g, commitPart{"orders", 0, -1, nil}, commitPart{"orders", 2, -3, nil})
		}, kerr.OffsetOutOfRange.Code, false},
		{"metadata too large", func(m string, g int32) *kmsg.OffsetCommitRequest {
			return commitRequest(9, "g", m, g, commitPart{"orders", 0, 5, &big})
		}, kerr.OffsetMetadataTooLarge.Code, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			a := e.join("c", "g", "", "orders", "payments")
			e.join("c", "g", "", "orders", "payments") // a: orders-0, orders-2, payments-0; b: orders-1, orders-3
			view, _ := e.coord.Describe("g")
			req := tc.req(a.MemberID, view.Generation)
			resp := call[*kmsg.OffsetCommitResponse](e, "c", req)
			for _, code := range wiretest.CommitCodes(t, req, resp) {
				assert.Equal(t, tc.want, code, "every partition carries the one code")
			}
			committed := e.coord.Committed(req.Group)
			if !tc.stored {
				assert.Empty(t, committed, "a rejected commit stores nothing")
				return
			}
			var n int
			for _, rt := range req.Topics {
				n += len(rt.Partitions)
			}
			assert.Len(t, committed, n)
		})
	}
}

func TestOffsetCommitStoresFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, v := range []int16{5, 6} {
		resp := call[*kmsg.OffsetCommitResponse](e, "c", commitRequest(v, fmt.Sprintf("g%d", v), "", -1, commitPart{"orders", 0, 9, ptr("note")}, commitPart{"orders", 1, 3, nil}))
		require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	}
	assert.Equal(t, []offsets.Entry{
		{Topic: "orders", Partition: 0, Offset: 9, Metadata: "note", LeaderEpoch: offsets.NoLeaderEpoch},
		{Topic: "orders", Partition: 1, Offset: 3, LeaderEpoch: offsets.NoLeaderEpoch},
	}, e.coord.Committed("g5"), "before v6 there is no leader epoch")
	assert.Equal(t, []offsets.Entry{
		{Topic: "orders", Partition: 0, Offset: 9, Metadata: "note", LeaderEpoch: 4},
		{Topic: "orders", Partition: 1, Offset: 3, LeaderEpoch: 4},
	}, e.coord.Committed("g6"))
}

// TestOffsetCommitEmptyGroup: a generation commit to a group that lost its
// last member is REBALANCE_IN_PROGRESS (not STABLE), and stores nothing.
func TestOffsetCommitEmptyGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.join("c", "g", "", "orders")
	call[*kmsg.LeaveGroupResponse](e, "c", wiretest.LeaveRequest(5, "g", a.MemberID))
	for _, gen := range []int32{1, 2} {
		req := commitRequest(9, "g", a.MemberID, gen, commitPart{"orders", 0, 5, nil})
		resp := call[*kmsg.OffsetCommitResponse](e, "c", req)
		assert.Equal(t, []int16{kerr.RebalanceInProgress.Code}, wiretest.CommitCodes(t, req, resp), "generation %d", gen)
	}
	assert.Empty(t, e.coord.Committed("g"))
}

// TestOffsetCommitConsumerGroupMember: a KIP-848 member commits with v9+
// (its member epoch in Generation), exactly at its current epoch, and
// only partitions of its current assignment; each rejection names every
// partition and reaches the observer.
func TestOffsetCommitConsumerGroupMember(t *testing.T) {
	t.Parallel()
	e, obs := newObservedEnv(t)
	e.consumerJoin("g", "a", "orders")
	e.consumerJoin("g", "b", "orders") // group epoch 2; a lags at 1 with orders-0, orders-2

	cases := []struct {
		name    string
		version int16
		member  string
		epoch   int32
		parts   []commitPart
		want    *kerr.Error
	}{
		{"before v9", 8, "a", 1, []commitPart{{topic: "orders", partition: 0, offset: 5}}, kerr.UnsupportedVersion},
		{"the group epoch is not a's", 9, "a", 2, []commitPart{{topic: "orders", partition: 0, offset: 5}}, kerr.StaleMemberEpoch},
		{"a partition the target moved away", 9, "a", 1, []commitPart{{topic: "orders", partition: 0, offset: 5}, {topic: "orders", partition: 1, offset: 5}}, kerr.RebalanceInProgress},
		{"an unknown member", 9, "z", 1, []commitPart{{topic: "orders", partition: 0, offset: 5}}, kerr.UnknownMemberID},
	}
	for _, tc := range cases {
		req := commitRequest(tc.version, "g", tc.member, tc.epoch, tc.parts...)
		codes := wiretest.CommitCodes(t, req, call[*kmsg.OffsetCommitResponse](e, "c", req))
		for _, code := range codes {
			assert.Equal(t, tc.want.Code, code, tc.name)
		}
	}
	assert.Empty(t, e.coord.Committed("g"), "nothing stored")

	req := commitRequest(9, "g", "a", 1, commitPart{topic: "orders", partition: 2, offset: 7})
	assert.Equal(t, []int16{0}, wiretest.CommitCodes(t, req, call[*kmsg.OffsetCommitResponse](e, "c", req)), "a keeps orders-2 at its own epoch")
	req = commitRequest(9, "g", "b", 2, commitPart{topic: "orders", partition: 1, offset: 8}, commitPart{topic: "orders", partition: 3, offset: 9})
	assert.Equal(t, []int16{0, 0}, wiretest.CommitCodes(t, req, call[*kmsg.OffsetCommitResponse](e, "c", req)))
	assert.Len(t, e.coord.Committed("g"), 3)

	var codes []int16
	for _, ev := range obs.snapshot().fenced {
		assert.Equal(t, "OffsetCommit", ev.API)
		codes = append(codes, ev.Code)
	}
	assert.Equal(t, []int16{kerr.StaleMemberEpoch.Code, kerr.RebalanceInProgress.Code, kerr.UnknownMemberID.Code}, codes,
		"UNSUPPORTED_VERSION is no fencing")
}

func TestOffsetCommitFencedInstance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	old, current := e.staticRestart("g")
	a := "a"
	commit := func(member string, instance *string) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.MemberID, req.InstanceID, req.Generation = 8, "g", member, instance, 1
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 7}}}}
		resp := call[*kmsg.OffsetCommitResponse](e, "kgo", req)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	assert.Equal(t, kerr.FencedInstanceID.Code, commit(old, &a))
	assert.Equal(t, kerr.UnknownMemberID.Code, commit(old, nil))
	_, ok := e.coord.CommittedOffset("g", "orders", 0)
	assert.False(t, ok)
	assert.Zero(t, commit(current, &a))
	got, ok := e.coord.CommittedOffset("g", "orders", 0)
	require.True(t, ok)
	assert.Equal(t, int64(7), got.Offset)
}
