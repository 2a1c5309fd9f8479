package records

import (
	"math"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestIndexMemory measures the sparse index of 100-byte single-record
// batches in 64 MiB segments. It builds two segments, 128 MiB, and scales
// to 1 GiB (sixteen such segments, each indexed alike): about 131,000
// entries of 16 bytes, 2.0 MiB per GiB (stated in doc.go and at
// indexIntervalBytes).
func TestIndexMemory(t *testing.T) {
	t.Parallel()
	const batch, segBytes, total, scale = 100, DefaultSegmentBytes, 128 << 20, 8
	var bytes, entries int
	offset := int64(0)
	for written := 0; written < total; {
		s := newSegment("", offset, nil)
		for s.fits(batch, offset, segBytes) && written < total {
			h := header{baseOffset: offset, length: batch - logOverhead, maxTimestamp: offset}
			s.track(s.size, &h)
			offset++
			written += batch
		}
		s.seal()
		entries += len(s.index)
		bytes += cap(s.index) * int(unsafe.Sizeof(indexEntry{}))
	}
	entries, bytes = entries*scale, bytes*scale
	t.Logf("1 GiB of %d-byte batches: %d index entries, %.2f MiB", batch, entries, float64(bytes)/(1<<20))
	require.Equal(t, 16, int(unsafe.Sizeof(indexEntry{})))
	require.Less(t, bytes, 3<<20)
}

// TestSegmentIndex checks index entries and the floors lookups start
// from.
func TestSegmentIndex(t *testing.T) {
	t.Parallel()
	s := newSegment("d", 1000, nil)
	require.Equal(t, "d/00000000000000001000.log", s.path)
	require.Equal(t, math.MinInt64, int(s.maxTS))
	// 100 batches of 1 KiB, 2 records each, timestamps rising but for a dip.
	for i := range 100 {
		ts := int64(i * 10)
		if i == 50 {
			ts = 5
		}
		h := header{baseOffset: 1000 + int64(2*i), length: 1024 - logOverhead, lastOffsetDelta: 1, maxTimestamp: ts}
		s.track(s.size, &h)
	}
	require.Equal(t, int64(100*1024), s.size)
	require.Equal(t, int64(1200), s.next)
	require.Len(t, s.index, 12, "one entry per 8 KiB, none at 0")
	require.Equal(t, indexEntry{rel: 16, pos: 8 * 1024, maxTS: 70}, s.index[0])
	require.Equal(t, int64(990), s.maxTS)
	require.Equal(t, int64(1198), s.maxTSOffset)

	require.Equal(t, int64(0), s.offsetFloor(1000))
	require.Equal(t, int64(0), s.offsetFloor(1015))
	require.Equal(t, int64(8*1024), s.offsetFloor(1016))
	require.Equal(t, int64(8*1024), s.offsetFloor(1031))
	require.Equal(t, int64(96*1024), s.offsetFloor(1199))

	require.Equal(t, int64(0), s.timeFloor(0))
	require.Equal(t, int64(0), s.timeFloor(70))
	require.Equal(t, int64(8*1024), s.timeFloor(71), "batches before entry 0 hold at most 70")
	require.Equal(t, int64(8*1024), s.timeFloor(80))
	require.Equal(t, int64(96*1024), s.timeFloor(991))

	s.truncate(20*1024, 1040)
	require.Len(t, s.index, 2)
	require.Equal(t, int64(16*1024), s.lastIndexed)
	require.Equal(t, int64(1040), s.next)
}

// TestSegmentFits checks when a batch rolls the segment: past
// SegmentBytes (unless the segment is empty) or past 2^31 offsets from its
// base, as Kafka's LogSegment.shouldRoll.
func TestSegmentFits(t *testing.T) {
	t.Parallel()
	s := newSegment("", 0, nil)
	require.True(t, s.fits(5000, 0, 1024), "an empty segment takes any batch")
	s.size = 1000
	require.True(t, s.fits(24, 10, 1024))
	require.False(t, s.fits(25, 10, 1024))
	require.False(t, s.fits(1, math.MaxInt32+1, 1<<30))
	require.True(t, s.fits(1, math.MaxInt32, 1<<30))
}

// TestSegmentNames parses the names Kafka gives segments.
func TestSegmentNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, "00000000000000000042.log", segmentName(42))
	base, ok := parseSegmentName("00000000000000000042.log")
	require.True(t, ok)
	require.Equal(t, int64(42), base)
	for _, bad := range []string{"42.log", "00000000000000000042.index", "0000000000000000004x.log", "99999999999999999999.log", "-0000000000000000001.log"} {
		_, ok := parseSegmentName(bad)
		require.False(t, ok, bad)
	}
}
