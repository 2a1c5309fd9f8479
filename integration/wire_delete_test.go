package integration

// Group lifecycle over the wire: DeleteGroups, OffsetDelete and offsets
// retention, with raw kmsg requests where the exact codes matter.

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

func deleteGroupsRequest(version int16, groups ...string) *kmsg.DeleteGroupsRequest {
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Version, req.Groups = version, groups
	return req
}

// deleteGroups sends a DeleteGroups at version and returns
// "group=code" for each group answered, in order.
func deleteGroups(t *testing.T, c *wireclient.Client, version int16, groups ...string) []string {
	t.Helper()
	resp := wiretest.Do[*kmsg.DeleteGroupsResponse](t, c, deleteGroupsRequest(version, groups...))
	var out []string
	for _, g := range resp.Groups {
		out = append(out, fmt.Sprintf("%s=%d", g.Group, g.ErrorCode))
	}
	return out
}

// offsetDeleteRequest deletes the offsets of parts (offsets ignored).
func offsetDeleteRequest(group string, parts ...tp) *kmsg.OffsetDeleteRequest {
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = group
	for _, p := range parts {
		n := len(req.Topics)
		if n == 0 || req.Topics[n-1].Topic != p.topic {
			req.Topics = append(req.Topics, kmsg.OffsetDeleteRequestTopic{Topic: p.topic})
			n++
		}
		req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, kmsg.OffsetDeleteRequestTopicPartition{Partition: p.partition})
	}
	return req
}

// offsetDeleteCodes returns the top-level code and "topic-partition=code"
// for each partition answered, in order.
func offsetDeleteCodes(t *testing.T, c *wireclient.Client, group string, parts ...tp) (int16, []string) {
	t.Helper()
	resp := wiretest.Do[*kmsg.OffsetDeleteResponse](t, c, offsetDeleteRequest(group, parts...))
	var out []string
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			out = append(out, fmt.Sprintf("%s-%d=%d", rt.Topic, p.Partition, p.ErrorCode))
		}
	}
	return resp.ErrorCode, out
}

// listGroups returns the names ListGroups v5 answers.
func listGroups(t *testing.T, c *wireclient.Client) []string {
	t.Helper()
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 5
	names := []string{}
	for _, g := range wiretest.Do[*kmsg.ListGroupsResponse](t, c, req).Groups {
		names = append(names, g.Group)
	}
	slices.Sort(names)
	return names
}

// TestWireDeleteGroups: every version answers each distinct group once,
// with Kafka's code: Empty groups of every kind are deleted with their
// offsets, and are then Dead, unlisted and without offsets.
func TestWireDeleteGroups(t *testing.T) {
	t.Parallel()
	for _, v := range []int16{0, 1, 2} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			t.Parallel()
			b := startBroker(t)
			c := wiretest.Dial(t, b.Addr(), "c")
			busy := join(t, c, "busy", "orders")
			left := join(t, c, "left", "orders")
			require.Equal(t, []int16{codeNone}, commit(t, c, "left", left.MemberID, left.Generation, tp{"orders", 1, 11}))
			require.Equal(t, codeNone, wiretest.Do[*kmsg.LeaveGroupResponse](t, c, wiretest.LeaveRequest(5, "left", left.MemberID)).ErrorCode)
			require.Equal(t, []int16{codeNone}, wiretest.Commit(t, c, directCommit("manual", "payments", 0, 7)))
			require.Equal(t, []int16{codeNone}, wiretest.Commit(t, c, directCommit("", "orders", 2, 3)))
			require.Equal(t, codeNone, wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Heartbeat(1, "k848", "m", 0, "", "orders")).ErrorCode)

			got := deleteGroups(t, c, v, "left", "busy", "k848", "manual", "", "nope", "bad\x00id", "left")
			assert.Equal(t, []string{
				"left=0", fmt.Sprintf("busy=%d", kerr.NonEmptyGroup.Code), fmt.Sprintf("k848=%d", kerr.NonEmptyGroup.Code),
				"manual=0", "=0", fmt.Sprintf("nope=%d", kerr.GroupIDNotFound.Code), fmt.Sprintf("bad\x00id=%d", codeInvalidGroupID),
			}, got, "a group named twice is answered once")

			assert.Equal(t, map[string]int64{"orders-1": -1}, fetchOffsets(t, c, "left", tp{"orders", 1, 0}))
			assert.Equal(t, map[string]int64{"payments-0": -1}, fetchOffsets(t, c, "manual", tp{"payments", 0, 0}))
			assert.Equal(t, map[string]int64{"orders-2": -1}, fetchOffsets(t, c, "", tp{"orders", 2, 0}))
			for i, g := range describe(t, c, "left", "manual", "busy") {
				assert.Equal(t, []string{"Dead", "Dead", "Stable"}[i], g.State, g.Group)
			}
			assert.Equal(t, []string{"busy", "k848"}, listGroups(t, c))
			assert.Equal(t, codeNone, heartbeat(t, c, "busy", busy.MemberID, busy.Generation), "a group with members goes on")
			assert.Equal(t, []string{"left=" + fmt.Sprint(kerr.GroupIDNotFound.Code)}, deleteGroups(t, c, v, "left"))
		})
	}
}

