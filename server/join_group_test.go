package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

func TestSubscribedTopics(t *testing.T) {
	t.Parallel()
	full := kmsg.NewConsumerMemberMetadata()
	full.Version = 3
	full.Topics = []string{"orders", "payments"}
	full.UserData = []byte("user")
	full.OwnedPartitions = []kmsg.ConsumerMemberMetadataOwnedPartition{{Topic: "orders", Partitions: []int32{0, 2}}}
	full.Generation = 7
	rack := "r1"
	full.Rack = &rack

	// Version 3 declared, but only the version and topics sent: some
	// clients send less than their version implies.
	short := kbin.AppendInt16(nil, 3)
	short = kbin.AppendArrayLen(short, 1)
	short = kbin.AppendString(short, "orders")

	tests := []struct {
		name     string
		metadata []byte
		want     []string
	}{
		{"v0", wiretest.ConsumerMetadata(0, "orders"), []string{"orders"}},
		{"v3 with everything", full.AppendTo(nil), []string{"orders", "payments"}},
		{"truncated after topics", short, []string{"orders"}},
		{"truncated user data", append(short, 0, 0, 0, 9, 'x'), []string{"orders"}},
		{"no topics", wiretest.ConsumerMetadata(1), []string{}},
		{"nil", nil, nil},
		{"only a version", []byte{0, 1}, nil},
		{"garbage", []byte{0xde, 0xad, 0xbe}, nil},
		{"negative topic count", []byte{0, 0, 0xff, 0xff, 0xff, 0xff}, nil},
		{"topic count past the end", []byte{0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 1, 'a'}, nil},
		{"topic name truncated", []byte{0, 0, 0, 0, 0, 1, 0, 9, 'o', 'r'}, nil},
		{"second topic truncated", append(kbin.AppendString(kbin.AppendArrayLen([]byte{0, 0}, 2), "orders"), 0, 5), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, subscribedTopics(tc.metadata))
		})
	}
}

func TestJoinGroupMemberIDRequired(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	resp := call[*kmsg.JoinGroupResponse](e, "kgo", joinRequest(9, "g", "", "orders"))
	assert.Equal(t, kerr.MemberIDRequired.Code, resp.ErrorCode)
	assert.Equal(t, "kgo-000001", resp.MemberID)
	assert.Equal(t, int32(-1), resp.Generation)
	assert.Nil(t, resp.ProtocolType)
	assert.Nil(t, resp.Protocol)
	assert.Empty(t, resp.LeaderID)

	resp = call[*kmsg.JoinGroupResponse](e, "kgo", joinRequest(9, "g", "kgo-000001", "orders"))
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, "kgo-000001", resp.MemberID)
	assert.Equal(t, int32(1), resp.Generation)
	require.NotNil(t, resp.ProtocolType)
	assert.Equal(t, "consumer", *resp.ProtocolType)
	require.NotNil(t, resp.Protocol)
	assert.Equal(t, "roundrobin", *resp.Protocol)
	assert.Equal(t, "kgo-000001", resp.LeaderID)
	assert.False(t, resp.SkipAssignment)
	require.Len(t, resp.Members, 1)
	assert.Equal(t, "kgo-000001", resp.Members[0].MemberID)
	assert.Equal(t, wiretest.ConsumerMetadata(0, "orders"), resp.Members[0].ProtocolMetadata)
}

func TestJoinGroupErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		req        func() *kmsg.JoinGroupRequest
		wantCode   int16
		wantMember string
	}{
		{"empty group id", func() *kmsg.JoinGroupRequest { return joinRequest(5, "", "", "orders") },
			kerr.InvalidGroupID.Code, ""},
		{"session below min", func() *kmsg.JoinGroupRequest {
			r := joinRequest(5, "g", "", "orders")
			r.SessionTimeoutMillis = 9
			return r
		}, kerr.InvalidSessionTimeout.Code, ""},
		{"not a consumer", func() *kmsg.JoinGroupRequest {
			r := joinRequest(5, "g", "x-1", "orders")
			r.ProtocolType = "connect"
			return r
		}, kerr.InconsistentGroupProtocol.Code, ""},
		{"no protocols", func() *kmsg.JoinGroupRequest {
			r := joinRequest(5, "g", "x-1", "orders")
			r.Protocols = nil
			return r
		}, kerr.InconsistentGroupProtocol.Code, ""},
		{"empty protocol name", func() *kmsg.JoinGroupRequest {
			r := joinRequest(5, "g", "", "orders")
			r.Protocols[0].Name = ""
			return r
		}, kerr.InconsistentGroupProtocol.Code, ""},
		{"unknown topic", func() *kmsg.JoinGroupRequest { return joinRequest(5, "g", "", "nope") },
			kerr.UnknownTopicOrPartition.Code, ""},
		{"unknown member keeps its id", func() *kmsg.JoinGroupRequest { return joinRequest(5, "g", "x-1", "orders") },
			kerr.UnknownMemberID.Code, "x-1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			resp := call[*kmsg.JoinGroupResponse](e, "c", tc.req())
			assert.Equal(t, tc.wantCode, resp.ErrorCode)
			assert.Equal(t, tc.wantMember, resp.MemberID)
			assert.Equal(t, int32(-1), resp.Generation)
			assert.Empty(t, resp.Members)
		})
	}
}

