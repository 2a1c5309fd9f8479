package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestWireHeartbeatChapterOrder: unknown group -> UNKNOWN_MEMBER_ID, then
// the generation (ILLEGAL_GENERATION even for an unknown member), then
// the member. Kafka checks the member first.
func TestWireHeartbeatChapterOrder(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	a := join(t, c, "g", "orders")
	gen := a.Generation
	tests := []struct {
		name   string
		group  string
		member string
		gen    int32
		want   int16
	}{
		{"current", "g", a.MemberID, gen, codeNone},
		{"unknown group", "nope", a.MemberID, gen, codeUnknownMemberID},
		{"unknown group, any generation", "nope", "x", 99, codeUnknownMemberID},
		{"stale generation before unknown member", "g", "c-999999", gen + 1, codeIllegalGeneration},
		{"stale generation", "g", a.MemberID, gen - 1, codeIllegalGeneration},
		{"unknown member", "g", "c-999999", gen, codeUnknownMemberID},
		{"empty group id", "", a.MemberID, gen, codeInvalidGroupID},
	}
	for _, tc := range tests {
		for v := int16(0); v <= 4; v++ {
			t.Run(fmt.Sprintf("%s v%d", tc.name, v), func(t *testing.T) {
				t.Parallel()
				resp := wiretest.Do[*kmsg.HeartbeatResponse](t, wiretest.Dial(t, b.Addr(), "c"), wiretest.HeartbeatRequest(v, tc.group, tc.member, tc.gen))
				assert.Equal(t, tc.want, resp.ErrorCode)
			})
		}
	}
}

// TestWireSessionLease: a heartbeat and an unchanged re-join renew the
// session; a commit does not. Expiry is strict (alive at the deadline)
// and happens only in the expiry step.
func TestWireSessionLease(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	a := join(t, c, "g", "orders")
	advance := func(d time.Duration) {
		_, err := b.Advance(d)
		require.NoError(t, err)
	}

	advance(session - time.Second)
	require.Equal(t, codeNone, heartbeat(t, c, "g", a.MemberID, a.Generation))
	advance(session - time.Second)
	require.Equal(t, codeNone, rejoin(t, c, "g", a.MemberID, "orders").ErrorCode)
	advance(session)
	assert.Empty(t, b.Expire(), "alive at the exact deadline")

	require.Equal(t, []int16{0}, commit(t, c, "g", a.MemberID, a.Generation, tp{"orders", 0, 1}))
	advance(time.Millisecond)
	assert.Equal(t, []coordinator.Expired{{Group: "g", MemberID: a.MemberID}}, b.Expire(),
		"the commit did not renew the session")
	assert.Equal(t, codeIllegalGeneration, heartbeat(t, c, "g", a.MemberID, a.Generation),
		"the expiry was a rebalance: the generation moved on")
	assert.Equal(t, codeUnknownMemberID, heartbeat(t, c, "g", a.MemberID, a.Generation+1))
}
