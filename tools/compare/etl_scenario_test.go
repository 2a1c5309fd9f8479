package compare

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompareETLChurnAnswer: the etl-churn scenario's topics and answers;
// its run on both brokers is integration's TestCompareScenarios/etl-churn.
func TestCompareETLChurnAnswer(t *testing.T) {
	t.Parallel()
	require.Equal(t, map[string]int32{"plain-0": 3, "plain-1": 3, "txn-0": 3, "txn-1": 3}, etlChurnTopics())
	txn := ETLRow{Protocol: ETLProtocols()[0], Transactional: true}
	require.Equal(t, "0 missing, 0 twice out", etlAnswer(ETLResult{Row: txn, Reprocessed: map[int]int{2: 4}}))
	require.Equal(t, "1 missing, 2 twice out", etlAnswer(ETLResult{Row: txn, Missing: 1, DupOut: 2}))
	plain := ETLRow{Protocol: ETLProtocols()[0]}
	require.Equal(t, "2 missing, 3 twice", etlAnswer(ETLResult{Row: plain, Missing: 2, Reprocessed: map[int]int{2: 1, 3: 2}}))

	var sc Scenario
	for _, s := range Scenarios() {
		if s.Name == "etl-churn" {
			sc = s
		}
	}
	require.True(t, sc.Pattern)
	require.True(t, sc.Alone, "its kgo clients would slow the scenarios that wait on a session")
	require.True(t, sc.Matches(Minibroker, "plain: 0 missing, 17 twice; txn: 0 missing, 0 twice out"))
	require.True(t, sc.Matches(Minibroker, "plain: 0 missing, 0 twice; txn: 0 missing, 0 twice out"))
	require.False(t, sc.Matches(Minibroker, "plain: 1 missing, 17 twice; txn: 0 missing, 0 twice out"))
	require.False(t, sc.Matches(Minibroker, "plain: 0 missing, 17 twice; txn: 0 missing, 3 twice out"))
	require.True(t, sc.Matches(Kfake, "plain: 0 missing, 0 twice; txn: 0 missing, 0 twice out"))
	require.False(t, sc.Matches(Kfake, "plain: 0 missing, 1 twice; txn: 0 missing, 0 twice out"))
	require.False(t, sc.Matches(Kfake, "x plain: 0 missing, 0 twice; txn: 0 missing, 0 twice out"))
}
