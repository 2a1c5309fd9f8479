package coordinator

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAssignmentRefresh(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join("g", "a", "orders")
	f.join("g", "b", "orders", "payments")

	gen, parts, err := f.c.Assignment("g", "b")
	require.NoError(t, err)
	require.Equal(t, int32(2), gen)
	require.Equal(t, []string{"orders-1", "orders-3", "payments-0"}, names(parts))

	_, _, err = f.c.Assignment("g", "ghost")
	require.ErrorIs(t, err, ErrUnknownMemberID)
	_, _, err = f.c.Assignment("nogroup", "a")
	require.ErrorIs(t, err, ErrUnknownMemberID)
}

func TestAssignmentRefreshDoesNotRenewSession(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.joinSession("g", "a", 100*scale, "orders")
	f.advance(100)
	_, _, err := f.c.Assignment("g", "a")
	require.NoError(t, err)
	f.advance(1)
	require.Equal(t, []Expired{{Group: "g", MemberID: "a"}}, f.c.Expire())
}

func TestAssignmentRefreshNotStableIsRebalanceInProgress(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join("g", "a", "orders")
	// No request can observe PreparingRebalance; force it to check the
	// guard that keeps refresh honest if the transition ever stops being
	// synchronous.
	f.c.mu.Lock()
	f.c.groups["g"].state = PreparingRebalance
	f.c.mu.Unlock()
	_, _, err := f.c.Assignment("g", "a")
	require.ErrorIs(t, err, ErrRebalanceInProgress)
	_, err = f.c.Sync("g", "a", 1, "")
	require.ErrorIs(t, err, ErrRebalanceInProgress)
}

func TestSyncChecksMemberThenGeneration(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join("g", "a", "orders")
	f.join("g", "b", "orders")

	parts, err := f.c.Sync("g", "a", 2, "")
	require.NoError(t, err)
	require.Equal(t, []string{"orders-0", "orders-2"}, names(parts))

	_, err = f.c.Sync("g", "a", 1, "")
	require.ErrorIs(t, err, ErrIllegalGeneration)
	_, err = f.c.Sync("g", "ghost", 1, "")
	require.ErrorIs(t, err, ErrUnknownMemberID, "membership before generation")
	_, err = f.c.Sync("nogroup", "a", 2, "")
	require.ErrorIs(t, err, ErrUnknownMemberID)
}

func TestSyncChecksProtocolAfterGeneration(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	req := wireJoin("g", "a", roundrobin("orders"))
	req.WireRules, req.RequireMemberID = false, false
	_, err := f.c.Join(req)
	require.NoError(t, err)

	_, err = f.c.Sync("g", "a", 1, "range")
	require.ErrorIs(t, err, ErrInconsistentGroupProtocol)
	_, err = f.c.Sync("g", "a", 0, "range")
	require.ErrorIs(t, err, ErrIllegalGeneration, "generation first")
	parts, err := f.c.Sync("g", "a", 1, "roundrobin")
	require.NoError(t, err)
	require.Len(t, parts, 4)
}

func TestSyncAndRefreshForConsumerGroupAreUnknownMember(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.consumerJoin("g", "a", "orders")
	_, err := f.c.Sync("g", "a", 1, "")
	require.ErrorIs(t, err, ErrUnknownMemberID)
	_, _, err = f.c.Assignment("g", "a")
	require.ErrorIs(t, err, ErrUnknownMemberID)
}
