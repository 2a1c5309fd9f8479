package records

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSentinelsDistinct checks that each sentinel matches only itself
// through a wrap, so the server's ordered error table cannot confuse
// them.
func TestSentinelsDistinct(t *testing.T) {
	t.Parallel()
	all := []error{
		ErrCorruptMessage, ErrInvalidRecord, ErrMessageTooLarge, ErrUnknownPartition,
		ErrOffsetOutOfRange, ErrOutOfOrderSequence, ErrInvalidProducerEpoch,
		ErrInvalidTimestamp, ErrTransactional, ErrStorage, ErrClosed, ErrCorrupt,
	}
	for i, a := range all {
		wrapped := fmt.Errorf("partition t-0: %w", a)
		for j, b := range all {
			require.Equal(t, i == j, errors.Is(wrapped, b), "%v is %v", a, b)
		}
	}
}
