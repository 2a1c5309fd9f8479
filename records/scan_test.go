package records

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestScannerRecords reads records in place and reports their timestamp
// and offset deltas.
func TestScannerRecords(t *testing.T) {
	t.Parallel()
	recs := rec(0, 5, []byte("k"), []byte("v"), nil)
	recs = append(recs, rec(1, -3, nil, nil, nil)...)
	s := scanner{buf: recs, end: len(recs)}
	r, err := s.next(0)
	require.NoError(t, err)
	require.Equal(t, record{timestampDelta: 5, offsetDelta: 0}, r)
	r, err = s.next(1)
	require.NoError(t, err)
	require.Equal(t, record{timestampDelta: -3, offsetDelta: 1}, r)
	require.False(t, s.more())
	_, err = s.next(2)
	require.ErrorIs(t, err, ErrInvalidRecord)
}

// TestScannerVarints refuses varints that overflow or are cut short, as
// Kafka's ByteUtils does.
func TestScannerVarints(t *testing.T) {
	t.Parallel()
	for name, b := range map[string][]byte{
		"cut":        {0x80},
		"too long":   {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"past int32": binary.AppendVarint(nil, 1<<40),
	} {
		s := scanner{buf: b, end: len(b)}
		_, ok := s.varint32()
		require.False(t, ok, name)
	}
}

// TestFlatRecordsPassValid: batches that are valid, whatever their
// records hold (keys or none, large values, headers, many records,
// timestamps before the first), pass flatRecordsPass, so that Validate
// takes the fast path for them; and the slightest damage is left to the
// scanner.
func TestFlatRecordsPassValid(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("x"), 70_000) // a three-byte length varint
	for name, raw := range map[string][]byte{
		"one":             build(t, spec{}),
		"many":            build(t, spec{n: 2000, value: 100}),
		"headers":         build(t, spec{n: 5, headers: 3}),
		"large value":     build(t, spec{values: [][]byte{big, []byte("a")}}),
		"earlier records": build(t, spec{n: 3, tsDeltas: []int64{5, -200, 1 << 40 >> 30}}),
		"null key":        rawBatch(rec(0, 0, nil, []byte("v"), nil), 1),
		"null value":      rawBatch(rec(0, 0, []byte("k"), nil, []kmsg.Header{{Key: "h", Value: nil}}), 1),
	} {
		h := parseHeader(raw)
		lo, hi := Config{}.withDefaults().timestampBounds(testNowMs)
		require.True(t, flatRecordsPass(raw[batchHeaderBytes:], &h, lo, hi), name)
		cut := raw[batchHeaderBytes : len(raw)-1]
		require.False(t, flatRecordsPass(cut, &h, lo, hi), name+", one byte short")
	}
}

// FuzzFlatRecordsAgree holds the fast path to the scanner: whatever the
// bytes, flatRecordsPass says yes only where the scanner finds nothing
// wrong.
func FuzzFlatRecordsAgree(f *testing.F) {
	for _, s := range []spec{{}, {n: 3, headers: 2}, {n: 40, value: 100}, {n: 3, tsDeltas: []int64{0, -5, 9}}} {
		raw := build(f, s)
		h := parseHeader(raw)
		f.Add(raw[batchHeaderBytes:], h.recordCount, h.baseTimestamp, h.maxTimestamp)
	}
	f.Add(rec(0, 0, nil, nil, []kmsg.Header{{Key: "", Value: []byte("v")}}), int32(1), testNowMs, testNowMs)
	f.Fuzz(func(t *testing.T, recs []byte, count int32, base, maxTS int64) {
		if count <= 0 {
			return
		}
		h := header{recordCount: count, lastOffsetDelta: count - 1, baseTimestamp: base, maxTimestamp: maxTS}
		lo, hi := testNowMs-1000, testNowMs+1000
		if !flatRecordsPass(recs, &h, lo, hi) {
			return
		}
		s := scanner{buf: recs, end: len(recs)}
		if err := scanRecords(&s, &h, lo, hi); err != nil {
			t.Fatalf("the fast path passed what the scanner refuses: %v", err)
		}
	})
}
