package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestHostileGroupMaxSize: with --max-group-size 2, a third member's join
// gets GROUP_MAX_SIZE_REACHED with an empty member id (as Kafka answers),
// whether it asks for an id (v4+) or joins at once (v0-3); the members
// keep heartbeating, re-join as a refresh, and a leave frees a place.
func TestHostileGroupMaxSize(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(cfg *broker.Config) { cfg.MaxGroupSize = 2 })
	c := wiretest.Dial(t, b.Addr(), "c")
	first := join(t, c, "g", "orders")
	second := join(t, c, "g", "orders")

	for _, version := range []int16{9, 3} {
		resp := wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(version, "g", "", "orders"))
		assert.Equal(t, kerr.GroupMaxSizeReached.Code, resp.ErrorCode, "v%d", version)
		assert.Empty(t, resp.MemberID, "v%d", version)
	}
	assert.Equal(t, codeNone, heartbeat(t, c, "g", first.MemberID, second.Generation))
	again := rejoin(t, c, "g", second.MemberID, "orders")
	assert.Equal(t, codeNone, again.ErrorCode, "a member's re-join is not a new member")
	assert.Equal(t, second.Generation, again.Generation)

	leave := wiretest.Do[*kmsg.LeaveGroupResponse](t, c, wiretest.LeaveRequest(5, "g", second.MemberID))
	require.Equal(t, codeNone, leave.ErrorCode)
	third := join(t, c, "g", "orders")
	assert.Equal(t, second.Generation+2, third.Generation)
}

// TestHostileMaxGroups: with --max-groups 2, a join or a direct commit
// that would make a third group gets POLICY_VIOLATION (Kafka has no such
// limit), and stores nothing; the two groups are served as before.
func TestHostileMaxGroups(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(cfg *broker.Config) { cfg.MaxGroups = 2 })
	c := wiretest.Dial(t, b.Addr(), "c")
	member := join(t, c, "joined", "orders")
	require.Equal(t, []int16{codeNone}, wiretest.Commit(t, c, directCommit("manual", "orders", 0, 5)))

	resp := wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(9, "third", "", "orders"))
	assert.Equal(t, kerr.PolicyViolation.Code, resp.ErrorCode)
	assert.Equal(t, []int16{kerr.PolicyViolation.Code}, wiretest.Commit(t, c, directCommit("third", "orders", 0, 5)))
	assert.Equal(t, map[string]int64{"orders-0": -1}, fetchOffsets(t, c, "third", tp{"orders", 0, 0}))
	assert.Equal(t, "Dead", describe(t, c, "third")[0].State)

	assert.Equal(t, codeNone, heartbeat(t, c, "joined", member.MemberID, member.Generation))
	assert.Equal(t, []int16{codeNone}, wiretest.Commit(t, c, directCommit("manual", "orders", 1, 6)))
	assert.Equal(t, []int16{codeNone}, commit(t, c, "joined", member.MemberID, member.Generation, tp{"orders", 2, 7}))
}

