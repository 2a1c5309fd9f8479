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
	got, err := decodeAssignment(encodeAssignment(parts))
	require.NoError(t, err)
	require.Equal(t, parts, got)
	got, err = decodeAssignment(encodeAssignment(nil))
	require.NoError(t, err)
	require.Empty(t, got, "an empty assignment is 10 bytes, not zero")
	require.Len(t, encodeAssignment(nil), 10)
	got, err = decodeAssignment(nil)
	require.NoError(t, err)
	require.Empty(t, got, "zero bytes, as Kafka sends a member its leader left out, is no partition")
	_, err = decodeAssignment([]byte{0, 0, 0})
	require.Error(t, err)
	require.Equal(t, "orders-1, orders-3, payments-0", Partitions(parts))
	require.Equal(t, "orders-1,orders-3,payments-0", compact(parts))
	require.Equal(t, "orders-1=5 payments-0=-1", offsetList([]PartitionOffset{{TP("orders", 1), 5}, {TP("payments", 0), -1}}))
}
