package compare

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompareScenarioTableIsWellFormed checks the scenario table: unique
// kebab-case names, a matrix row and both documented answers for each, and
// every scenario the issue asks for. The answers themselves are checked
// against both brokers by integration's TestCompareScenarios.
func TestCompareScenarioTableIsWellFormed(t *testing.T) {
	t.Parallel()
	kebab := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	seen := map[string]bool{}
	for _, sc := range Scenarios() {
		require.Regexp(t, kebab, sc.Name)
		require.False(t, seen[sc.Name], "duplicate scenario %s", sc.Name)
		seen[sc.Name] = true
		require.Regexp(t, kebab, sc.Row, "scenario %s", sc.Name)
		require.NotNil(t, sc.Run, "scenario %s", sc.Name)
		for _, side := range Sides() {
			require.NotEmpty(t, sc.Want(side), "scenario %s, side %s", sc.Name, side)
		}
	}
	for _, name := range []string{
		"stale-generation-commit", "ownership-violation", "stale-heartbeat", "heartbeat-unknown-member",
		"leave-unknown-member", "direct-commit-with-members", "commit-empty-group", "unknown-group",
		"unchanged-rejoin", "changed-rejoin", "session-expiry",
		"kip848-two-owners", "kip848-previous-epoch-heartbeat", "kip848-previous-epoch-commit",
		"kip848-unknown-group", "kip848-leave-unknown-member", "kip848-assignors", "kip848-describe-topic-ids",
		"produce-fetch", "commit-replay", "zombie-commit", "direct-commit-backwards",
		"txn-init-fences", "txn-end-not-begun", "txn-produce-not-added", "txn-offset-commit-stale-generation",
		"txn-require-stable", "txn-pid-mapping", "txn-init-aborts-open", "txn-concurrent", "txn-timeout",
		"txn-timeout-max", "txn-produce-no-id", "txn-offset-commit-unfenced", "txn-staged-offsets", "txn-lso",
		"txn-read-committed", "txn-markers", "etl-churn",
	} {
		require.True(t, seen[name], "the issue asks for scenario %s", name)
	}
}
