package coordinator

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHeartbeatCheckOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join("g", "a", "orders")
	f.join("g", "b", "orders")

	cases := []struct {
		name          string
		group, member string
		generation    int32
		want          error
	}{
		{"current member, current generation", "g", "a", 2, nil},
		{"unknown group", "nogroup", "a", 2, ErrUnknownMemberID},
		{"stale generation", "g", "a", 1, ErrIllegalGeneration},
		{"generation checked before membership", "g", "ghost", 1, ErrIllegalGeneration},
		{"unknown member, current generation", "g", "ghost", 2, ErrUnknownMemberID},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := f.c.Heartbeat(tc.group, tc.member, tc.generation)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestHeartbeatRenewsLease(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.joinSession("g", "a", 100*scale, "orders")
	f.joinSession("g", "b", 100*scale, "orders")
	f.advance(60)
	require.NoError(t, f.c.Heartbeat("g", "a", 2))
	f.advance(60) // 120 ms: b's deadline (100) passed, a's (160) not
	require.Equal(t, []Expired{{Group: "g", MemberID: "b"}}, f.c.Expire())
	_, gen := f.state("g")
	require.Equal(t, int32(3), gen)

	require.ErrorIs(t, f.c.Heartbeat("g", "a", 2), ErrIllegalGeneration, "the expiry rebalance fences the old generation")
	require.NoError(t, f.c.Heartbeat("g", "a", 3))
}

func TestHeartbeatNeverExpiresAnyone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.joinSession("g", "a", 100*scale, "orders")
	f.advance(500)
	require.NoError(t, f.c.Heartbeat("g", "a", 1), "a lapsed lease is only acted on by Expire")
	f.advance(50)
	require.Empty(t, f.c.Expire())
}

// TestHeartbeatClassicForConsumerGroupIsUnknownMember: a consumer group's
// members do not speak the classic protocol, whatever the generation.
func TestHeartbeatClassicForConsumerGroupIsUnknownMember(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.consumerJoin("g", "a", "orders")
	require.ErrorIs(t, f.c.Heartbeat("g", "a", 1), ErrUnknownMemberID)
	require.ErrorIs(t, f.c.Heartbeat("g", "a", 7), ErrUnknownMemberID)
}
