package offsets

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// decodeAll decodes one record and returns its ops.
func decodeAll(t *testing.T, data []byte) []*op {
	t.Helper()
	payload, rest, err := nextRecord(data)
	require.NoError(t, err)
	require.Empty(t, rest)
	var got []*op
	require.NoError(t, decodeRecord(payload, func(o *op) { got = append(got, o) }))
	return got
}

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	ops := []*op{
		commitOf("billing",
			Entry{Topic: "orders", Partition: 0, Offset: 6, Metadata: "consumer-1 at 2024-05-01", LeaderEpoch: 4, CommitTimestampMs: 1_714_521_600_000},
			ent("orders", 2147483647, 1<<62),
		),
		commitOf("analytics", Entry{Topic: "clicks", Partition: 3, Offset: 0, LeaderEpoch: 0}),
		deleteOf("shipping"),
		commitOf("gr\u00fcppe", Entry{Topic: "t", Partition: 1, Offset: 2, Metadata: strings.Repeat("m", MaxMetadataBytes), LeaderEpoch: NoLeaderEpoch}),
		deleteOf("billing", Key{Topic: "orders", Partition: 2147483647}, Key{Topic: "audit", Partition: 0}),
		{kind: opDelete, group: "billing", expireMs: 1_714_521_600_001},
		commitOf("billing", ent("orders", 0, 7)),
	}
	require.Equal(t, ops, decodeAll(t, rec(ops...)), "ops come back whole and in order")
}

// v1Record builds a version 1 record, as stores before tombstones and
// commit times wrote them: commits only, no kind byte, no timestamp.
func v1Record(commits ...*op) []byte {
	payload := []byte{recordVersion1}
	payload = binary.AppendUvarint(payload, uint64(len(commits)))
	for _, c := range commits {
		payload = appendString(payload, c.group)
		payload = binary.AppendUvarint(payload, uint64(len(c.entries)))
		for _, e := range c.entries {
			payload = appendString(payload, e.Topic)
			payload = binary.AppendVarint(payload, int64(e.Partition))
			payload = binary.AppendVarint(payload, e.Offset)
			payload = binary.AppendVarint(payload, int64(e.LeaderEpoch))
			payload = appendString(payload, e.Metadata)
		}
	}
	out := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	out = binary.BigEndian.AppendUint32(out, crcOf(payload))
	return append(out, payload...)
}

func TestRecordVersion1StillReads(t *testing.T) {
	t.Parallel()
	commits := []*op{
		commitOf("billing", Entry{Topic: "orders", Partition: 0, Offset: 6, Metadata: "m", LeaderEpoch: 4}),
		commitOf("shipping", ent("orders", 1, 2), ent("orders", 2, 3)),
	}
	require.Equal(t, commits, decodeAll(t, v1Record(commits...)))
}

