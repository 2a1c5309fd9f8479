package main

import (
	"bytes"
	"context"
	"regexp"
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
	// The members' ids start with this run's client id: the program's
	// name and its start time in base 36.
	m := regexp.MustCompile(`^member (quiet-members-[0-9a-z]+)-000001 generation 1 session 100ms\nmember (quiet-members-[0-9a-z]+)-000002 generation 2 session 100ms\n$`).FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	require.Equal(t, m[1], m[2], "one client id for the run's members")
	id := m[1]

	_, err = b.Advance(100 * time.Millisecond)
	require.NoError(t, err)
	expired := b.Expire()
	require.Empty(t, expired, "a lease ends strictly after its deadline")

	_, err = b.Advance(time.Millisecond)
	require.NoError(t, err)
	expired = b.Expire()
	require.Equal(t, []coordinator.Expired{{Group: "exercise3", MemberID: id + "-000001"}, {Group: "exercise3", MemberID: id + "-000002"}}, expired)
	v, ok := b.Coordinator().Describe("exercise3")
	require.True(t, ok)
	require.Equal(t, int32(3), v.Generation, "one rebalance for both")
	require.Empty(t, v.Members)
}
