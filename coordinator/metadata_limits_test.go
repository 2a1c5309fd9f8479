package coordinator

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMemberMetadataLimit: a member whose protocol metadata or
// subscription is over the limit is refused, whatever protocol it speaks,
// and nothing of it is kept.
func TestMemberMetadataLimit(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, Config{Settings: Settings{MaxMemberMetadataBytes: 1000}})
	big := Protocol{Name: "roundrobin", Metadata: make([]byte, 1000), Topics: []string{"orders"}}
	req := wireJoin("g", "", big)
	req.RequireMemberID = false
	_, err := f.c.Join(req)
	require.ErrorIs(t, err, ErrMemberMetadataTooLarge)
	_, ok := f.c.Describe("g")
	require.False(t, ok, "a refused join creates no group")

	fits := Protocol{Name: "roundrobin", Metadata: make([]byte, 1000-len("roundrobin")-len("orders")), Topics: []string{"orders"}}
	req = wireJoin("g", "", fits)
	req.RequireMemberID = false
	_, err = f.c.Join(req)
	require.NoError(t, err, "exactly at the limit")

	names := make([]string, 200)
	for i := range names {
		names[i] = "topic-" + strings.Repeat("x", i%10) + string(rune('a'+i%26))
	}
	_, err = f.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Group: "c", MemberID: "m", MemberEpoch: JoinEpoch, Topics: names})
	require.ErrorIs(t, err, ErrMemberMetadataTooLarge)
	res := f.consumerJoin("c", "m", "orders")
	_, err = f.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Group: "c", MemberID: "m", MemberEpoch: res.MemberEpoch, Topics: names})
	require.ErrorIs(t, err, ErrMemberMetadataTooLarge, "a heartbeat cannot grow the subscription past the limit either")
	v, _ := f.c.Describe("c")
	require.Equal(t, []string{"orders"}, v.Members[0].Topics)
}

// TestGroupMetadataLimit: the group's members together may hold at most
// the group limit; the join that would pass it is refused as a full group
// would be.
func TestGroupMetadataLimit(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, Config{Settings: Settings{MaxGroupMetadataBytes: 2500}})
	p := Protocol{Name: "roundrobin", Metadata: make([]byte, 1000), Topics: []string{"orders"}}
	for _, id := range []string{"", ""} {
		req := wireJoin("g", id, p)
		req.RequireMemberID = false
		_, err := f.c.Join(req)
		require.NoError(t, err)
	}
	req := wireJoin("g", "", p)
	req.RequireMemberID = false
	_, err := f.c.Join(req)
	require.ErrorIs(t, err, ErrGroupMaxSizeReached)
	require.ErrorContains(t, err, "limit 2500")
	v, _ := f.c.Describe("g")
	require.Len(t, v.Members, 2)

	// A member re-joining in its own place counts once.
	req = wireJoin("g", v.Members[0].MemberID, p)
	_, err = f.c.Join(req)
	require.NoError(t, err)
	require.Greater(t, f.c.DescribeBytes("g"), int64(2*1016))
	require.Equal(t, int64(0), f.c.DescribeBytes("nope"))
}