func TestNextRecordFailures(t *testing.T) {
	t.Parallel()
	full := rec(commitOf("billing", ent("orders", 0, 6)))
	badCRC := append([]byte(nil), full...)
	badCRC[len(badCRC)-1] ^= 0xff
	huge := append([]byte(nil), full...)
	binary.BigEndian.PutUint32(huge, maxPayloadBytes+1)
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", []byte{}, errShort},
		{"half a header", full[:3], errShort},
		{"header only", full[:recordHeaderBytes], errShort},
		{"payload cut short", full[:len(full)-1], errShort},
		{"checksum mismatch", badCRC, errChecksum},
		{"zero-filled", make([]byte, 16), errLength},
		{"impossible length", huge, errLength},
		{"length below a payload", []byte{0, 0, 0, 1, 0, 0, 0, 0, 1}, errLength},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := nextRecord(tc.data)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestDecodeRecordRejectsBadPayloads(t *testing.T) {
	t.Parallel()
	good := rec(commitOf("billing", ent("orders", 0, 6)))[recordHeaderBytes:]
	str := func(b []byte, s string) []byte { return appendString(b, s) }
	// oneOp builds a version 2 payload of one op of kind for group, whose
	// body body appends.
	oneOp := func(kind opKind, group string, body func([]byte) []byte) []byte {
		b := []byte{recordVersion, 1, byte(kind)}
		return body(str(b, group))
	}
	entry := func(topic string, partition, offset, epoch int64, metadata string, ts int64) func([]byte) []byte {
		return func(b []byte) []byte {
			b = binary.AppendUvarint(b, 1)
			b = str(b, topic)
			b = binary.AppendVarint(b, partition)
			b = binary.AppendVarint(b, offset)
			b = binary.AppendVarint(b, epoch)
			b = str(b, metadata)
			return binary.AppendVarint(b, ts)
		}
	}
	deleteKeys := func(expire int64, keys ...Key) func([]byte) []byte {
		return func(b []byte) []byte {
			b = binary.AppendVarint(b, expire)
			b = binary.AppendUvarint(b, uint64(len(keys)))
			for _, k := range keys {
				b = str(b, k.Topic)
				b = binary.AppendVarint(b, int64(k.Partition))
			}
			return b
		}
	}
	tests := []struct {
		name    string
		payload []byte
		wantMsg string
	}{
		{"version 3", append([]byte{3}, good[1:]...), "record version 3"},
		{"empty payload", nil, "record truncated"},
		{"no count", []byte{recordVersion}, "bad uvarint"},
		{"trailing bytes", append(append([]byte(nil), good...), 0), "bytes after the last op"},
		{"cut inside a string", good[:6], "exceeds the record"},
		{"unknown op kind", oneOp(9, "g", func(b []byte) []byte { return b }), "op kind 9"},
		{"entry count beyond the record", oneOp(opCommit, "g", func(b []byte) []byte { return binary.AppendUvarint(b, 1000) }), "entry count 1000"},
		{"key count beyond the record", oneOp(opDelete, "g", func(b []byte) []byte { return binary.AppendUvarint(append(b, 0), 1000) }), "key count 1000"},
		{"negative offset", oneOp(opCommit, "g", entry("orders", 0, -3, -1, "", 0)), "negative offset"},
		{"negative partition", oneOp(opCommit, "g", entry("orders", -1, 1, -1, "", 0)), "invalid offset entry"},
		{"negative commit time", oneOp(opCommit, "g", entry("orders", 0, 1, -1, "", -5)), "invalid offset entry"},
		{"empty topic", oneOp(opCommit, "g", entry("", 0, 1, -1, "", 0)), "invalid offset entry"},
		{"partition over int32", oneOp(opCommit, "g", entry("orders", 1<<31, 1, -1, "", 0)), "overflows int32"},
		{"invalid UTF-8 group", oneOp(opCommit, "g\xff", entry("orders", 0, 1, -1, "", 0)), "invalid offset entry"},
		{"metadata too large", oneOp(opCommit, "g", entry("orders", 0, 1, -1, strings.Repeat("m", MaxMetadataBytes+1), 0)), "offset metadata too large"},
		{"delete of an empty topic", oneOp(opDelete, "g", deleteKeys(0, Key{Topic: "", Partition: 0})), "invalid offset entry"},
		{"delete with a negative expiry", oneOp(opDelete, "g", deleteKeys(-1)), "expire time -1"},
		{"bad varint", oneOp(opCommit, "g", func(b []byte) []byte {
			b = binary.AppendUvarint(b, 1)
			b = str(b, "orders")
			return append(b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
		}), "bad varint"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			applied := 0
			err := decodeRecord(tc.payload, func(*op) { applied++ })
			require.ErrorContains(t, err, tc.wantMsg)
			require.Zero(t, applied, "a record is applied whole or not at all")
		})
	}
}

// TestDecodeRecordAppliesNothingOfABadRecord: a good op before a bad one
// in the same record is not applied either.
func TestDecodeRecordAppliesNothingOfABadRecord(t *testing.T) {
	t.Parallel()
	data := rec(commitOf("billing", ent("orders", 0, 6)), commitOf("billing", ent("orders", 0, 7)))
	payload := data[recordHeaderBytes:]
	payload = payload[:len(payload)-1] // the second op's timestamp is gone
	applied := 0
	require.Error(t, decodeRecord(payload, func(*op) { applied++ }))
	require.Zero(t, applied)
}

func crcOf(payload []byte) uint32 { return crc32.Checksum(payload, castagnoli) }

// BenchmarkAppendRecord encodes one journal record of a group commit of
// 64 commits of one offset each, into a reused buffer, as the writer
// does: the journal's CPU per batch before the write and fsync.
func BenchmarkAppendRecord(b *testing.B) {
	ops := make([]*op, 64)
	for i := range ops {
		ops[i] = &op{kind: opCommit, group: fmt.Sprintf("group-%d", i), entries: []Entry{
			{Topic: "orders", Partition: int32(i % 16), Offset: int64(i) * 1000, LeaderEpoch: 3, CommitTimestampMs: 1_700_000_000_000},
		}}
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = appendRecord(buf[:0], ops)
	}
	b.SetBytes(int64(len(buf)))
}