// TestWireDeleteGroupsPendingMemberID: a group holding only a pending
// member id (JoinGroup v4+'s MEMBER_ID_REQUIRED) is Empty, as in Kafka:
// it is deleted, and the pending id is then unknown.
func TestWireDeleteGroupsPendingMemberID(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	first := wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(9, "g", "", "orders"))
	require.Equal(t, codeMemberIDRequired, first.ErrorCode)
	assert.Equal(t, []string{"g=0"}, deleteGroups(t, c, 2, "g"))
	again := wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(9, "g", first.MemberID, "orders"))
	assert.Equal(t, codeUnknownMemberID, again.ErrorCode)
}

// TestWireOffsetDelete: Kafka's OffsetDelete codes: subscribed topics
// GROUP_SUBSCRIBED_TO_TOPIC (offset kept), unknown partitions
// UNKNOWN_TOPIC_OR_PARTITION, the rest deleted; group-level codes alone.
func TestWireOffsetDelete(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	m := join(t, c, "g", "orders")
	require.Equal(t, []int16{codeNone}, commit(t, c, "g", m.MemberID, m.Generation, tp{"orders", 0, 10}))
	require.Equal(t, []int16{codeNone}, wiretest.Commit(t, c, directCommit("g", "payments", 0, 5)))

	code, parts := offsetDeleteCodes(t, c, "g", tp{"orders", 0, 0}, tp{"orders", 9, 0}, tp{"payments", 0, 0}, tp{"nope", 0, 0})
	assert.Equal(t, codeNone, code)
	assert.Equal(t, []string{
		fmt.Sprintf("orders-0=%d", kerr.GroupSubscribedToTopic.Code), fmt.Sprintf("orders-9=%d", codeUnknownTopicOrPartition),
		"payments-0=0", fmt.Sprintf("nope-0=%d", codeUnknownTopicOrPartition),
	}, parts)
	assert.Equal(t, map[string]int64{"orders-0": 10, "payments-0": -1}, fetchOffsets(t, c, "g", tp{"orders", 0, 0}, tp{"payments", 0, 0}))

	require.Equal(t, codeNone, wiretest.Do[*kmsg.LeaveGroupResponse](t, c, wiretest.LeaveRequest(5, "g", m.MemberID)).ErrorCode)
	code, parts = offsetDeleteCodes(t, c, "g", tp{"orders", 0, 0})
	assert.Equal(t, codeNone, code)
	assert.Equal(t, []string{"orders-0=0"}, parts, "an Empty group subscribes to nothing")
	assert.Equal(t, map[string]int64{"orders-0": -1}, fetchOffsets(t, c, "g", tp{"orders", 0, 0}))
	assert.Equal(t, "Empty", describe(t, c, "g")[0].State, "the group itself stays")

	for _, tc := range []struct {
		group string
		code  int16
	}{{"nope", kerr.GroupIDNotFound.Code}, {"", codeInvalidGroupID}} {
		code, parts = offsetDeleteCodes(t, c, tc.group, tp{"orders", 0, 0})
		assert.Equal(t, tc.code, code, "%q", tc.group)
		assert.Empty(t, parts)
	}
}

