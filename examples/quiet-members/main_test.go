package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/coordinator"
)

// TestQuietMembersExpireAfterTheirSession: on a manual clock, two quiet
// members with 100 ms sessions survive the expiry step at 100 ms and are
// both removed at 101 ms, in one rebalance, as in the chapter's exercise 3.
func TestQuietMembersExpireAfterTheirSession(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(context.Background(), broker.Config{Topics: map[string]int32{"orders": 4}, ManualClock: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	cl, err := join(ctx, config{b.Addr(), "exercise3", "orders", 2, 100 * time.Millisecond}, &out)
	require.NoError(t, err)
	defer cl.Close()
	require.Equal(t, "member quiet-000001 generation 1 session 100ms\nmember quiet-000002 generation 2 session 100ms\n", out.String())

	_, err = b.Advance(100 * time.Millisecond)
	require.NoError(t, err)
	expired := b.Expire()
	require.Empty(t, expired, "a lease ends strictly after its deadline")

	_, err = b.Advance(time.Millisecond)
	require.NoError(t, err)
	expired = b.Expire()
	require.Equal(t, []coordinator.Expired{{Group: "exercise3", MemberID: "quiet-000001"}, {Group: "exercise3", MemberID: "quiet-000002"}}, expired)
	v, ok := b.Coordinator().Describe("exercise3")
	require.True(t, ok)
	require.Equal(t, int32(3), v.Generation, "one rebalance for both")
	require.Empty(t, v.Members)
}
