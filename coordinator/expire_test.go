package coordinator

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/testutil"
)

// TestExercise3ExpiryIsStrict is the chapter's exercise 3: two members with
// a 100 ms session joined at 0. At exactly 100 ms nobody expires; at 101 ms
// both do, in one rebalance that leaves the group Empty.
func TestExercise3ExpiryIsStrict(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.joinSession("g", "member-1", 100*scale, "orders")
	f.joinSession("g", "member-2", 100*scale, "orders")

	f.advance(100)
	require.Empty(t, f.c.Expire())
	state, gen := f.state("g")
	require.Equal(t, Stable, state)
	require.Equal(t, int32(2), gen)

	f.advance(1)
	require.Equal(t, []Expired{{Group: "g", MemberID: "member-1"}, {Group: "g", MemberID: "member-2"}}, f.c.Expire())
	state, gen = f.state("g")
	require.Equal(t, Empty, state)
	require.Equal(t, int32(3), gen, "one rebalance for the group, not one per member")

	require.Empty(t, f.c.Expire(), "a second expiry finds nothing")
}

func TestExpireSortsAcrossGroupsAndRebalancesOnlyLosers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.joinSession("zeta", "z", 50*scale, "orders")
	f.joinSession("alpha", "b", 50*scale, "orders")
	f.joinSession("alpha", "a", 50*scale, "orders")
	f.joinSession("keep", "k", 500*scale, "orders")
	f.advance(51)
	require.Equal(t, []Expired{
		{Group: "alpha", MemberID: "a"},
		{Group: "alpha", MemberID: "b"},
		{Group: "zeta", MemberID: "z"},
	}, f.c.Expire())
	_, gen := f.state("keep")
	require.Equal(t, int32(1), gen)
	_, gen = f.state("alpha")
	require.Equal(t, int32(3), gen)
}

// TestExpiryStepLogsWhomItRemoved: the step writes one "member expired"
// line per removed member, in the order it returns them, and
// ExpireMember one naming the request; a step that removes nobody writes
// none. Callers of the step log nothing of their own.
func TestExpiryStepLogsWhomItRemoved(t *testing.T) {
	t.Parallel()
	logs := testutil.NewLogRecorder(t.Output(), slog.LevelWarn)
	f := newFixtureWith(t, Config{Logger: logs.Logger()})
	f.joinSession("zeta", "z", 50*scale, "orders")
	f.joinSession("alpha", "a", 50*scale, "orders")
	f.joinSession("keep", "k", 500*scale, "orders")
	f.joinSession("keep", "gone", 500*scale, "orders")
	f.advance(50)
	require.Empty(t, f.c.Expire())
	require.Empty(t, logs.Find("member expired"), "nobody removed, nothing logged")

	f.advance(1)
	require.Len(t, f.c.Expire(), 2)
	require.NoError(t, f.c.ExpireMember("keep", "gone"))
	require.Equal(t, []testutil.Record{
		{Level: slog.LevelInfo, Message: "member expired", Attrs: map[string]string{"group": "alpha", "member": "a"}},
		{Level: slog.LevelInfo, Message: "member expired", Attrs: map[string]string{"group": "zeta", "member": "z"}},
		{Level: slog.LevelInfo, Message: "member expired", Attrs: map[string]string{"group": "keep", "member": "gone", "by": "request"}},
	}, logs.Find("member expired"))
}

func TestNothingExpiresOutsideTheExpiryStep(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.joinSession("g", "a", 100*scale, "orders")
	f.advance(1000)
	gen, parts, err := f.c.Assignment("g", "a")
	require.NoError(t, err, "the lapsed member is still a member until Expire runs")
	require.Equal(t, int32(1), gen)
	require.Len(t, parts, 4)
	require.NoError(t, f.commit("g", "a", 1, "orders-0"))
	f.join("g", "b", "orders")
	v, _ := f.c.Describe("g")
	require.Len(t, v.Members, 2)
}

// TestExpireSkipsScansUntilTheEarliestDeadline checks the expiry floor: a
// join or a pending id with an earlier deadline than any before it is
// still expired on time, and a heartbeat that moves a deadline later
// never hides an earlier one.
func TestExpireSkipsScansUntilTheEarliestDeadline(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.joinSession("g", "slow", 1000*scale, "orders")
	require.Empty(t, f.c.Expire()) // floor: 1000 ms
	f.advance(10)
	f.joinSession("g", "fast", 50*scale, "orders") // deadline 60 ms, below the floor
	f.advance(51)
	require.Equal(t, []Expired{{Group: "g", MemberID: "fast"}}, f.c.Expire())

	res, err := f.c.Join(wireJoin("g", "", roundrobin("orders")))
	require.ErrorIs(t, err, ErrMemberIDRequired)
	require.NoError(t, f.c.Heartbeat("g", "slow", 3)) // slow: 61 + 1000
	f.advance(1000)                                   // 1061: the pending id (61 + 1000 = 1061) is not past yet
	require.Empty(t, f.c.Expire())
	f.advance(1)
	require.Equal(t, []Expired{{Group: "g", MemberID: "slow"}}, f.c.Expire())
	_, err = f.c.Join(wireJoin("g", res.MemberID, roundrobin("orders")))
	require.ErrorIs(t, err, ErrUnknownMemberID, "the pending id expired in the same step")
}

