package protocol

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSupportedVersionsTable pins the table to docs/design.md section 4.
func TestSupportedVersionsTable(t *testing.T) {
	t.Parallel()
	want := []VersionRange{
		{Key: int16(kmsg.Produce), Min: 3, Max: 12},
		{Key: int16(kmsg.Fetch), Min: 4, Max: 12},
		{Key: int16(kmsg.ListOffsets), Min: 0, Max: 7},
		{Key: int16(kmsg.Metadata), Min: 0, Max: 12},
		{Key: int16(kmsg.OffsetCommit), Min: 0, Max: 9},
		{Key: int16(kmsg.OffsetFetch), Min: 1, Max: 9},
		{Key: int16(kmsg.FindCoordinator), Min: 0, Max: 6},
		{Key: int16(kmsg.JoinGroup), Min: 0, Max: 9},
		{Key: int16(kmsg.Heartbeat), Min: 0, Max: 4},
		{Key: int16(kmsg.LeaveGroup), Min: 0, Max: 5},
		{Key: int16(kmsg.SyncGroup), Min: 0, Max: 5},
		{Key: int16(kmsg.DescribeGroups), Min: 0, Max: 5},
		{Key: int16(kmsg.ListGroups), Min: 0, Max: 5},
		{Key: int16(kmsg.SASLHandshake), Min: 0, Max: 1},
		{Key: int16(kmsg.ApiVersions), Min: 0, Max: 4},
		{Key: int16(kmsg.CreateTopics), Min: 0, Max: 7},
		{Key: int16(kmsg.DeleteTopics), Min: 1, Max: 6},
		{Key: int16(kmsg.DeleteRecords), Min: 0, Max: 2},
		{Key: int16(kmsg.InitProducerID), Min: 0, Max: 4},
		{Key: int16(kmsg.AddPartitionsToTxn), Min: 0, Max: 3},
		{Key: int16(kmsg.AddOffsetsToTxn), Min: 0, Max: 3},
		{Key: int16(kmsg.EndTxn), Min: 0, Max: 3},
		{Key: int16(kmsg.TxnOffsetCommit), Min: 0, Max: 3},
		{Key: int16(kmsg.DescribeConfigs), Min: 0, Max: 4},
		{Key: int16(kmsg.AlterConfigs), Min: 0, Max: 2},
		{Key: int16(kmsg.SASLAuthenticate), Min: 0, Max: 2},
		{Key: int16(kmsg.CreatePartitions), Min: 0, Max: 3},
		{Key: int16(kmsg.DeleteGroups), Min: 0, Max: 2},
		{Key: int16(kmsg.IncrementalAlterConfigs), Min: 0, Max: 1},
		{Key: int16(kmsg.OffsetDelete), Min: 0, Max: 0},
		{Key: int16(kmsg.DescribeCluster), Min: 0, Max: 2},
		{Key: int16(kmsg.DescribeTransactions), Min: 0, Max: 0},
		{Key: int16(kmsg.ListTransactions), Min: 0, Max: 1},
		{Key: int16(kmsg.ConsumerGroupHeartbeat), Min: 0, Max: 1},
		{Key: int16(kmsg.ConsumerGroupDescribe), Min: 0, Max: 1},
	}
	assert.Equal(t, want, SupportedVersions())
}

func TestSupportedVersionsWithinKmsg(t *testing.T) {
	t.Parallel()
	for _, vr := range SupportedVersions() {
		t.Run(kmsg.NameForKey(vr.Key), func(t *testing.T) {
			t.Parallel()
			req := kmsg.RequestForKey(vr.Key)
			require.NotNil(t, req, "kmsg knows key %d", vr.Key)
			assert.GreaterOrEqual(t, req.MaxVersion(), vr.Max, "kmsg can encode our max")
			assert.GreaterOrEqual(t, vr.Min, int16(0))
			assert.LessOrEqual(t, vr.Min, vr.Max)
		})
	}
}

func TestSupportedVersionsSortedCopy(t *testing.T) {
	t.Parallel()
	got := SupportedVersions()
	for i := 1; i < len(got); i++ {
		assert.Less(t, got[i-1].Key, got[i].Key, "sorted by key, no duplicates")
	}
	got[0].Max = 99
	assert.Equal(t, int16(12), SupportedVersions()[0].Max, "callers get a copy")
}

func TestSupported(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		key     int16
		version int16
		want    bool
	}{
		{"api versions min", 18, 0, true},
		{"api versions max", 18, 4, true},
		{"api versions above max", 18, 5, false},
		{"fetch below min", 1, 3, false},
		{"fetch min", 1, 4, true},
		{"fetch max", 1, 12, true},
		{"offset fetch v0", 9, 0, false},
		{"produce v2 before record batches", 0, 2, false},
		{"produce min", 0, 3, true},
		{"produce max", 0, 12, true},
		{"produce v13 topic ids", 0, 13, false},
		{"init producer id min", 22, 0, true},
		{"init producer id max", 22, 4, true},
		{"init producer id v5 transaction version 2", 22, 5, false},
		{"add partitions to txn", 24, 3, true},
		{"add partitions to txn v4 broker to broker", 24, 4, false},
		{"end txn v5 transaction version 2", 26, 5, false},
		{"end txn v3", 26, 3, true},
		{"write txn markers", 27, 0, false},
		{"consumer group heartbeat v0", 68, 0, true},
		{"consumer group heartbeat v1", 68, 1, true},
		{"consumer group heartbeat v2", 68, 2, false},
		{"share group heartbeat", 76, 0, false},
		{"negative key", -1, 0, false},
		{"negative version", 12, -1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, Supported(tc.key, tc.version))
		})
	}
}

func TestVersionsFor(t *testing.T) {
	t.Parallel()
	got, ok := VersionsFor(int16(kmsg.JoinGroup))
	require.True(t, ok)
	assert.Equal(t, VersionRange{Key: 11, Min: 0, Max: 9}, got)

	got, ok = VersionsFor(int16(kmsg.Produce))
	require.True(t, ok)
	assert.Equal(t, VersionRange{Key: 0, Min: 3, Max: 12}, got)

	got, ok = VersionsFor(int16(kmsg.WriteTxnMarkers))
	assert.False(t, ok, "markers are written by the broker itself, never asked for")
	assert.Equal(t, VersionRange{}, got)
}
