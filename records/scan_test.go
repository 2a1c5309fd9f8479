package records

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
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
