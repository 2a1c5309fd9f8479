package records

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestEncodeMarkerIsKafkasControlBatch(t *testing.T) {
	raw := EncodeMarker(Marker{ProducerID: 7, ProducerEpoch: 3, Commit: true, CoordinatorEpoch: 0, Timestamp: testNowMs})
	var b kmsg.RecordBatch
	require.NoError(t, b.ReadFrom(raw))
	require.Equal(t, int16(0x30), b.Attributes, "transactional | control")
	require.Equal(t, int64(7), b.ProducerID)
	require.Equal(t, int16(3), b.ProducerEpoch)
	require.Equal(t, int32(-1), b.FirstSequence)
	require.Equal(t, int32(1), b.NumRecords)
	require.Equal(t, checksum(raw), binary.BigEndian.Uint32(raw[offCRC:]))
	var rec kmsg.Record
	require.NoError(t, rec.ReadFrom(b.Records))
	require.Equal(t, []byte{0, 0, 0, 1}, rec.Key, "version 0, type 1 (commit)")
	require.Equal(t, []byte{0, 0, 0, 0, 0, 0}, rec.Value, "version 0, coordinator epoch 0")

	abort := EncodeMarker(Marker{ProducerID: 7, ProducerEpoch: 3, CoordinatorEpoch: 5, Timestamp: testNowMs})
	m, err := DecodeMarker(abort)
	require.NoError(t, err)
	require.Equal(t, Marker{ProducerID: 7, ProducerEpoch: 3, Commit: false, CoordinatorEpoch: 5, Timestamp: testNowMs}, m)
	m, err = DecodeMarker(raw)
	require.NoError(t, err)
	require.True(t, m.Commit)
}

func TestDecodeMarkerRefusesWhatIsNotAMarker(t *testing.T) {
	good := EncodeMarker(Marker{ProducerID: 1, Commit: true})
	for name, raw := range map[string][]byte{
		"short":          good[:20],
		"not control":    build(t, spec{}),
		"truncated":      good[:len(good)-8],
		"key version 1":  func() []byte { b := append([]byte(nil), good...); b[batchHeaderBytes+4] = 1; return b }(),
		"unknown type 9": func() []byte { b := append([]byte(nil), good...); b[batchHeaderBytes+7] = 9; return b }(),
	} {
		_, err := DecodeMarker(raw)
		require.ErrorIs(t, err, ErrInvalidRecord, name)
	}
}

func TestAppendMarkerTakesAnOffset(t *testing.T) {
	l := openWith(t, testConfig(t, t.TempDir()), 1)
	a := produce(t, l, "t", 0, build(t, spec{n: 3, pid: 4, idem: true}))
	require.Equal(t, int64(0), a.BaseOffset)
	p, err := l.AppendMarker("t", 0, Marker{ProducerID: 4, Commit: true})
	require.NoError(t, err)
	m, err := p.Wait()
	require.NoError(t, err)
	require.Equal(t, int64(3), m.BaseOffset)
	require.Equal(t, int64(3), m.LastOffset)
	_, hw, err := l.Offsets("t", 0)
	require.NoError(t, err)
	require.Equal(t, int64(4), hw)
}

func FuzzDecodeMarker(f *testing.F) {
	f.Add(EncodeMarker(Marker{ProducerID: 1, ProducerEpoch: 2, Commit: true}))
	f.Add(EncodeMarker(Marker{ProducerID: 1, ProducerEpoch: 2, CoordinatorEpoch: 9}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := DecodeMarker(raw)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidRecord)
			return
		}
		// What decodes re-encodes to a marker that decodes the same.
		again, err := DecodeMarker(EncodeMarker(m))
		require.NoError(t, err)
		require.Equal(t, m.Commit, again.Commit)
		require.Equal(t, m.ProducerID, again.ProducerID)
	})
}