// TestExpireMemberFencesOnDemand: a live member whose heartbeats would
// renew its lease for ever is fenced at once: its group rebalances
// without it and its next heartbeat and commit are refused.
func TestExpireMemberFencesOnDemand(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.join("g", "a", "orders")
	b := f.join("g", "b", "orders")
	require.Equal(t, int32(2), b.Generation)
	require.NoError(t, f.c.Heartbeat("g", "a", 2))

	require.NoError(t, f.c.ExpireMember("g", "a"))
	require.ErrorIs(t, f.c.Heartbeat("g", "a", 2), ErrIllegalGeneration, "the chapter checks the generation first")
	require.ErrorIs(t, f.c.Heartbeat("g", "a", 3), ErrUnknownMemberID)
	require.ErrorIs(t, f.c.Commit("g", "a", a.Generation, entries("orders-0")), ErrIllegalGeneration)
	gen, parts, err := f.c.Assignment("g", "b")
	require.NoError(t, err)
	require.Equal(t, int32(3), gen)
	require.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3"}, names(parts))

	require.ErrorIs(t, f.c.ExpireMember("g", "a"), ErrUnknownMemberID, "already gone")
	require.ErrorIs(t, f.c.ExpireMember("nope", "b"), ErrUnknownMemberID)
	state, gen := f.state("g")
	require.Equal(t, Stable, state)
	require.Equal(t, int32(3), gen, "a refused expiry starts no generation")
}

// TestForceRebalanceStalesEveryMember: the same members, a new generation,
// and every member's old generation fenced until it refreshes.
func TestForceRebalanceStalesEveryMember(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join("g", "a", "orders")
	f.join("g", "b", "orders")
	require.NoError(t, f.c.ForceRebalance("g"))
	state, gen := f.state("g")
	require.Equal(t, Stable, state)
	require.Equal(t, int32(3), gen)
	require.ErrorIs(t, f.c.Heartbeat("g", "a", 2), ErrIllegalGeneration)
	require.ErrorIs(t, f.c.Commit("g", "b", 2, entries("orders-1")), ErrIllegalGeneration)
	require.NoError(t, f.c.Commit("g", "b", 3, entries("orders-1")), "same members, same assignment")

	require.EqualError(t, f.c.ForceRebalance("nope"), `unknown group "nope"`)
	require.ErrorIs(t, f.c.ForceRebalance("nope"), ErrUnknownGroup)
	f.c.Leave("g", "a", "b")
	require.NoError(t, f.c.ForceRebalance("g"), "an Empty group has nothing to rebalance")
	_, gen = f.state("g")
	require.Equal(t, int32(4), gen)
}

// TestExpireConsumerAndClassicMembersInOnePass: consumer-group sessions are
// leases of Config.ConsumerSessionTimeout, renewed by each heartbeat and
// ended only by the expiry step, in the same strict pass as classic ones.
func TestExpireConsumerAndClassicMembersInOnePass(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, Config{Settings: Settings{ConsumerSessionTimeout: 100 * scale, ConsumerHeartbeatInterval: 10 * scale}})
	f.joinSession("classic", "c", 100*scale, "orders")
	f.consumerJoin("kip848", "a", "orders")
	f.consumerJoin("kip848", "b", "orders")

	f.advance(60)
	_, err := f.consumerBeat("kip848", "b", 2)
	require.NoError(t, err, "b renews its lease to 160 ms")
	f.advance(40)
	require.Empty(t, f.c.Expire(), "at exactly 100 ms nobody has expired")
	require.Empty(t, f.c.Expire())
	f.advance(1)
	require.Equal(t, []Expired{{Group: "classic", MemberID: "c"}, {Group: "kip848", MemberID: "a"}}, f.c.Expire())
	_, err = f.consumerBeat("kip848", "a", 1)
	require.ErrorIs(t, err, ErrUnknownMemberID)
	res, err := f.consumerBeat("kip848", "b", 2)
	require.NoError(t, err)
	require.Equal(t, int32(3), res.MemberEpoch)
	require.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3"}, names(res.Assignment))

	f.advance(60)
	require.Empty(t, f.c.Expire(), "nothing expires before the renewed deadline")
	f.advance(42)
	require.Equal(t, []Expired{{Group: "kip848", MemberID: "b"}}, f.c.Expire())
	state, epoch := f.state("kip848")
	require.Equal(t, Empty, state)
	require.Equal(t, int32(4), epoch)
}

func TestExpireMemberAndForceRebalanceOnConsumerGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.consumerJoin("g", "a", "orders")
	f.consumerJoin("g", "b", "orders")
	_, err := f.consumerBeat("g", "a", 1)
	require.NoError(t, err)

	require.NoError(t, f.c.ForceRebalance("g"))
	state, epoch := f.state("g")
	require.Equal(t, Reconciling, state)
	require.Equal(t, int32(3), epoch)
	require.NoError(t, f.commit("g", "b", 2, "orders-1"), "nobody is fenced: b commits at its own epoch")
	res, err := f.consumerBeat("g", "b", 2)
	require.NoError(t, err)
	require.Equal(t, int32(3), res.MemberEpoch)
	require.Equal(t, []string{"orders-1", "orders-3"}, names(res.Assignment), "the same target")

	require.NoError(t, f.c.ExpireMember("g", "b"))
	_, err = f.consumerBeat("g", "b", 3)
	require.ErrorIs(t, err, ErrUnknownMemberID)
	require.ErrorIs(t, f.commit("g", "b", 3, "orders-1"), ErrUnknownMemberID)
	res, err = f.consumerBeat("g", "a", 2)
	require.NoError(t, err)
	require.Equal(t, int32(4), res.MemberEpoch)
	require.Len(t, res.Assignment, 4)
}
