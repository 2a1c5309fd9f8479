package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newTestValidator is a validator with defaults and the test clock.
func newTestValidator(cfg Config) *validator {
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return testNow }
	}
	return newValidator(cfg.withDefaults())
}

// mutate returns a copy of raw changed by fn, with the CRC fixed unless
// fn broke it on purpose.
func mutate(raw []byte, fn func(b []byte) []byte, crc bool) []byte {
	b := fn(bytes.Clone(raw))
	if crc && len(b) >= batchHeaderBytes {
		fixCRC(b)
	}
	return b
}

func put32(off int, v int32) func([]byte) []byte {
	return func(b []byte) []byte { binary.BigEndian.PutUint32(b[off:], uint32(v)); return b }
}

func put16(off int, v int16) func([]byte) []byte {
	return func(b []byte) []byte { binary.BigEndian.PutUint16(b[off:], uint16(v)); return b }
}

// rec encodes one record with fields a test may set wrong.
func rec(offsetDelta int32, tsDelta int64, key, value []byte, headers []kmsg.Header) []byte {
	return appendRecord(nil, kmsg.Record{OffsetDelta: offsetDelta, TimestampDelta64: tsDelta, Key: key, Value: value, Headers: headers})
}

// TestValidate checks every rule of Validate against a crafted batch:
// Kafka's ProduceRequest.validateRecords, analyzeAndValidateRecords and
// LogValidator rules, and ours where the stored bytes must stay the
// produced bytes.
func TestValidate(t *testing.T) {
	t.Parallel()
	ok := build(t, spec{n: 3})
	idem := build(t, spec{n: 2, pid: 7, epoch: 0, seq: 0, idem: true})
	twoRecs := rec(0, 0, nil, []byte("a"), nil)
	twoRecs = append(twoRecs, rec(1, 0, nil, []byte("b"), nil)...)
	hour := time.Hour.Milliseconds()
	cases := []struct {
		name string
		raw  []byte
		cfg  Config
		want error // nil: valid
	}{
		{"valid", ok, Config{}, nil},
		{"valid idempotent", idem, Config{}, nil},
		{"valid headers", build(t, spec{n: 2, headers: 3}), Config{}, nil},
		{"empty", nil, Config{}, ErrInvalidRecord},
		{"less than the log overhead", ok[:11], Config{}, ErrInvalidRecord},
		{"length below the legacy minimum", mutate(ok, put32(offLength, 13), false), Config{}, ErrCorruptMessage},
		{"length past the bytes given", ok[:len(ok)-1], Config{}, ErrInvalidRecord},
		{"magic 0", mutate(ok, func(b []byte) []byte { b[offMagic] = 0; return b }, false), Config{}, ErrInvalidRecord},
		{"magic 1", mutate(ok, func(b []byte) []byte { b[offMagic] = 1; return b }, false), Config{}, ErrInvalidRecord},
		{"two batches", append(bytes.Clone(ok), ok...), Config{}, ErrInvalidRecord},
		{"trailing byte", append(bytes.Clone(ok), 0), Config{}, ErrInvalidRecord},
		{"smaller than a batch header", mutate(ok[:40], put32(offLength, 28), false), Config{}, ErrCorruptMessage},
		{"base offset not zero", mutate(ok, func(b []byte) []byte { setBaseOffset(b, 5); return b }, false), Config{}, ErrInvalidRecord},
		{"larger than MaxMessageBytes", ok, Config{Settings: Settings{MaxMessageBytes: int32(len(ok) - 1)}}, ErrMessageTooLarge},
		{"exactly MaxMessageBytes", ok, Config{Settings: Settings{MaxMessageBytes: int32(len(ok))}}, nil},
		{"bad crc", mutate(ok, func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, false), Config{}, ErrCorruptMessage},
		{"crc field flipped", mutate(ok, func(b []byte) []byte { b[offCRC] ^= 0x80; return b }, false), Config{}, ErrCorruptMessage},
		{"negative last offset delta", mutate(ok, put32(offLastOffsetDelta, -1), true), Config{}, ErrInvalidRecord},
		{"zero records", mutate(ok, func(b []byte) []byte {
			put32(offRecordCount, 0)(b)
			return put32(offLastOffsetDelta, -1)(b)
		}, true), Config{}, ErrInvalidRecord},
		{"count disagrees with last offset delta", mutate(ok, put32(offLastOffsetDelta, 1), true), Config{}, ErrInvalidRecord},
		{"control batch", mutate(ok, put16(offAttributes, attrControl), true), Config{}, ErrInvalidRecord},
		{"transactional batch", mutate(idem, put16(offAttributes, attrTransactional), true), Config{}, nil},
		{"transactional batch without a producer id", mutate(ok, put16(offAttributes, attrTransactional), true), Config{}, ErrInvalidRecord},
		{"idempotent with negative sequence", mutate(idem, put32(offBaseSequence, -1), true), Config{}, ErrInvalidRecord},
		{"codec 5", mutate(ok, put16(offAttributes, 5), true), Config{}, ErrCorruptMessage},
		{"codec 7", mutate(ok, put16(offAttributes, 7), true), Config{}, ErrCorruptMessage},
		{"log append time", mutate(ok, put16(offAttributes, attrLogAppendTime), true), Config{}, ErrInvalidTimestamp},
		{"fewer records than counted", rawBatch(twoRecs, 3), Config{}, ErrInvalidRecord},
		{"more records than counted", rawBatch(twoRecs, 1), Config{}, ErrInvalidRecord},
		{"offset deltas skip", rawBatch(append(rec(0, 0, nil, nil, nil), rec(2, 0, nil, nil, nil)...), 2), Config{}, ErrInvalidRecord},
		{"offset deltas swapped", rawBatch(append(rec(1, 0, nil, nil, nil), rec(0, 0, nil, nil, nil)...), 2), Config{}, ErrInvalidRecord},
		{"record length too long", rawBatch(mutate(rec(0, 0, nil, []byte("xy"), nil), func(b []byte) []byte {
			b[0] += 2 // varint length + 1
			return append(b, 0)
		}, false), 1), Config{}, ErrInvalidRecord},
		{"record length too short", rawBatch(mutate(rec(0, 0, nil, []byte("xy"), nil), func(b []byte) []byte {
			b[0] -= 2
			return b
		}, false), 1), Config{}, ErrInvalidRecord},
		{"key overruns the record", rawBatch(recordWith(func(dst []byte) []byte {
			dst = binary.AppendVarint(dst, 1000) // key length
			return append(dst, "abc"...)
		}), 1), Config{}, ErrInvalidRecord},
		{"negative header count", rawBatch(recordWith(func(dst []byte) []byte {
			dst = binary.AppendVarint(dst, -1) // null key
			dst = binary.AppendVarint(dst, -1) // null value
			return binary.AppendVarint(dst, -2)
		}), 1), Config{}, ErrInvalidRecord},
		{"negative header key length", rawBatch(recordWith(func(dst []byte) []byte {
			dst = binary.AppendVarint(dst, -1)
			dst = binary.AppendVarint(dst, -1)
			dst = binary.AppendVarint(dst, 1)
			dst = binary.AppendVarint(dst, -1)
			return binary.AppendVarint(dst, -1)
		}), 1), Config{}, ErrInvalidRecord},
		{"huge header count", rawBatch(recordWith(func(dst []byte) []byte {
			dst = binary.AppendVarint(dst, -1)
			dst = binary.AppendVarint(dst, -1)
			return binary.AppendVarint(dst, math.MaxInt32)
		}), 1), Config{}, ErrInvalidRecord},
		{"huge record count", mutate(ok, func(b []byte) []byte {
			put32(offRecordCount, math.MaxInt32)(b)
			return put32(offLastOffsetDelta, math.MaxInt32-1)(b)
		}, true), Config{}, ErrInvalidRecord},
		{"max timestamp not the largest", mutate(ok, func(b []byte) []byte {
			binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(testNowMs+100))
			return b
		}, true), Config{}, ErrInvalidRecord},
		{"timestamp an hour ahead is too far", build(t, spec{firstTS: testNowMs + hour + 1}), Config{}, ErrInvalidTimestamp},
		{"timestamp just under an hour ahead", build(t, spec{firstTS: testNowMs + hour}), Config{}, nil},
		{"timestamp ten years old", build(t, spec{firstTS: testNowMs - 10*365*24*hour}), Config{}, nil},
		{"timestamp before the configured bound", build(t, spec{firstTS: testNowMs - 2*hour}), Config{MessageTimestampBeforeMax: time.Hour}, ErrInvalidTimestamp},
		{"future timestamp with no bound", build(t, spec{firstTS: testNowMs + 100*hour}), Config{MessageTimestampAfterMax: -1}, nil},
		{"no timestamp", build(t, spec{firstTS: -1, tsDeltas: []int64{0}}), Config{}, nil},
		{"a later record out of range", build(t, spec{n: 2, tsDeltas: []int64{0, 2 * hour}}), Config{}, ErrInvalidTimestamp},
		{"structure wins over timestamps", rawBatch(append(rec(0, 2*hour, nil, nil, nil), rec(5, 0, nil, nil, nil)...), 2), Config{}, ErrInvalidRecord},
	}
	for _, codec := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		cases = append(cases, struct {
			name string
			raw  []byte
			cfg  Config
			want error
		}{"valid " + codec.String(), build(t, spec{n: 50, value: 100, codec: codec}), Config{}, nil})
	}
	cases = append(cases, struct {
		name string
		raw  []byte
		cfg  Config
		want error
	}{"valid snappy xerial", build(t, spec{n: 2000, value: 100, codec: CodecSnappy, xerial: true}), Config{}, nil})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := newTestValidator(tc.cfg)
			b, err := v.validate(tc.raw)
			if tc.want == nil {
				require.NoError(t, err)
				h := parseHeader(tc.raw)
				require.Equal(t, h.codec(), b.Codec())
				require.Equal(t, h.recordCount, b.NumRecords())
				require.Equal(t, len(tc.raw), b.Size())
				require.Equal(t, h.producerID, b.ProducerID())
				return
			}
			require.ErrorIs(t, err, tc.want)
			t.Log(err)
		})
	}
}