// TestHostileIDsAndNames: over-long or non-text ids and invalid topic
// names get the codes Kafka uses for each kind of id, on every API that
// takes them, and nothing is created or stored.
func TestHostileIDsAndNames(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	member := join(t, c, "g", "orders")
	longGroup := strings.Repeat("g", coordinator.DefaultMaxIDBytes+1)
	longMember := strings.Repeat("m", coordinator.DefaultMaxIDBytes+coordinator.MemberIDSlackBytes+1)

	t.Run("group ids", func(t *testing.T) {
		for _, group := range []string{longGroup, "bad\xffutf8", "line\nbreak"} {
			assert.Equal(t, codeInvalidGroupID, wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(9, group, "", "orders")).ErrorCode, "join %q", group)
			assert.Equal(t, codeInvalidGroupID, heartbeat(t, c, group, member.MemberID, member.Generation), "heartbeat %q", group)
			assert.Equal(t, codeInvalidGroupID, wiretest.Do[*kmsg.SyncGroupResponse](t, c, wiretest.SyncRequest(5, group, member.MemberID, member.Generation)).ErrorCode, "sync %q", group)
			assert.Equal(t, codeInvalidGroupID, wiretest.Do[*kmsg.LeaveGroupResponse](t, c, wiretest.LeaveRequest(5, group, member.MemberID)).ErrorCode, "leave %q", group)
			assert.Equal(t, []int16{codeInvalidGroupID}, wiretest.Commit(t, c, directCommit(group, "orders", 0, 1)), "direct commit %q", group)
			assert.Equal(t, []int16{codeInvalidGroupID}, commit(t, c, group, member.MemberID, member.Generation, tp{"orders", 0, 1}), "commit %q", group)
		}
		at := strings.Repeat("g", coordinator.DefaultMaxIDBytes)
		assert.Equal(t, codeMemberIDRequired, wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(9, at, "", "orders")).ErrorCode, "the limit is inclusive")
		assert.Equal(t, []int16{codeNone}, wiretest.Commit(t, c, directCommit("", "orders", 0, 1)), "OffsetCommit accepts the empty group id, as Kafka does")
	})
	t.Run("member ids", func(t *testing.T) {
		assert.Equal(t, codeInvalidRequest, wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(9, "g", longMember, "orders")).ErrorCode)
		assert.Equal(t, codeInvalidRequest, heartbeat(t, c, "g", longMember, member.Generation))
		assert.Equal(t, codeInvalidRequest, wiretest.Do[*kmsg.SyncGroupResponse](t, c, wiretest.SyncRequest(5, "g", "tab\there", member.Generation)).ErrorCode)
		assert.Equal(t, []int16{codeInvalidRequest}, commit(t, c, "g", longMember, member.Generation, tp{"orders", 0, 1}))
		resp := wiretest.Do[*kmsg.LeaveGroupResponse](t, c, wiretest.LeaveRequest(5, "g", longMember))
		assert.Equal(t, codeNone, resp.ErrorCode, "leave stays idempotent: an id that cannot exist is not a member")
	})
	t.Run("client ids", func(t *testing.T) {
		long := wiretest.Dial(t, b.Addr(), strings.Repeat("c", coordinator.DefaultMaxIDBytes+1))
		assert.Equal(t, codeInvalidRequest, wiretest.Do[*kmsg.JoinGroupResponse](t, long, joinRequest(9, "g", "", "orders")).ErrorCode)
		assert.Equal(t, codeNone, wiretest.Do[*kmsg.ApiVersionsResponse](t, long, apiVersionsRequest(3)).ErrorCode, "only a join keeps the client id")
		at := wiretest.Dial(t, b.Addr(), strings.Repeat("c", coordinator.DefaultMaxIDBytes))
		resp := wiretest.Do[*kmsg.JoinGroupResponse](t, at, joinRequest(9, "g", "", "orders"))
		assert.Equal(t, codeMemberIDRequired, resp.ErrorCode)
		assert.Len(t, resp.MemberID, coordinator.DefaultMaxIDBytes+7, "client id, '-', six digits")
	})
	t.Run("topic names", func(t *testing.T) {
		for _, topic := range []string{"bad name", strings.Repeat("t", 250), ".."} {
			assert.Equal(t, codeInvalidTopicException, wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(9, "g", "", topic)).ErrorCode, "subscribe %q", topic)
			create := kmsg.NewPtrCreateTopicsRequest()
			create.Version = 7
			create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}}
			assert.Equal(t, codeInvalidTopicException, wiretest.Do[*kmsg.CreateTopicsResponse](t, c, create).Topics[0].ErrorCode, "create %q", topic)
			assert.Equal(t, []int16{codeUnknownTopicOrPartition}, wiretest.Commit(t, c, directCommit("m", topic, 0, 1)), "commit to %q, as Kafka", topic)
		}
		assert.Equal(t, codeUnknownTopicOrPartition, wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(9, "g", "", "valid-but-absent")).ErrorCode)
	})
	t.Run("partitions", func(t *testing.T) {
		create := kmsg.NewPtrCreateTopicsRequest()
		create.Version = 7
		create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "huge", NumPartitions: 1 << 30, ReplicationFactor: 1}}
		assert.Equal(t, codeInvalidPartitions, wiretest.Do[*kmsg.CreateTopicsResponse](t, c, create).Topics[0].ErrorCode)
		md := wiretest.Do[*kmsg.MetadataResponse](t, c, metadataRequest(12, nil))
		assert.Equal(t, []string{"orders:0:4", "payments:0:1"}, metadataTopics(md), "nothing was created")
	})
	assert.Equal(t, codeNone, heartbeat(t, c, "g", member.MemberID, member.Generation), "the member was never disturbed")
}

