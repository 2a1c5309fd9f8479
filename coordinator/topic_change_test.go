package coordinator

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTopicsChangedRebalancesExactlyTheAffectedGroups: a deleted topic
// gives a new generation, reason "topic deleted", to the classic and the
// consumer groups that subscribe to it and to no other; subscriptions
// stay as sent, and the assignment skips the missing topic. Added
// partitions are assigned at the next generation, reason "partitions
// added".
func TestTopicsChangedRebalancesExactlyTheAffectedGroups(t *testing.T) {
	t.Parallel()
	topics := StaticTopics{"orders": 2, "payments": 1, "other": 1}
	f, seen := recordRebalances(t, Config{Topics: topics})
	f.join("classic", "a", "orders", "payments")
	f.join("bystander", "b", "other")
	f.consumerJoin("kip848", "c", "orders")
	_, err := f.c.ConsumerHeartbeat(regexJoin("regex", "d", "ord.*"))
	require.NoError(t, err)
	before := len(seen())

	delete(topics, "orders")
	got := f.c.TopicsChanged(ReasonTopicDeleted, "orders")
	require.Len(t, got, 3)
	require.Equal(t, []string{"classic", "kip848", "regex"}, []string{got[0].Group, got[1].Group, got[2].Group})
	for _, r := range got {
		require.Equal(t, ReasonTopicDeleted, r.Reason)
		require.Equal(t, int32(2), r.Generation, "group %s", r.Group)
	}
	require.Equal(t, []string{"payments-0"}, names(got[0].Assignment["a"]))
	require.Empty(t, got[1].Assignment["c"])
	require.Equal(t, seen()[before:], got, "reported as returned")
	_, gen := f.state("bystander")
	require.Equal(t, int32(1), gen, "a group that does not subscribe keeps its generation")
	require.Equal(t, []string{"orders"}, f.member("kip848", "c").Topics, "the subscription is kept as sent")
	require.Empty(t, f.member("regex", "d").Matched)

	topics["payments"] = 3
	got = f.c.TopicsChanged(ReasonPartitionsAdded, "payments")
	require.Len(t, got, 1)
	require.Equal(t, "classic", got[0].Group)
	require.Equal(t, ReasonPartitionsAdded, got[0].Reason)
	require.Equal(t, int32(3), got[0].Generation)
	require.Equal(t, []string{"payments-0", "payments-1", "payments-2"}, names(got[0].Assignment["a"]))
}

// TestDeleteTopicOffsets removes one topic's offsets from every group
// and keeps the rest; a group known only by those offsets goes with them.
func TestDeleteTopicOffsets(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	require.NoError(t, f.store.Commit("both", entries("orders-0", "payments-0")))
	require.NoError(t, f.store.Commit("only", entries("orders-1")))
	n, err := f.c.DeleteTopicOffsets("orders")
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, entries("orders-0", "payments-0")[1:], f.store.Committed("both"))
	require.Equal(t, []string{"both"}, f.store.Groups())
	require.False(t, f.listed("only"))
	n, err = f.c.DeleteTopicOffsets("orders")
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestRejoinKeepsADeletedTopic: a classic member whose subscription names
// a topic deleted since re-joins with that subscription as it sent it,
// under the chapter's join and under the wire's rules with protocols; the
// assignment skips the topic. A member that did not subscribe to it, and
// a new member, are still refused it.
func TestRejoinKeepsADeletedTopic(t *testing.T) {
	t.Parallel()
	topics := StaticTopics{"orders": 2, "payments": 1}
	f := newFixtureWith(t, Config{Topics: topics})
	f.join("g", "a", "orders", "payments")
	f.join("g", "b", "payments")
	wire := func(member string, topics ...string) JoinRequest {
		return JoinRequest{Group: "w", MemberID: member, SessionTimeout: defaultSession, WireRules: true, ProtocolType: ConsumerProtocolType,
			Protocols: []Protocol{{Name: "roundrobin", Topics: topics}}}
	}
	first, err := f.c.Join(JoinRequest{Group: "w", SessionTimeout: defaultSession, WireRules: true, ProtocolType: ConsumerProtocolType,
		Protocols: []Protocol{{Name: "roundrobin", Topics: []string{"orders", "payments"}}}, ClientID: "c"})
	require.NoError(t, err)
	id := first.MemberID

	delete(topics, "orders")
	f.c.TopicsChanged(ReasonTopicDeleted, "orders")

	res := f.join("g", "a", "orders", "payments")
	require.Equal(t, []string{"orders", "payments"}, f.member("g", "a").Topics, "the subscription is kept as sent")
	require.Equal(t, int32(4), res.Generation)
	require.Equal(t, []string{"payments-0"}, names(res.Assignment), "orders is skipped")
	view, _ := f.c.Describe("g")
	all := map[string][]string{}
	for _, m := range view.Members {
		all[m.MemberID] = names(m.Assignment)
	}
	require.Equal(t, map[string][]string{"a": {"payments-0"}, "b": {}}, all)

	again, err := f.c.Join(wire(id, "orders", "payments"))
	require.NoError(t, err, "a wire re-join with the deleted topic")
	require.Equal(t, id, again.MemberID)

	_, err = f.c.Join(JoinRequest{Group: "g", MemberID: "b", SessionTimeout: defaultSession, Topics: []string{"orders", "payments"}})
	require.ErrorIs(t, err, ErrUnknownTopic, "b never subscribed to orders")
	_, err = f.c.Join(JoinRequest{Group: "g", MemberID: "new", SessionTimeout: defaultSession, Topics: []string{"orders"}})
	require.ErrorIs(t, err, ErrUnknownTopic, "a new member is refused an unknown topic")
	_, err = f.c.Join(JoinRequest{Group: "g", MemberID: "a", SessionTimeout: defaultSession, Topics: []string{"orders", "payments", "nope"}})
	require.ErrorIs(t, err, ErrUnknownTopic, "a topic it did not subscribe to before")
}
