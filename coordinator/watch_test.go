package coordinator

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// closed reports whether ch is closed, without waiting.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestChangedClosesAtEveryChange: each method that changes a group (its
// state, generation, members, a member's known generation, its committed
// offsets) closes the channel Changed handed out before it, and the next
// Changed is a new, open channel.
func TestChangedClosesAtEveryChange(t *testing.T) {
	t.Parallel()
	// Each case starts from group "g" with member "a" (generation 1) and
	// offsets committed for orders-0; change makes one change.
	cases := []struct {
		name   string
		change func(f *fixture)
	}{
		{"join", func(f *fixture) { f.join("g", "b", "orders") }},
		{"sync", func(f *fixture) {
			_, err := f.c.Sync("g", "a", 1, "")
			require.NoError(f.t, err)
		}},
		{"refresh", func(f *fixture) {
			_, _, err := f.c.Assignment("g", "a")
			require.NoError(f.t, err)
		}},
		{"heartbeat", func(f *fixture) { require.NoError(f.t, f.c.Heartbeat("g", "a", 1)) }},
		{"leave", func(f *fixture) { require.Equal(f.t, []string{"a"}, f.c.Leave("g", "a")) }},
		{"leave by batch", func(f *fixture) {
			left, errs := f.c.LeaveMembers("g", []LeaveMember{{MemberID: "a"}})
			require.Equal(f.t, []string{"a"}, left)
			require.Equal(f.t, []error{nil}, errs)
		}},
		{"expiry step", func(f *fixture) {
			f.advance(int(defaultSession/scale) + 1)
			require.Len(f.t, f.c.Expire(), 1)
		}},
		{"expire member", func(f *fixture) { require.NoError(f.t, f.c.ExpireMember("g", "a")) }},
		{"forced rebalance", func(f *fixture) { require.NoError(f.t, f.c.ForceRebalance("g")) }},
		{"topic deleted", func(f *fixture) { require.Len(f.t, f.c.TopicsChanged(ReasonTopicDeleted, "orders"), 1) }},
		{"commit", func(f *fixture) { require.NoError(f.t, f.commit("g", "a", 1, "orders-1")) }},
		{"direct commit", func(f *fixture) { require.NoError(f.t, f.c.CommitDirect("other", entries("orders-2"))) }},
		{"offsets deleted", func(f *fixture) {
			f.c.Leave("g", "a")
			errs, err := f.c.DeleteOffsets("g", keys("orders-0"))
			require.NoError(f.t, err)
			require.Equal(f.t, []error{nil}, errs)
		}},
		{"group deleted", func(f *fixture) {
			f.c.Leave("g", "a")
			require.Equal(f.t, []error{nil}, f.c.DeleteGroups("g"))
		}},
		{"consumer heartbeat", func(f *fixture) {
			_, err := f.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Group: "c", MemberID: "m", MemberEpoch: JoinEpoch, Topics: []string{"orders"}})
			require.NoError(f.t, err)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.join("g", "a", "orders")
			require.NoError(t, f.commit("g", "a", 1, "orders-0"))
			ch := f.c.Changed()
			require.False(t, closed(ch))
			tc.change(f)
			require.True(t, closed(ch), "the change woke nobody")
			require.False(t, closed(f.c.Changed()), "the next watcher gets an open channel")
		})
	}
}

// TestChangedStaysOpenOnReads: reading the groups wakes nobody, so that a
// waiter that reads after every wake-up does not wake itself for ever.
func TestChangedStaysOpenOnReads(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join("g", "a", "orders")
	require.NoError(t, f.commit("g", "a", 1, "orders-0"))
	ch := f.c.Changed()
	_, ok := f.c.Describe("g")
	require.True(t, ok)
	require.Len(t, f.c.Committed("g"), 1)
	require.Len(t, f.c.Groups(), 1)
	f.c.ExpireStep() // the clock has not moved: nobody expires, but it is the step
	require.True(t, closed(ch), "the expiry step counts as a change, even when it removes nobody")
	ch = f.c.Changed()
	_, _ = f.c.Describe("g")
	_ = f.c.Committed("g")
	_ = f.c.Groups()
	require.True(t, ch == f.c.Changed(), "one channel for every watcher until the next change")
	require.False(t, closed(ch))
}
