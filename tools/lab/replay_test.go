package lab

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLabReplay pins exercise 1 over the wire: A fetches through offset 9
// (position 10), commits 6 and crashes; after the expiry step B starts at
// 6 and processes 6-9 again, the same bytes, and nothing else twice.
func TestLabReplay(t *testing.T) {
	t.Parallel()
	runGolden(t, "replay")
	out := golden(t, "replay")
	require.Contains(t, out, "  state: A position 10, processed 0-9; B not started | committed 6\n")
	require.Contains(t, out, "  clock: 30001 ms, 1 ms past a-000001's session deadline; expiry step (in process): removed a-000001\n")
	require.Contains(t, out, "  < OffsetFetch v8 NONE payments-0=6\n  B starts at the committed offset, 6.\n")
	for _, line := range []string{
		"  6       payment-6   2      A, B\n",
		"  9       payment-9   2      A, B\n",
		"  5       payment-5   1      A\n",
	} {
		require.Contains(t, out, line)
	}
	require.Contains(t, out, "4 duplicates")
	require.Contains(t, out, "\nAt least once: ")
}
