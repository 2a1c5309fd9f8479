package records

import (
	"encoding/binary"
	"fmt"
)

// A transaction marker is a control batch (Kafka's EndTransactionMarker,
// written by ControlRecordUtils): attributes transactional|control, the
// producer's id and epoch, base sequence -1, and one uncompressed record
// whose key is the control record type and whose value is the marker:
//
//	key   int16 version (0), int16 type (0 abort, 1 commit)
//	value int16 version (0), int32 coordinator epoch
//
// The record takes one offset in the log, as in Kafka.
const (
	controlAbort  = 0
	controlCommit = 1

	markerKeyBytes   = 4
	markerValueBytes = 6
)

// Marker is a transaction's commit or abort marker for one partition.
type Marker struct {
	ProducerID    int64
	ProducerEpoch int16
	Commit        bool
	// CoordinatorEpoch is the transaction coordinator's epoch; a single
	// broker has one coordinator, at epoch 0.
	CoordinatorEpoch int32
	// Timestamp is the batch's timestamp, Unix milliseconds.
	Timestamp int64
}

// EncodeMarker encodes m as a control batch at base offset 0, with its
// CRC, as the broker writes it.
func EncodeMarker(m Marker) []byte {
	typ := int16(controlAbort)
	if m.Commit {
		typ = controlCommit
	}
	var key [markerKeyBytes]byte
	binary.BigEndian.PutUint16(key[2:], uint16(typ))
	var value [markerValueBytes]byte
	binary.BigEndian.PutUint32(value[2:], uint32(m.CoordinatorEpoch))
	raw := EncodeBatch(BatchSpec{
		Records:        []Record{{Key: key[:], Value: value[:]}},
		FirstTimestamp: m.Timestamp, Idempotent: true,
		ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, BaseSequence: -1,
	})
	binary.BigEndian.PutUint16(raw[offAttributes:], attrTransactional|attrControl)
	binary.BigEndian.PutUint32(raw[offCRC:], checksum(raw))
	return raw
}

// DecodeMarker reads a stored control batch: the marker it holds. It
// checks the header's control bit, the record count, and the key's
// version and type; the value's version may be newer than 0, as Kafka
// reads it (only its coordinator epoch is used).
func DecodeMarker(batch []byte) (Marker, error) {
	if len(batch) < batchHeaderBytes {
		return Marker{}, fmt.Errorf("%w: %d bytes hold no batch header", ErrInvalidRecord, len(batch))
	}
	h := parseHeader(batch)
	if !h.control() {
		return Marker{}, fmt.Errorf("%w: not a control batch", ErrInvalidRecord)
	}
	if h.size() > int64(len(batch)) || h.length < batchHeaderBytes-logOverhead {
		return Marker{}, fmt.Errorf("%w: batch length %d with %d bytes", ErrInvalidRecord, h.length, len(batch))
	}
	if h.recordCount != 1 || h.codec() != CodecNone {
		return Marker{}, fmt.Errorf("%w: control batch of %d records, codec %d", ErrInvalidRecord, h.recordCount, h.codec())
	}
	commit, epoch, err := parseMarkerRecord(batch[batchHeaderBytes:h.size()])
	if err != nil {
		return Marker{}, err
	}
	return Marker{ProducerID: h.producerID, ProducerEpoch: h.producerEpoch, Commit: commit,
		CoordinatorEpoch: epoch, Timestamp: h.baseTimestamp}, nil
}

// markerRecordBytes bounds the bytes of a marker's record that the type
// needs: length, attributes, two deltas and the key (a marker written by
// Kafka or by us is 18 bytes with its value).
const markerRecordBytes = 32

// parseMarkerRecord reads a control record: whether it commits, and the
// coordinator epoch.
func parseMarkerRecord(b []byte) (commit bool, epoch int32, err error) {
	fail := func(what string) (bool, int32, error) {
		return false, 0, fmt.Errorf("%w: control record: %s", ErrInvalidRecord, what)
	}
	i := 0
	field := func() (int64, bool) {
		v, n := binary.Varint(b[i:])
		if n <= 0 {
			return 0, false
		}
		i += n
		return v, true
	}
	length, ok := field()
	if !ok || length < 0 || int64(i)+length > int64(len(b)) {
		return fail("bad length")
	}
	b = b[:i+int(length)]
	if i >= len(b) {
		return fail("no attributes")
	}
	i++ // attributes
	if _, ok := field(); !ok {
		return fail("bad timestamp delta")
	}
	if _, ok := field(); !ok {
		return fail("bad offset delta")
	}
	klen, ok := field()
	if !ok || klen < markerKeyBytes || int64(i)+klen > int64(len(b)) {
		return fail(fmt.Sprintf("key of %d bytes", klen))
	}
	key := b[i : i+int(klen)]
	i += int(klen)
	if v := int16(binary.BigEndian.Uint16(key)); v != 0 {
		return fail(fmt.Sprintf("key version %d", v))
	}
	typ := int16(binary.BigEndian.Uint16(key[2:]))
	if typ != controlAbort && typ != controlCommit {
		return fail(fmt.Sprintf("type %d", typ))
	}
	vlen, ok := field()
	if ok && vlen >= markerValueBytes && int64(i)+vlen <= int64(len(b)) {
		epoch = int32(binary.BigEndian.Uint32(b[i+2:]))
	}
	return typ == controlCommit, epoch, nil
}

// AppendMarker writes a transaction marker at the end of a partition's
// log (Kafka's WriteTxnMarkers on the partition leader). It closes the
// producer's open transaction on the partition, if it has one: a commit
// makes its records visible to read_committed readers once the marker is
// durable, an abort adds it to the aborted transactions Fetch reports. A
// marker for a producer with no open transaction is written all the same,
// as Kafka writes one to every partition of a transaction. Wait on the
// Pending for durability.
func (l *Log) AppendMarker(topic string, partition int32, m Marker) (*Pending, error) {
	raw := EncodeMarker(m)
	b := Batch{raw: raw, h: parseHeader(raw)}
	return l.Append(topic, partition, b)
}
