package lab

import (
	"testing"

	"github.com/stretchr/testify/require"
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
