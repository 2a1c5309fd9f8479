package lab

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestLabOneCode(t *testing.T) {
	t.Parallel()
	_, ok := OneCode(nil)
	require.False(t, ok)
	code, ok := OneCode([]PartitionCode{{TP("orders", 0), kerr.IllegalGeneration.Code}, {TP("orders", 1), kerr.IllegalGeneration.Code}})
	require.True(t, ok)
	require.Equal(t, kerr.IllegalGeneration.Code, code)
	_, ok = OneCode([]PartitionCode{{TP("orders", 0), 0}, {TP("orders", 1), kerr.IllegalGeneration.Code}})
	require.False(t, ok)
}
