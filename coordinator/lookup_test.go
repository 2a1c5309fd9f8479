package coordinator

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLookupsByID: groups with members, groups known only by their
// offsets, classic and consumer members, pending member ids, and what a
// leave and a delete take away.
func TestLookupsByID(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join("billing", "b", "orders")
	f.join("billing", "a", "orders")
	f.consumerJoin("shipping", "c", "orders")
	res, err := f.c.Join(wireJoin("audit", "", roundrobin("orders")))
	require.ErrorIs(t, err, ErrMemberIDRequired)
	pending := res.MemberID
	require.NoError(t, f.c.CommitDirect("manual", entries("orders-0")))

	for _, g := range []string{"billing", "shipping", "audit", "manual"} {
		require.True(t, f.c.GroupExists(g), g)
	}
	require.False(t, f.c.GroupExists("nobody"))

	require.Equal(t, []string{"a", "b"}, f.c.MemberIDs("billing"))
	require.Equal(t, []string{"c"}, f.c.MemberIDs("shipping"))
	require.Equal(t, []string{pending}, f.c.MemberIDs("audit"), "a pending id is one a client will join with")
	require.Nil(t, f.c.MemberIDs("manual"))
	require.Nil(t, f.c.MemberIDs("nobody"))

	f.join("shipping-classic", "a", "orders")
	require.Equal(t, []string{"billing", "shipping-classic"}, f.c.GroupsOfMember("a"))
	require.Equal(t, []string{"audit"}, f.c.GroupsOfMember(pending))
	require.Nil(t, f.c.GroupsOfMember("zz"))

	f.c.Leave("billing", "a")
	require.Equal(t, []string{"b"}, f.c.MemberIDs("billing"))
	require.Equal(t, []string{"shipping-classic"}, f.c.GroupsOfMember("a"))
	f.c.Leave("shipping-classic", "a")
	require.Nil(t, f.c.GroupsOfMember("a"))
	require.True(t, f.c.GroupExists("shipping-classic"), "an Empty group stays")
	require.NoError(t, f.c.DeleteGroups("shipping-classic")[0])
	require.False(t, f.c.GroupExists("shipping-classic"))
}