// TestJoinGroupShortMetadataSubscribes: metadata that stops after the
// topic list still subscribes, so the member is assigned partitions.
func TestJoinGroupShortMetadataSubscribes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	short := kbin.AppendArrayLen(kbin.AppendInt16(nil, 3), 1)
	short = kbin.AppendString(short, "payments")
	req := joinRequest(3, "g", "")
	req.Protocols[0].Metadata = short
	resp := call[*kmsg.JoinGroupResponse](e, "c", req)
	require.Zero(t, resp.ErrorCode)
	view, _ := e.coord.Describe("g")
	require.Len(t, view.Members, 1)
	assert.Equal(t, []string{"payments"}, view.Members[0].Topics)
	assert.Equal(t, "payments-0", view.Members[0].Assignment[0].String())
	assert.Equal(t, short, view.Members[0].Metadata, "the metadata is kept as sent")
}

func TestJoinGroupRecordsClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	req := joinRequest(0, "g", "", "orders")
	req.SessionTimeoutMillis = 12345
	e.srv.handleJoinGroup(e.req("my-client", 0), req)
	view, _ := e.coord.Describe("g")
	require.Len(t, view.Members, 1)
	m := view.Members[0]
	assert.Equal(t, "my-client-000001", m.MemberID)
	assert.Equal(t, "my-client", m.ClientID)
	assert.Equal(t, "/127.0.0.1", m.ClientHost)
	assert.Equal(t, 12345*time.Millisecond, m.SessionTimeout)
}

func TestJoinGroupRefreshAndRejoin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.join("c", "g", "", "orders")
	b := e.join("c", "g", "", "orders")
	require.Equal(t, int32(2), b.Generation)
	assert.Empty(t, b.Members, "a follower gets no member list")
	assert.Equal(t, a.MemberID, b.LeaderID)

	again := e.join("c", "g", b.MemberID, "orders")
	assert.Equal(t, int32(2), again.Generation, "an unchanged re-join is a refresh")
	leader := e.join("c", "g", a.MemberID, "orders")
	assert.Equal(t, int32(2), leader.Generation, "the leader's too")
	require.Len(t, leader.Members, 2, "the leader gets every member")
	assert.Equal(t, []string{a.MemberID, b.MemberID}, []string{leader.Members[0].MemberID, leader.Members[1].MemberID})

	changed := e.join("c", "g", b.MemberID, "orders", "payments")
	assert.Equal(t, int32(3), changed.Generation, "a changed subscription is a new generation")
}

func TestJoinGroupStaticMemberRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	resp := call[*kmsg.JoinGroupResponse](e, "kgo", staticJoinRequest(5, "g", "", "a", "orders"))
	require.Zero(t, resp.ErrorCode, "a static member joins at once: no MEMBER_ID_REQUIRED")
	assert.Equal(t, "a-000001", resp.MemberID)
	assert.Equal(t, int32(1), resp.Generation)

	resp = call[*kmsg.JoinGroupResponse](e, "kgo", staticJoinRequest(5, "g", "", "a", "orders"))
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, "a-000002", resp.MemberID)
	assert.Equal(t, int32(1), resp.Generation, "a restart is no new generation")
	assert.Equal(t, "a-000002", resp.LeaderID)

	resp = call[*kmsg.JoinGroupResponse](e, "kgo", staticJoinRequest(5, "g", "a-000001", "a", "orders"))
	assert.Equal(t, kerr.FencedInstanceID.Code, resp.ErrorCode, "the previous run re-joining")
	assert.Equal(t, int32(-1), resp.Generation)

	resp = call[*kmsg.JoinGroupResponse](e, "kgo", staticJoinRequest(5, "g", "", "a", "orders", "payments"))
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, "a-000003", resp.MemberID)
	assert.Equal(t, int32(2), resp.Generation, "another subscription is a new generation")
}
