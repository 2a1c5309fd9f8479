package txn

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStateNamesAreKafkas(t *testing.T) {
	var got []string
	for s := Empty; s <= CompleteAbort+1; s++ {
		got = append(got, s.String())
	}
	require.Equal(t, []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Unknown"}, got)
}
