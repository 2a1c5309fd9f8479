package compare

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
