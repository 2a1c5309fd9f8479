package coordinator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestChapterLabRebalance is the chapter's four-step lab: a join, a second
// join with a stale local view, a refresh, and a leave.
func TestChapterLabRebalance(t *testing.T) {
	t.Parallel()
	f := newFixture(t)

	// 1. The first member joins and owns every partition.
	first := f.join("lab", "member-1", "orders")
	require.Equal(t, int32(1), first.Generation)
	require.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3"}, names(first.Assignment))

	// 2. The second member joins: a new generation. The first member's
	// local copy is not pushed to; it still lists all four.
	second := f.join("lab", "member-2", "orders")
	require.Equal(t, int32(2), second.Generation)
	require.Equal(t, []string{"orders-1", "orders-3"}, names(second.Assignment))
	require.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3"}, names(first.Assignment))

	// 3. The first member refreshes and sees the stable assignment; the
	// two no longer overlap.
	gen, mine, err := f.c.Assignment("lab", "member-1")
	require.NoError(t, err)
	require.Equal(t, int32(2), gen)
	require.Equal(t, []string{"orders-0", "orders-2"}, names(mine))
	_, theirs, err := f.c.Assignment("lab", "member-2")
	require.NoError(t, err)
	require.Equal(t, []string{"orders-1", "orders-3"}, names(theirs))
	for _, tp := range mine {
		require.NotContains(t, theirs, tp)
	}

	// 4. The second member leaves; the first owns everything again.
	require.Equal(t, []string{"member-2"}, f.c.Leave("lab", "member-2"))
	gen, mine, err = f.c.Assignment("lab", "member-1")
	require.NoError(t, err)
	require.Equal(t, int32(3), gen)
	require.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3"}, names(mine))
}

func TestRebalanceLastMemberLeavesGroupEmptyKeepsGenerationAndOffsets(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	res := f.join("g", "a", "orders")
	require.NoError(t, f.commit("g", "a", res.Generation, "orders-0"))

	f.c.Leave("g", "a")
	state, gen := f.state("g")
	require.Equal(t, Empty, state)
	require.Equal(t, int32(2), gen)
	require.Len(t, f.c.Committed("g"), 1)

	// Nothing deletes the group unless asked to (DeleteGroups) or retention
	// is on: the next join continues its generations.
	res = f.join("g", "b", "orders")
	require.Equal(t, int32(3), res.Generation)
}

func TestRebalanceObserverSeesEveryGeneration(t *testing.T) {
	t.Parallel()
	var seen []Rebalance
	f := newFixtureWith(t, Config{OnRebalance: func(r Rebalance) { seen = append(seen, r) }})
	f.join("g", "a", "orders")
	f.join("g", "b", "orders")
	f.c.Leave("g", "a", "b")

	require.Len(t, seen, 3)
	require.Equal(t, int32(1), seen[0].Generation)
	require.Equal(t, Stable, seen[0].State)
	require.Equal(t, []string{"a", "b"}, seen[1].Members)
	require.Equal(t, []string{"orders-0", "orders-2"}, names(seen[1].Assignment["a"]))
	require.Equal(t, Rebalance{Group: "g", Generation: 3, Reason: ReasonLeave, State: Empty}, seen[2])
}

// TestRebalanceReasons: each generation says why it started.
func TestRebalanceReasons(t *testing.T) {
	t.Parallel()
	var seen []Reason
	f := newFixtureWith(t, Config{OnRebalance: func(r Rebalance) { seen = append(seen, r.Reason) }})
	f.join("g", "a", "orders")
	f.join("g", "b", "orders")
	f.join("g", "b", "orders", "payments")
	f.join("g", "b", "orders", "payments") // the chapter's re-join: a new generation
	require.NoError(t, f.c.ForceRebalance("g"))
	require.NoError(t, f.c.ExpireMember("g", "b"))
	f.joinSession("g", "c", 10*time.Millisecond, "orders")
	f.clock.Advance(defaultSession + time.Millisecond)
	require.Len(t, f.c.Expire(), 2)
	f.c.Leave("g", "c")
	require.Equal(t, []Reason{ReasonJoin, ReasonJoin, ReasonSubscription, ReasonJoin, ReasonForced, ReasonExpiry, ReasonJoin, ReasonExpiry}, seen,
		"expiry took a and c at once; the leave of c found nobody")
}

