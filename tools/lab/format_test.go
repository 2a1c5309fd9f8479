package lab

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minibroker/minibroker/assignor"
)

func TestLabCodeName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "NONE", CodeName(0))
	require.Equal(t, "ILLEGAL_GENERATION", CodeName(kerr.IllegalGeneration.Code))
	require.Equal(t, "UNKNOWN_ERROR_CODE_32000", CodeName(32000))
	require.Equal(t, "(none)", Partitions(nil))
}

func TestLabAssignmentRoundTrip(t *testing.T) {
	t.Parallel()
	parts := []assignor.TopicPartition{TP("orders", 1), TP("orders", 3), TP("payments", 0)}
	require.Equal(t, "orders-1, orders-3, payments-0", Partitions(parts))
	require.Equal(t, "orders-1,orders-3,payments-0", compact(parts))
	require.Equal(t, "orders-1=5 payments-0=-1", offsetList([]PartitionOffset{{TP("orders", 1), 5}, {TP("payments", 0), -1}}))
}