// recordWith encodes one record whose fields after the offset delta come
// from fn, with a consistent length prefix.
func recordWith(fn func(dst []byte) []byte) []byte {
	body := []byte{0}                   // attributes
	body = binary.AppendVarint(body, 0) // timestamp delta
	body = binary.AppendVarint(body, 0) // offset delta
	body = fn(body)
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

// TestValidateKeepsBytes checks that validation changes nothing in the
// batch: the stored bytes are the produced bytes.
func TestValidateKeepsBytes(t *testing.T) {
	t.Parallel()
	for _, c := range []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		raw := build(t, spec{n: 20, codec: c})
		orig := bytes.Clone(raw)
		_, err := newTestValidator(Config{}).validate(raw)
		require.NoError(t, err)
		require.Equal(t, orig, raw, c.String())
	}
}

// TestValidateHostileAllocations checks that lengths the bytes do not
// back allocate nothing: a 2^31 record count, a 2^31 key length, a
// header count of 2^31, and a compressed batch that expands to 4 MiB
// against a 1 MiB limit. Measured in bytes, not just allocation counts: an
// uncompressed one allocates under 2 KiB per validation (the error
// message), a compressed one under 64 KiB (the decompressor's own state;
// klauspost's zstd allocates a few KiB per stream, about 10 KiB under
// -race, whose detector empties sync.Pools at random). LZ4 is the exception:
// pierrec/lz4 takes its block buffer, as large as the frame declares and
// at most 4 MiB by the LZ4 format, from its own sync.Pool, which the race
// detector empties at random; bounded by the format, not by anything the
// batch declares beyond it.
func TestValidateHostileAllocations(t *testing.T) {
	v := newTestValidator(Config{MaxUncompressedBytes: 1 << 20})
	ok := build(t, spec{n: 3})
	bomb := make([]byte, 4<<20)
	hostile := map[string][]byte{
		"record count": mutate(ok, func(b []byte) []byte {
			put32(offRecordCount, math.MaxInt32)(b)
			return put32(offLastOffsetDelta, math.MaxInt32-1)(b)
		}, true),
		"key length": rawBatch(recordWith(func(dst []byte) []byte {
			return binary.AppendVarint(dst, math.MaxInt32)
		}), 1),
		"header count": rawBatch(recordWith(func(dst []byte) []byte {
			dst = binary.AppendVarint(dst, -1)
			dst = binary.AppendVarint(dst, -1)
			return binary.AppendVarint(dst, math.MaxInt32)
		}), 1),
		"zstd bomb":   build(t, spec{values: [][]byte{bomb}, codec: CodecZstd}),
		"gzip bomb":   build(t, spec{values: [][]byte{bomb}, codec: CodecGzip}),
		"lz4 bomb":    build(t, spec{values: [][]byte{bomb}, codec: CodecLZ4}),
		"snappy bomb": build(t, spec{values: [][]byte{bomb}, codec: CodecSnappy}),
		"xerial bomb": build(t, spec{values: [][]byte{bomb}, codec: CodecSnappy, xerial: true}),
	}
	for name, raw := range hostile {
		_, err := v.validate(raw) // warm the pools
		require.Error(t, err, name)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		const runs = 10
		for range runs {
			_, err = v.validate(raw)
		}
		runtime.ReadMemStats(&after)
		perRun := (after.TotalAlloc - before.TotalAlloc) / runs
		bound := uint64(2 << 10)
		switch h := parseHeader(raw); h.codec() {
		case CodecNone:
		case CodecLZ4:
			bound = 5 << 20
		default:
			bound = 64 << 10
		}
		require.Less(t, perRun, bound, "%s: %d bytes per validation", name, perRun)
		if name != "record count" && name != "key length" && name != "header count" {
			require.ErrorIs(t, err, ErrMessageTooLarge, name)
		} else {
			require.ErrorIs(t, err, ErrInvalidRecord, name)
		}
	}
}

