package lab

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestScopeNames: on the tool's own broker the chapter's names; on a
// shared one the tool and the run in every name, and back again.
func TestScopeNames(t *testing.T) {
	t.Parallel()
	own := InProcess("lab")
	require.False(t, own.Shared())
	require.Equal(t, "lab-fencing", own.Group("fencing"))
	require.Equal(t, "orders", own.Topic("orders"))

	a, b := OnBroker("compare"), OnBroker("compare")
	require.True(t, a.Shared())
	require.NotEqual(t, a.Run(), b.Run(), "two runs never share names")
	require.Regexp(t, `^[0-9a-z]+$`, a.Run())
	require.Equal(t, "compare-session-expiry-"+a.Run(), a.Group("session-expiry"))
	require.Equal(t, "compare-orders", a.Topic("orders"))
	require.Equal(t, "compare-"+a.Run()+"-orders", a.RunTopic("orders"))
	require.Equal(t, "orders", own.RunTopic("orders"))
	require.Equal(t, map[string]int32{"compare-orders": 4, "compare-payments": 1}, a.Topics(map[string]int32{"orders": 4, "payments": 1}))
	require.Equal(t, map[string]int32{a.RunTopic("orders"): 4}, a.RunTopics(map[string]int32{"orders": 4}))
	require.Equal(t, "orders-1 and payments-0", a.Chapter(a.RunTopic("orders")+"-1 and "+a.Topic("payments")+"-0", "orders", "payments"))

	require.True(t, a.owns(a.Group("x")))
	require.True(t, a.owns(a.Group("x")+"-nobody"))
	require.False(t, a.owns(b.Group("x")))
	require.False(t, a.owns("billing"))
	require.False(t, own.owns("lab-fencing"), "nothing to clean on the tool's own broker")
}

// TestScopeCleanup deletes the run's Empty groups and their offsets,
// keeps one with a member and says so, and leaves other groups alone.
func TestScopeCleanup(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(testContext(t), broker.Config{Topics: map[string]int32{"orders": 4}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	run := OnBroker("lab")
	c := wiretest.Dial(t, b.Addr(), "user-app")
	userCommit(t, c, run.Group("a"), "orders", 0, 3)
	userCommit(t, c, run.Group("a")+"-fenced", "orders", 0, 3)
	userCommit(t, c, "billing", "orders", 0, 5)
	m, err := Dial(testContext(t), b.Addr(), MemberConfig{Group: run.Group("busy"), Topics: []string{"orders"}})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	code, err := m.Join(testContext(t))
	require.NoError(t, err)
	require.Zero(t, code)

	var out bytes.Buffer
	kept, err := run.Cleanup(testContext(t), &out, b.Addr(), []string{run.Topic("orders")})
	require.NoError(t, err)
	require.Equal(t, []string{run.Group("busy") + " (NON_EMPTY_GROUP)"}, kept)
	require.Equal(t, "lab: deleted 2 groups of run "+run.Run()+", with their committed offsets; kept "+run.Group("busy")+" (NON_EMPTY_GROUP).\n"+
		"lab: topics "+run.Topic("orders")+" stay on the broker (every run of lab shares them); DeleteTopics (kadm, or the delete button on the live page) or a new data dir removes them.\n", out.String())
	require.Empty(t, b.Committed(run.Group("a")))
	require.Len(t, b.Committed("billing"), 1)

	out.Reset()
	kept, err = InProcess("lab").Cleanup(testContext(t), &out, b.Addr(), nil)
	require.NoError(t, err)
	require.Empty(t, kept)
	require.Empty(t, out.String())
}

// TestScopeCleanupDeletesTheRunsTopics: once the run's groups are gone,
// the topics only this run used (their names carry the run's id) are
// deleted; a topic every run shares, and a user's, stay.
func TestScopeCleanupDeletesTheRunsTopics(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(testContext(t), broker.Config{Topics: map[string]int32{"orders": 1}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	run := OnBroker("lab")
	mine, shared := run.RunTopic("payments"), run.Topic("orders")
	require.NoError(t, EnsureTopics(testContext(t), b.Addr(), map[string]int32{mine: 1, shared: 2}))
	c := wiretest.Dial(t, b.Addr(), "user-app")
	userCommit(t, c, run.Group("a"), mine, 0, 3)

	var out bytes.Buffer
	kept, err := run.Cleanup(testContext(t), &out, b.Addr(), []string{shared, mine})
	require.NoError(t, err)
	require.Empty(t, kept)
	require.Equal(t, "lab: deleted 1 group of run "+run.Run()+", with their committed offsets.\n"+
		"lab: deleted topics "+mine+" of run "+run.Run()+".\n"+
		"lab: topics "+shared+" stay on the broker (every run of lab shares them); DeleteTopics (kadm, or the delete button on the live page) or a new data dir removes them.\n", out.String())
	require.Equal(t, map[string]int32{"orders": 1, shared: 2}, b.Catalog().Counts())
}
