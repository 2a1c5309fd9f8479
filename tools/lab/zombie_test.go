package lab

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLabZombie pins the fence in numbers: the zombie's commit at its old
// generation is ILLEGAL_GENERATION and leaves B's 10, with 2 duplicates
// (6 and 7); the same commit sent as a direct commit is stored, sets the
// group back to 8, and 8 and 9 are processed three times: 6 duplicates.
func TestLabZombie(t *testing.T) {
	t.Parallel()
	runGolden(t, "zombie")
	out := golden(t, "zombie")
	fenced, unfenced, ok := strings.Cut(out, "\n== Run 2:")
	require.True(t, ok)

	require.Contains(t, fenced, "  > OffsetCommit v9 member=a-000001 generation=1 payments-0=8\n  < OffsetCommit v9 payments-0=ILLEGAL_GENERATION\n")
	require.Contains(t, fenced, "  < OffsetFetch v8 NONE payments-0=10\n  Refused")
	require.Contains(t, fenced, "  8       payment-8   1      B\n")
	require.Contains(t, fenced, "Processed twice: 6-7; three times: (none). Duplicates: 2.\n")

	require.Contains(t, unfenced, "  > OffsetCommit v9 member=\"\" generation=-1 payments-0=8\n  < OffsetCommit v9 payments-0=NONE\n")
	require.Contains(t, unfenced, "  < OffsetFetch v8 NONE payments-0=8\n  C starts at the committed offset, 8.\n")
	require.Contains(t, unfenced, "  8       payment-8   3      B, A, C\n")
	require.Contains(t, unfenced, "Processed twice: 6-7; three times: 8-9. Duplicates: 6.\n")
	require.Contains(t, unfenced, "\nThe fence in numbers: 2 duplicates with it, 6 without.")
}
