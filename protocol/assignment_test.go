package protocol

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/assignor"
)

func TestEncodeAssignmentGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		parts []assignor.TopicPartition
		want  string
	}{
		// version 0 | 0 topics | null user data: never zero bytes.
		{"nil", nil, "0000" + "00000000" + "ffffffff"},
		{"empty", []assignor.TopicPartition{}, "0000" + "00000000" + "ffffffff"},
		{"one partition", []assignor.TopicPartition{{Topic: "t", Partition: 3}},
			"0000" + "00000001" + "0001" + hex.EncodeToString([]byte("t")) + "00000001" + "00000003" + "ffffffff"},
		{"two topics", []assignor.TopicPartition{{Topic: "orders", Partition: 0}, {Topic: "orders", Partition: 2}, {Topic: "payments", Partition: 0}},
			"0000" + "00000002" +
				"0006" + hex.EncodeToString([]byte("orders")) + "00000002" + "00000000" + "00000002" +
				"0008" + hex.EncodeToString([]byte("payments")) + "00000001" + "00000000" +
				"ffffffff"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := EncodeAssignment(tc.parts)
			assert.Equal(t, tc.want, hex.EncodeToString(got))
			var a kmsg.ConsumerMemberAssignment
			require.NoError(t, a.ReadFrom(got), "kgo's parser accepts it")
		})
	}
}

func TestAssignmentRoundTrip(t *testing.T) {
	t.Parallel()
	parts := []assignor.TopicPartition{{Topic: "orders", Partition: 1}, {Topic: "orders", Partition: 3}, {Topic: "payments", Partition: 0}}
	got, err := DecodeAssignment(EncodeAssignment(parts))
	require.NoError(t, err)
	require.Equal(t, parts, got)
	got, err = DecodeAssignment(EncodeAssignment(nil))
	require.NoError(t, err)
	require.Empty(t, got, "an empty assignment is 10 bytes, not zero")
	require.Len(t, EncodeAssignment(nil), 10)
	got, err = DecodeAssignment(nil)
	require.NoError(t, err)
	require.Empty(t, got, "zero bytes, as Kafka sends a member its leader left out, is no partition")
	_, err = DecodeAssignment([]byte{0, 0, 0})
	require.Error(t, err)
}
