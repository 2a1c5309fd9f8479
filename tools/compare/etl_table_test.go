package compare

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/interrupt"
)

func TestCompareETLTableCells(t *testing.T) {
	t.Parallel()
	require.Equal(t, "-", histogram(nil))
	require.Equal(t, "x2:5 x4-9:3 x10+:1", histogram(map[int]int{2: 5, 4: 1, 9: 2, 12: 1}))
	require.Equal(t, "-", errorKinds(nil))
	require.Equal(t, "ILLEGAL_GENERATION 3, REBALANCE_IN_PROGRESS 1", errorKinds(map[string]int{"REBALANCE_IN_PROGRESS": 1, "ILLEGAL_GENERATION": 3}))
	row := ETLRow{Protocol: ETLProtocols()[3], Transactional: true}
	require.Equal(t, "consumer-uniform-txn", row.slug())
	require.Equal(t, []string{"etl-consumer-uniform-txn-0", "etl-consumer-uniform-txn-1", "etl-consumer-uniform-txn-2"}, ETLTopics(ETLConfig{}, row))
	row.Transactional = false
	table := tableOf(t, []ETLResult{{Row: row, Side: Minibroker, Err: errors.New("boom")}})
	require.Regexp(t, regexp.MustCompile(`^consumer uniform +plain +minibroker +error: boom$`), strings.Split(table, "\n")[3])
	require.Contains(t, table, "This run, summed over the rows: plain, minibroker processed 0 records twice or more\nand kfake 0;")
}

// tableOf prints results with WriteETLTable's defaults.
func tableOf(t *testing.T, results []ETLResult) string {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, WriteETLTable(&out, ETLConfig{}, results))
	return out.String()
}

// TestCompareETLReadingLeavesOutFailedRuns: the summary under the table
// claims that nothing went missing only when every run finished; a failed
// or interrupted run is named as such and left out of the sums.
func TestCompareETLReadingLeavesOutFailedRuns(t *testing.T) {
	t.Parallel()
	row := ETLRow{Protocol: ETLProtocols()[0]}
	done := ETLResult{Row: row, Side: Kfake, In: 10, Out: 10, Reprocessed: map[int]int{2: 3}}
	require.Contains(t, tableOf(t, []ETLResult{done}), "No record went missing on either broker.\n")

	failed := ETLResult{Row: row, Side: Minibroker, Err: errors.New("boom"), Reprocessed: map[int]int{2: 7}}
	table := tableOf(t, []ETLResult{failed, done})
	require.NotContains(t, table, "on either broker")
	require.Contains(t, table, "No record went missing in the runs that finished.\n1 of 2 runs failed (their error is in the table): the sums leave them out, and what they lost is unknown.\n")
	require.Contains(t, table, "plain, minibroker processed 0 records twice or more\nand kfake 3;", "the failed run's counts are not summed")

	cut := ETLResult{Row: row, Side: Minibroker, Err: interrupt.ErrInterrupted}
	table = tableOf(t, []ETLResult{cut, done})
	require.Regexp(t, regexp.MustCompile(`\n[a-z -]+ +plain +minibroker +interrupted\n`), table)
	require.Contains(t, table, "No record went missing in the runs that finished.\nInterrupted: 1 of 2 runs did not finish; the sums leave them out.\n")
}
