package lab

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLabExactlyOnce pins the fence reaching the output: at least once, a
// read_committed reader of the output finds 6 to 9 twice (4 duplicates);
// with transactions the zombie's TxnOffsetCommit is ILLEGAL_GENERATION,
// its transaction aborts, and the reader finds each record once.
func TestLabExactlyOnce(t *testing.T) {
	t.Parallel()
	runGolden(t, "exactly-once")
	out := golden(t, "exactly-once")
	plain, txn, ok := strings.Cut(out, "\n== Run 2:")
	require.True(t, ok)
	require.Contains(t, plain, "  < OffsetCommit v9 payments-0=ILLEGAL_GENERATION\n")
	require.Contains(t, plain, "14 records read, 10 distinct; twice: [out-6 out-7 out-8 out-9]. Duplicates downstream: 4.\n")
	require.Contains(t, txn, "  < TxnOffsetCommit v3 payments-0=ILLEGAL_GENERATION\n")
	require.Contains(t, txn, "  > EndTxn v3 commit=false\n  < EndTxn v3 NONE\n")
	require.Contains(t, txn, "10 records read, 10 distinct; twice: []. Duplicates downstream: 0.\n")
	require.Contains(t, out, "\nDuplicates downstream: at-least-once 4, exactly-once 0.")
}
