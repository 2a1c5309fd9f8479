package records

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEncodeBatch: what EncodeBatch makes passes validation, is stored as
// is, and reads back with the keys, values and timestamps given.
func TestEncodeBatch(t *testing.T) {
	t.Parallel()
	l := openWith(t, testConfig(t, ""), 1)
	raw := EncodeBatch(BatchSpec{FirstTimestamp: testNowMs, Records: []Record{
		{Key: []byte("k0"), Value: []byte("v0")},
		{Value: []byte("v1"), TimestampDelta: 5},
		{Key: []byte("k2")},
	}})
	a := produce(t, l, "t", 0, append([]byte(nil), raw...))
	require.Equal(t, int64(0), a.BaseOffset)
	require.Equal(t, int64(2), a.LastOffset)

	res, err := l.Read("t", 0, 0, 1<<20, true, nil)
	require.NoError(t, err)
	require.Equal(t, raw, res.Records, "the bytes stored are the bytes produced")
	recs, err := Decode(res.Records)
	require.NoError(t, err)
	require.Equal(t, []DecodedRecord{
		{Offset: 0, Timestamp: testNowMs, Key: []byte("k0"), Value: []byte("v0")},
		{Offset: 1, Timestamp: testNowMs + 5, Value: []byte("v1")},
		{Offset: 2, Timestamp: testNowMs, Key: []byte("k2")},
	}, recs)

	idem := EncodeBatch(BatchSpec{FirstTimestamp: testNowMs, Records: []Record{{Value: []byte("x")}},
		Idempotent: true, ProducerID: 7, ProducerEpoch: 1, BaseSequence: 0})
	v, err := l.Validate(idem)
	require.NoError(t, err)
	require.Equal(t, int64(7), v.ProducerID())
}

// TestDecodeCompressedBatches: Decode reads every codec a producer may
// use, at the offsets the log assigned.
func TestDecodeCompressedBatches(t *testing.T) {
	t.Parallel()
	l := openWith(t, testConfig(t, ""), 1)
	for _, c := range []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		produce(t, l, "t", 0, build(t, spec{n: 3, value: 4, codec: c}))
	}
	produce(t, l, "t", 0, build(t, spec{n: 2, value: 4, codec: CodecSnappy, xerial: true}))
	res, err := l.Read("t", 0, 0, 1<<20, true, nil)
	require.NoError(t, err)
	recs, err := Decode(res.Records)
	require.NoError(t, err)
	require.Len(t, recs, 17)
	for i, r := range recs {
		require.Equal(t, int64(i), r.Offset)
	}
	require.Equal(t, []byte("bbbb"), recs[16].Value)
	require.Equal(t, []byte("k1"), recs[16].Key)

	_, err = Decode(res.Records[:len(res.Records)-1])
	require.ErrorIs(t, err, ErrCorruptMessage)
}
