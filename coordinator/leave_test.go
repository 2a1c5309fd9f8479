package coordinator

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLeaveKnownMemberRebalances(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join("g", "a", "orders")
	f.join("g", "b", "orders")
	require.Equal(t, []string{"a"}, f.c.Leave("g", "a"))
	gen, parts, err := f.c.Assignment("g", "b")
	require.NoError(t, err)
	require.Equal(t, int32(3), gen)
	require.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3"}, names(parts))
}

func TestLeaveUnknownMemberOrGroupIsNoOp(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join("g", "a", "orders")
	before, _ := f.c.Describe("g")

	require.Nil(t, f.c.Leave("g", "ghost"))
	require.Nil(t, f.c.Leave("nogroup", "a"))
	require.Nil(t, f.c.Leave("g"))

	after, _ := f.c.Describe("g")
	require.Equal(t, before, after)
	_, ok := f.c.Describe("nogroup")
	require.False(t, ok, "leaving an unknown group does not create it")
}

func TestLeaveBatchIsOneRebalance(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, id := range []string{"a", "b", "c"} {
		f.join("g", id, "orders")
	}
	require.Equal(t, []string{"a", "c"}, f.c.Leave("g", "a", "ghost", "c"))
	state, gen := f.state("g")
	require.Equal(t, Stable, state)
	require.Equal(t, int32(4), gen)
}

func TestLeaveForgetsPendingMemberID(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	res, err := f.c.Join(wireJoin("g", "", roundrobin("orders")))
	require.ErrorIs(t, err, ErrMemberIDRequired)
	require.Nil(t, f.c.Leave("g", res.MemberID), "a pending id is not a member")
	_, err = f.c.Join(wireJoin("g", res.MemberID, roundrobin("orders")))
	require.ErrorIs(t, err, ErrUnknownMemberID)
}

// TestLeaveClassicForConsumerGroupIsNoOp: consumer-protocol members leave
// with ConsumerHeartbeat; a classic leave naming one changes nothing.
func TestLeaveClassicForConsumerGroupIsNoOp(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.consumerJoin("g", "a", "orders")
	require.Empty(t, f.c.Leave("g", "a"))
	state, epoch := f.state("g")
	require.Equal(t, Stable, state)
	require.Equal(t, int32(1), epoch)
}