// TestHostileConfiguredIDLimit: --max-id-bytes bounds group and client
// ids (member ids may be 32 bytes longer).
func TestHostileConfiguredIDLimit(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(cfg *broker.Config) { cfg.MaxIDBytes = 16 })
	c := wiretest.Dial(t, b.Addr(), "c")
	assert.Equal(t, codeInvalidGroupID, wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(9, strings.Repeat("g", 17), "", "orders")).ErrorCode)
	assert.Equal(t, []int16{codeInvalidGroupID}, wiretest.Commit(t, c, directCommit(strings.Repeat("g", 17), "orders", 0, 1)))
	long := wiretest.Dial(t, b.Addr(), strings.Repeat("c", 17))
	assert.Equal(t, codeInvalidRequest, wiretest.Do[*kmsg.JoinGroupResponse](t, long, joinRequest(9, "g", "", "orders")).ErrorCode)
	at := wiretest.Dial(t, b.Addr(), strings.Repeat("c", 16))
	member := join(t, at, strings.Repeat("g", 16), "orders")
	assert.Equal(t, codeNone, heartbeat(t, at, strings.Repeat("g", 16), member.MemberID, member.Generation))
}

// TestHostileCommitMetadataLimit: commit metadata over
// --max-metadata-bytes (Kafka's offset.metadata.max.bytes) gets
// OFFSET_METADATA_TOO_LARGE on every partition and stores nothing; at the
// limit it is stored.
func TestHostileCommitMetadataLimit(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(cfg *broker.Config) { cfg.MaxMetadataBytes = 16 })
	c := wiretest.Dial(t, b.Addr(), "c")
	req := func(meta string) *kmsg.OffsetCommitRequest {
		r := commitRequest(9, "m", "", -1, tp{"orders", 0, 5}, tp{"orders", 1, 6})
		r.Topics[0].Partitions[1].Metadata = &meta
		return r
	}
	assert.Equal(t, []int16{codeOffsetMetadataTooLarge, codeOffsetMetadataTooLarge}, wiretest.Commit(t, c, req(strings.Repeat("x", 17))))
	assert.Equal(t, map[string]int64{"orders-0": -1, "orders-1": -1}, fetchOffsets(t, c, "m", tp{"orders", 0, 0}, tp{"orders", 1, 0}))
	assert.Equal(t, []int16{codeNone, codeNone}, wiretest.Commit(t, c, req(strings.Repeat("x", 16))))
}

// TestHostileIdleAndStalledConnections: over the wire, with short
// --idle-timeout and --frame-read-timeout, an idle connection and one
// stalled inside a frame are both closed, while a client that keeps
// heartbeating is served throughout.
func TestHostileIdleAndStalledConnections(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(cfg *broker.Config) {
		cfg.IdleTimeout, cfg.FrameReadTimeout = 300*time.Millisecond, 300*time.Millisecond
	})
	good := wiretest.Dial(t, b.Addr(), "good")
	member := join(t, good, "g", "orders")
	idle := wiretest.Dial(t, b.Addr(), "idle")
	stalled := wiretest.Dial(t, b.Addr(), "stalled")
	frame := formatted(wiretest.HeartbeatRequest(4, "g", member.MemberID, member.Generation), 1)
	require.NoError(t, stalled.Send(frame[:len(frame)/2]))

	closed := make(chan string, 2)
	for name, c := range map[string]interface{ ReadFrame() ([]byte, error) }{"idle": idle, "stalled": stalled} {
		go func() { // owns c's reads
			_, _ = c.ReadFrame()
			closed <- name
		}()
	}
	require.NoError(t, idle.SetDeadline(deadline()))
	require.NoError(t, stalled.SetDeadline(deadline()))
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var got []string
	for len(got) < 2 {
		select {
		case name := <-closed:
			got = append(got, name)
		case <-tick.C:
			require.Equal(t, codeNone, heartbeat(t, good, "g", member.MemberID, member.Generation))
		}
	}
	assert.ElementsMatch(t, []string{"idle", "stalled"}, got)
	assert.Equal(t, codeNone, heartbeat(t, good, "g", member.MemberID, member.Generation))
}