// TestWireOffsetsRetention: with --offsets-retention, on the manual
// clock: a group commits and goes Empty; one millisecond short of the
// retention the expiry step keeps everything; at the retention the
// group's offsets and the group are gone (OffsetFetch -1, no longer
// listed) and its MaxGroups place is free. A group known by a later
// direct commit goes at its own time.
func TestWireOffsetsRetention(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(cfg *broker.Config) { cfg.OffsetsRetention, cfg.MaxGroups = time.Hour, 2 })
	c := wiretest.Dial(t, b.Addr(), "c")
	_, err := b.Advance(time.Second) // commits at the manual clock's Unix 0 would carry no commit time
	require.NoError(t, err)
	m := join(t, c, "g", "orders")
	require.Equal(t, []int16{codeNone}, commit(t, c, "g", m.MemberID, m.Generation, tp{"orders", 0, 10}))
	require.Equal(t, codeNone, wiretest.Do[*kmsg.LeaveGroupResponse](t, c, wiretest.LeaveRequest(5, "g", m.MemberID)).ErrorCode)
	_, err = b.Advance(10 * time.Minute)
	require.NoError(t, err)
	require.Equal(t, []int16{codeNone}, wiretest.Commit(t, c, directCommit("manual", "payments", 0, 5)))
	require.Equal(t, []int16{kerr.PolicyViolation.Code}, wiretest.Commit(t, c, directCommit("third", "orders", 0, 1)))

	_, err = b.Advance(50*time.Minute - time.Millisecond)
	require.NoError(t, err)
	require.Empty(t, b.Expire())
	assert.Equal(t, map[string]int64{"orders-0": 10}, fetchOffsets(t, c, "g", tp{"orders", 0, 0}), "Empty for 1 ms less than the retention")

	_, err = b.Advance(time.Millisecond)
	require.NoError(t, err)
	require.Empty(t, b.Expire(), "no member expired")
	assert.Equal(t, map[string]int64{"orders-0": -1}, fetchOffsets(t, c, "g", tp{"orders", 0, 0}))
	assert.Equal(t, []string{"manual"}, listGroups(t, c))
	assert.Equal(t, "Dead", describe(t, c, "g")[0].State)
	assert.Equal(t, []int16{codeNone}, wiretest.Commit(t, c, directCommit("third", "orders", 0, 1)), "g's place is free")
	assert.Len(t, b.Logs.Find("group deleted"), 1)

	_, err = b.Advance(10 * time.Minute)
	require.NoError(t, err)
	b.Expire()
	assert.Equal(t, map[string]int64{"payments-0": -1}, fetchOffsets(t, c, "manual", tp{"payments", 0, 0}))
	assert.Equal(t, []string{"third"}, listGroups(t, c))
}

// TestWireJunkGroupsFreedByDeleteGroups is the junk-groups issue at small
// scale: direct commits to invented group ids fill --max-groups (50), so
// every new group gets POLICY_VIOLATION, even after a restart; deleting
// junk groups frees their places, and the places stay free after a
// restart on the same data dir.
func TestWireJunkGroupsFreedByDeleteGroups(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	limit := func(cfg *broker.Config) { cfg.DataDir, cfg.MaxGroups = dir, 50 }
	first := startBroker(t, limit)
	c := wiretest.Dial(t, first.Addr(), "c")
	var junk []string
	for i := range 50 {
		g := fmt.Sprintf("junk-%02d", i)
		junk = append(junk, g)
		require.Equal(t, []int16{codeNone}, wiretest.Commit(t, c, directCommit(g, "orders", 0, int64(i))))
	}
	require.Equal(t, []int16{kerr.PolicyViolation.Code}, wiretest.Commit(t, c, directCommit("real", "orders", 0, 1)))
	c.Close()
	require.NoError(t, first.Close())

	second := startBroker(t, limit)
	c = wiretest.Dial(t, second.Addr(), "c")
	require.Equal(t, []int16{kerr.PolicyViolation.Code}, wiretest.Commit(t, c, directCommit("real", "orders", 0, 1)), "still full after a restart")
	codes := deleteGroups(t, c, 2, junk[:10]...)
	require.Len(t, codes, 10)
	for i, got := range codes {
		require.Equal(t, junk[i]+"=0", got)
	}
	require.Equal(t, []int16{codeNone}, wiretest.Commit(t, c, directCommit("real", "orders", 0, 1)))
	c.Close()
	require.NoError(t, second.Close())

	third := startBroker(t, limit)
	c = wiretest.Dial(t, third.Addr(), "c")
	listed := listGroups(t, c)
	assert.Len(t, listed, 41)
	assert.NotContains(t, listed, junk[0], "the deletion survived the restart")
	assert.Equal(t, map[string]int64{"orders-0": -1}, fetchOffsets(t, c, junk[0], tp{"orders", 0, 0}))
	for i := range 9 {
		assert.Equal(t, []int16{codeNone}, wiretest.Commit(t, c, directCommit(fmt.Sprintf("new-%d", i), "orders", 0, 1)))
	}
	assert.Equal(t, []int16{kerr.PolicyViolation.Code}, wiretest.Commit(t, c, directCommit("one-too-many", "orders", 0, 1)))
}
