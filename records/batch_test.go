package records

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestParseHeader decodes the header kmsg encodes, field by field.
func TestParseHeader(t *testing.T) {
	t.Parallel()
	kb := kmsg.RecordBatch{
		FirstOffset: 77, PartitionLeaderEpoch: 3, Magic: 2, Attributes: int16(CodecZstd) | attrTransactional,
		LastOffsetDelta: 4, FirstTimestamp: 1000, MaxTimestamp: 1004, ProducerID: 9, ProducerEpoch: 2,
		FirstSequence: 11, NumRecords: 5, Records: []byte("xyz"),
	}
	raw := encodeBatch(kb)
	h := parseHeader(raw)
	require.Equal(t, header{
		baseOffset: 77, length: batchHeaderBytes - logOverhead + 3, magic: 2, crc: checksum(raw),
		attributes: kb.Attributes, lastOffsetDelta: 4, baseTimestamp: 1000, maxTimestamp: 1004,
		producerID: 9, producerEpoch: 2, baseSequence: 11, recordCount: 5,
	}, h)
	require.Equal(t, int64(len(raw)), h.size())
	require.Equal(t, int64(81), h.lastOffset())
	require.Equal(t, int64(82), h.nextOffset())
	require.Equal(t, CodecZstd, h.codec())
	require.True(t, h.transactional())
	require.False(t, h.control())
	require.True(t, h.idempotent())
	require.Equal(t, int32(15), h.lastSequence())

	var back kmsg.RecordBatch
	require.NoError(t, back.ReadFrom(raw))
	require.Equal(t, int32(h.crc), back.CRC)
}

// TestIncrementSequence wraps past MaxInt32 to 0, as
// DefaultRecordBatch.incrementSequence.
func TestIncrementSequence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ seq, n, want int32 }{
		{0, 0, 0}, {5, 3, 8}, {math.MaxInt32, 0, math.MaxInt32}, {math.MaxInt32, 1, 0},
		{math.MaxInt32 - 1, 3, 1}, {math.MaxInt32 - 10, 10, math.MaxInt32},
	} {
		require.Equal(t, tc.want, incrementSequence(tc.seq, tc.n), "%d + %d", tc.seq, tc.n)
	}
	require.True(t, inSequence(math.MaxInt32, 0))
	require.True(t, inSequence(4, 5))
	require.False(t, inSequence(4, 6))
	require.False(t, inSequence(math.MaxInt32, math.MinInt32))
}

// TestSetBaseOffset rewrites only the first eight bytes, which the CRC
// does not cover.
func TestSetBaseOffset(t *testing.T) {
	t.Parallel()
	raw := build(t, spec{n: 2})
	c := bytes.Clone(raw)
	setBaseOffset(c, 1<<40)
	require.Equal(t, raw[8:], c[8:])
	h := parseHeader(c)
	require.Equal(t, int64(1<<40), h.baseOffset)
	require.Equal(t, checksum(c), h.crc)
}
