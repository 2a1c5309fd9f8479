package records

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCodecNames are Kafka's compression.type names.
func TestCodecNames(t *testing.T) {
	t.Parallel()
	for c, name := range map[Codec]string{CodecNone: "none", CodecGzip: "gzip", CodecSnappy: "snappy", CodecLZ4: "lz4", CodecZstd: "zstd", 6: "codec(6)"} {
		require.Equal(t, name, c.String())
	}
}

// TestDecompressRecords validates large batches of every codec, so the
// streaming window refills many times, records straddle refills, and
// values larger than the window are skipped through the decompressor.
func TestDecompressRecords(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("0123456789"), 20000) // 200 KB, past the window
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		for _, xerial := range []bool{false, true} {
			if xerial && c != CodecSnappy {
				continue
			}
			raw := build(t, spec{n: 3000, value: 97, codec: c, xerial: xerial, headers: 2})
			_, err := newTestValidator(Config{}).validate(raw)
			require.NoError(t, err, "%s xerial=%v", c, xerial)
			raw = build(t, spec{values: [][]byte{[]byte("a"), big, []byte("b"), big}, codec: c, xerial: xerial})
			_, err = newTestValidator(Config{}).validate(raw)
			require.NoError(t, err, "%s xerial=%v big values", c, xerial)
		}
	}
}

// TestDecompressGarbage refuses compressed data that does not decompress
// with ErrCorruptMessage, and data past the limit with
// ErrMessageTooLarge.
func TestDecompressGarbage(t *testing.T) {
	t.Parallel()
	v := newTestValidator(Config{MaxUncompressedBytes: 64 << 10})
	garbage := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 50)
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		good := build(t, spec{n: 50, value: 100, codec: c})
		withRecords := func(recs []byte) []byte {
			b := append(bytes.Clone(good[:batchHeaderBytes]), recs...)
			putLength(b)
			return fixCRC(b)
		}
		_, err := v.validate(withRecords(garbage))
		require.ErrorIs(t, err, ErrCorruptMessage, "%s garbage", c)
		_, err = v.validate(withRecords(good[batchHeaderBytes : len(good)-8]))
		require.ErrorIs(t, err, ErrCorruptMessage, "%s truncated", c)
		_, err = v.validate(build(t, spec{values: [][]byte{make([]byte, 100<<10)}, codec: c}))
		require.ErrorIs(t, err, ErrMessageTooLarge, "%s past the limit", c)
	}
	// xerial: a chunk longer than what is left, and a header cut short.
	x := build(t, spec{n: 5, codec: CodecSnappy, xerial: true})
	recs := bytes.Clone(x[batchHeaderBytes:])
	recs[xerialHeaderBytes] = 0x7f
	b := append(bytes.Clone(x[:batchHeaderBytes]), recs...)
	putLength(b)
	_, err := v.validate(fixCRC(b))
	require.ErrorIs(t, err, ErrCorruptMessage)
	b = append(bytes.Clone(x[:batchHeaderBytes]), xerialMagic+"\x00\x00"...)
	putLength(b)
	_, err = v.validate(fixCRC(b))
	require.ErrorIs(t, err, ErrCorruptMessage)
}

func putLength(b []byte) {
	put32(offLength, int32(len(b)-logOverhead))(b)
}

// TestDecompressionMemoryIsBounded: a raw snappy block is decoded whole,
// so one declaring more than maxSnappyBlock is ErrMessageTooLarge before
// anything is allocated for it, though it is within MaxUncompressedBytes;
// and at most MaxDecoders sets of decompressors exist: one more get waits
// for a set to be given back.
func TestDecompressionMemoryIsBounded(t *testing.T) {
	t.Parallel()
	v := newTestValidator(Config{Settings: Settings{MaxMessageBytes: 2 << 20}})
	raw := build(t, spec{values: [][]byte{make([]byte, maxSnappyBlock+1)}, codec: CodecSnappy})
	require.Less(t, len(raw), 1<<20, "zeros compress")
	_, err := v.validate(raw)
	require.ErrorIs(t, err, ErrMessageTooLarge)
	ok := build(t, spec{values: [][]byte{make([]byte, maxSnappyBlock-1<<10)}, codec: CodecSnappy})
	_, err = v.validate(ok)
	require.NoError(t, err, "a block within the bound")

	c := newCodecs()
	var held []*decoders
	for range MaxDecoders() {
		held = append(held, c.get())
	}
	got := make(chan *decoders, 1)
	go func() { got <- c.get() }()
	select {
	case <-got:
		t.Fatal("a set beyond MaxDecoders was made")
	case <-time.After(50 * time.Millisecond): // it waits
	}
	c.put(held[0])
	require.Same(t, held[0], <-got, "the waiting get takes the set given back")
}

// TestDecodeBytesBoundsEachCodec: the memory a batch's decompression is
// said to need follows its codec and the sizes its compressed data
// declares, and never passes DecoderBytes.
func TestDecodeBytesBoundsEachCodec(t *testing.T) {
	t.Parallel()
	require.Zero(t, DecodeBytes(build(t, spec{n: 10, value: 100})))
	require.Equal(t, int64(windowBytes+64<<10), DecodeBytes(build(t, spec{n: 10, value: 100, codec: CodecGzip})))
	snappy := build(t, spec{values: [][]byte{make([]byte, 1<<20)}, codec: CodecSnappy})
	require.Greater(t, DecodeBytes(snappy), int64(windowBytes+1<<20), "the block holds the whole records section")
	require.Less(t, DecodeBytes(snappy), int64(windowBytes+1<<20+64))
	xerial := build(t, spec{values: [][]byte{make([]byte, 1<<20)}, codec: CodecSnappy, xerial: true})
	require.LessOrEqual(t, DecodeBytes(xerial), int64(windowBytes+64<<10), "one chunk at a time")
	lz4 := DecodeBytes(build(t, spec{values: [][]byte{make([]byte, 1<<20)}, codec: CodecLZ4}))
	require.Contains(t, []int64{windowBytes + 2*64<<10, windowBytes + 2*256<<10, windowBytes + 2*1<<20, windowBytes + 2*4<<20}, lz4)
	zstd := DecodeBytes(build(t, spec{values: [][]byte{make([]byte, 32<<20)}, codec: CodecZstd}))
	require.LessOrEqual(t, zstd, int64(windowBytes+zstdMaxWindow+256<<10))
	require.LessOrEqual(t, zstd, int64(DecoderBytes))
	require.Greater(t, zstd, int64(windowBytes+256<<10), "the window of a frame of 32 MiB")
}