// TestValidateAllocatesNothing checks the hot path: validating a valid
// batch uncompressed or in snappy (kgo's default) allocates nothing once
// the free list is warm. zstd and lz4 take per-stream state from their
// own sync.Pools, which the race detector empties at random: zstd a few
// KiB per validation (up to about 10 KiB under -race; the bound is
// 64 KiB), lz4 its block buffer (see TestValidateHostileAllocations).
func TestValidateAllocatesNothing(t *testing.T) {
	v := newTestValidator(Config{})
	for _, c := range []Codec{CodecNone, CodecSnappy, CodecLZ4, CodecZstd} {
		raw := build(t, spec{n: 100, value: 100, codec: c})
		_, err := v.validate(raw)
		require.NoError(t, err)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		const runs = 50
		for range runs {
			if _, err := v.validate(raw); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		perRun := (after.TotalAlloc - before.TotalAlloc) / runs
		t.Logf("%s: %d bytes per validation", c, perRun)
		switch c {
		case CodecNone, CodecSnappy:
			require.Zero(t, perRun, c.String())
		case CodecLZ4:
			require.Less(t, perRun, uint64(5<<20), c.String())
		default:
			require.Less(t, perRun, uint64(64<<10), c.String())
		}
	}
}

// FuzzValidateBatch feeds Validate arbitrary bytes, with the CRC made
// right when fix is set so that mutations reach the records and the
// decompressors. Properties: no panic;
// every error wraps one of the package's sentinels; an uncompressed input
// allocates less than a fixed bound whatever it declares; and a valid
// batch round-trips: kmsg decodes it, and appended to a log it reads back
// byte for byte with only the base offset changed. The seed corpus,
// in testdata/fuzz/FuzzValidateBatch, has a valid batch of every codec
// (xerial snappy too) and the hostile and broken cases of TestValidate.
func FuzzValidateBatch(f *testing.F) {
	l, err := Open(Config{Now: func() time.Time { return testNow }})
	if err != nil {
		f.Fatal(err)
	}
	defer l.Close()
	if err := l.CreatePartitions("f", 1); err != nil {
		f.Fatal(err)
	}
	sentinels := []error{ErrInvalidRecord, ErrCorruptMessage, ErrMessageTooLarge, ErrInvalidTimestamp, ErrTransactional}
	f.Fuzz(func(t *testing.T, raw []byte, fix bool) {
		if fix && len(raw) >= batchHeaderBytes {
			fixCRC(raw)
		}
		in := bytes.Clone(raw)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		b, err := l.Validate(in)
		runtime.ReadMemStats(&after)
		if len(raw) >= batchHeaderBytes && raw[offAttributes+1]&attrCodecMask == 0 {
			if d := after.TotalAlloc - before.TotalAlloc; d > 256<<10 {
				t.Fatalf("validating %d uncompressed bytes allocated %d bytes", len(raw), d)
			}
		}
		if err != nil {
			for _, s := range sentinels {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error wraps no sentinel: %v", err)
		}
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(raw); err != nil {
			t.Fatalf("valid batch kmsg cannot read: %v", err)
		}
		p, err := l.Append("f", 0, b)
		if err != nil {
			if errors.Is(err, ErrOutOfOrderSequence) || errors.Is(err, ErrInvalidProducerEpoch) || errors.Is(err, ErrUnknownProducerID) {
				return
			}
			t.Fatal(err)
		}
		a, err := p.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if a.Duplicate {
			return
		}
		res, err := l.Read("f", 0, a.BaseOffset, 1, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := withBase(raw, a.BaseOffset); !bytes.Equal(res.Records, want) {
			t.Fatalf("read back %x, want %x", res.Records, want)
		}
	})
}
