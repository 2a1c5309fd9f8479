package integration

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// listed is one ListOffsets answer reduced to what the tests compare.
type listed struct {
	Code      int16
	Offset    int64
	Timestamp int64
}

func listedAt(p kmsg.ListOffsetsResponseTopicPartition) listed {
	return listed{Code: p.ErrorCode, Offset: p.Offset, Timestamp: p.Timestamp}
}

// TestWireListOffsets: earliest (-2) is the log start offset, latest (-1)
// the high watermark, max timestamp (-3, v7+, KIP-734) the first record
// with the largest timestamp, and a timestamp t the first record, in
// offset order, whose timestamp is at least t, found inside its batch;
// none is offset and timestamp -1. v0 answers the old list of offsets.
// An unknown partition is UNKNOWN_TOPIC_OR_PARTITION; -3 before v7, or
// another negative timestamp, INVALID_REQUEST.
func TestWireListOffsets(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	base := time.Now().Add(-10 * time.Minute).UnixMilli()
	batches := [][]byte{
		timedBatch(base, []int64{0, 10, 20}, "a", "b", "c"), // offsets 0-2
		timedBatch(base, []int64{100_000, 30}, "d", "e"),    // 3-4: the largest timestamp first
		timedBatch(base, []int64{40}, "f"),                  // 5
	}
	for _, batch := range batches {
		require.Equal(t, codeNone, produceOne(t, c, produceRequest(9, -1, "orders", partBatch{0, batch})).ErrorCode)
	}
	none := listed{codeNone, -1, -1}
	tests := []struct {
		name    string
		version int16
		ts      int64
		want    listed
	}{
		{"earliest", 7, -2, listed{codeNone, 0, -1}},
		{"latest", 7, -1, listed{codeNone, 6, -1}},
		{"latest v1", 1, -1, listed{codeNone, 6, -1}},
		{"max timestamp", 7, -3, listed{codeNone, 3, base + 100_000}},
		{"max timestamp before v7", 6, -3, listed{codeInvalidRequest, -1, -1}},
		{"an unknown special timestamp", 7, -4, listed{codeInvalidRequest, -1, -1}},
		{"timestamp 0", 7, 0, listed{codeNone, 0, base}},
		{"the first record's timestamp", 7, base, listed{codeNone, 0, base}},
		{"inside a batch", 7, base + 15, listed{codeNone, 2, base + 20}},
		{"exactly a record's timestamp", 7, base + 20, listed{codeNone, 2, base + 20}},
		{"past a batch: the next batch's first qualifying record", 7, base + 25, listed{codeNone, 3, base + 100_000}},
		{"timestamp lookups v1", 1, base + 15, listed{codeNone, 2, base + 20}},
		{"after every timestamp", 7, base + 100_001, none},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, listedAt(listOffset(t, c, tc.version, "orders", 0, tc.ts)), "%s", tc.name)
	}
	for ts, want := range map[int64]int64{-2: 0, -1: 6} {
		p := listOffset(t, c, 0, "orders", 0, ts)
		assert.Equal(t, codeNone, p.ErrorCode)
		assert.Equal(t, []int64{want}, p.OldStyleOffsets, "v0, timestamp %d", ts)
	}

	empty := []struct {
		ts   int64
		want listed
	}{
		{-2, listed{codeNone, 0, -1}}, {-1, listed{codeNone, 0, -1}}, {-3, none}, {0, none},
	}
	for _, e := range empty {
		assert.Equal(t, e.want, listedAt(listOffset(t, c, 7, "orders", 1, e.ts)), "empty partition, timestamp %d", e.ts)
	}
	for _, topic := range []struct {
		name      string
		partition int32
	}{{"orders", 4}, {"nope", 0}} {
		assert.Equal(t, listed{codeUnknownTopicOrPartition, -1, -1}, listedAt(listOffset(t, c, 7, topic.name, topic.partition, -1)), "%s-%d", topic.name, topic.partition)
	}
}

// TestWireListOffsetsAfterRetention: once retention has deleted the
// oldest segment (1 KiB segments of two 500-byte batches, 2000 bytes
// retained: seven batches leave offsets 2-6), earliest is the new log
// start offset, and a timestamp before every record left finds the first
// record left, not a deleted one.
func TestWireListOffsetsAfterRetention(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(cfg *broker.Config) { cfg.SegmentBytes, cfg.RetentionBytes = 1024, 2000 })
	c := wiretest.Dial(t, b.Addr(), "c")
	base := time.Now().Add(-10 * time.Minute).UnixMilli()
	for i := range int64(7) {
		batch := edited(batchOfSize(t, 500), func(b []byte) {
			binary.BigEndian.PutUint64(b[27:], uint64(base+1000*i)) // first timestamp
			binary.BigEndian.PutUint64(b[35:], uint64(base+1000*i)) // max timestamp: the one record's
		})
		require.Equal(t, codeNone, produceOne(t, c, produceRequest(9, -1, "payments", partBatch{0, batch})).ErrorCode)
	}
	assert.Equal(t, listed{codeNone, 2, -1}, listedAt(listOffset(t, c, 7, "payments", 0, -2)), "earliest")
	assert.Equal(t, listed{codeNone, 7, -1}, listedAt(listOffset(t, c, 7, "payments", 0, -1)), "latest")
	assert.Equal(t, listed{codeNone, 2, base + 2000}, listedAt(listOffset(t, c, 7, "payments", 0, 0)), "timestamp 0")
	assert.Equal(t, listed{codeNone, 2, base + 2000}, listedAt(listOffset(t, c, 7, "payments", 0, base+500)), "a deleted record's timestamp")
	assert.Equal(t, listed{codeNone, 4, base + 4000}, listedAt(listOffset(t, c, 7, "payments", 0, base+3500)))
	assert.Equal(t, listed{codeNone, 6, base + 6000}, listedAt(listOffset(t, c, 7, "payments", 0, -3)), "max timestamp")
}