func TestStateStrings(t *testing.T) {
	t.Parallel()
	for state, want := range map[State]string{Empty: "Empty", PreparingRebalance: "PreparingRebalance", Stable: "Stable", Dead: "Dead", Reconciling: "Reconciling"} {
		require.Equal(t, want, state.String())
	}
	require.Equal(t, "classic", ClassicGroup.String())
	require.Equal(t, "consumer", ConsumerGroup.String())
}

// TestConsumerRebalanceReasons: a consumer group rebalances on the same
// path and for the same reasons as a classic one.
func TestConsumerRebalanceReasons(t *testing.T) {
	t.Parallel()
	var seen []Rebalance
	f := newFixtureWith(t, Config{Settings: Settings{ConsumerSessionTimeout: 100 * scale, ConsumerHeartbeatInterval: 10 * scale},
		OnRebalance: func(r Rebalance) { seen = append(seen, r) }})
	f.consumerJoin("g", "a", "orders")
	f.consumerJoin("g", "b", "orders")
	f.consumerJoin("g", "b", "payments")
	require.NoError(t, f.c.ForceRebalance("g"))
	_, err := f.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Group: "g", MemberID: "b", MemberEpoch: LeaveEpoch})
	require.NoError(t, err)
	f.advance(101)
	require.Equal(t, []Expired{{Group: "g", MemberID: "a"}}, f.c.Expire())

	var reasons []Reason
	for _, r := range seen {
		reasons = append(reasons, r.Reason)
		require.Equal(t, "g", r.Group)
	}
	require.Equal(t, []Reason{ReasonJoin, ReasonJoin, ReasonSubscription, ReasonForced, ReasonLeave, ReasonExpiry}, reasons)
	require.Equal(t, []int32{1, 2, 3, 4, 5, 6}, []int32{seen[0].Generation, seen[1].Generation, seen[2].Generation, seen[3].Generation, seen[4].Generation, seen[5].Generation})
	require.Equal(t, Stable, seen[0].State)
	require.Equal(t, Reconciling, seen[1].State, "a has yet to heartbeat")
	require.Equal(t, []string{"a", "b"}, seen[1].Members)
	require.Equal(t, map[string][]string{"a": {"orders-0", "orders-2"}, "b": {"orders-1", "orders-3"}},
		map[string][]string{"a": names(seen[1].Assignment["a"]), "b": names(seen[1].Assignment["b"])}, "the whole target at once")
	require.Equal(t, Empty, seen[5].State)
}

func TestVoteChoosesProtocolEveryMemberSupportsByMostVotes(t *testing.T) {
	t.Parallel()
	m := func(id string, names ...string) *member {
		out := &member{id: id}
		for _, n := range names {
			out.protocols = append(out.protocols, Protocol{Name: n})
		}
		return out
	}
	cases := []struct {
		name    string
		members []*member
		joining *member
		want    string
		ok      bool
	}{
		{"single member's first choice", nil, m("a", "cooperative-sticky", "range"), "cooperative-sticky", true},
		{"only common name", []*member{m("a", "range", "roundrobin")}, m("b", "sticky", "roundrobin"), "roundrobin", true},
		{"majority of first choices", []*member{m("a", "range", "sticky"), m("b", "sticky", "range")}, m("c", "sticky", "range"), "sticky", true},
		{"tie goes to the name that sorts first", []*member{m("a", "range", "sticky")}, m("b", "sticky", "range"), "range", true},
		{"nothing in common", []*member{m("a", "range")}, m("b", "sticky"), "", false},
		{"replacement does not vote twice", []*member{m("a", "range")}, m("a", "sticky"), "sticky", true},
		{"no protocols at all", []*member{{id: "a"}}, &member{id: "b"}, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			members := map[string]*member{}
			for _, mm := range tc.members {
				members[mm.id] = mm
			}
			got, ok := vote(members, tc.joining)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}
}
