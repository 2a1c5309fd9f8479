package records

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec is a batch's compression codec: bits 0-2 of its attributes, as
// Kafka's CompressionType ids.
type Codec int8

// The codecs Kafka defines. Validate refuses any other id.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

// String returns Kafka's name for c.
func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// xerialMagic starts snappy data framed as Java clients write it
// (org.xerial.snappy.SnappyOutputStream): the 8 magic bytes, a version
// and a compatible version (4 bytes each), then chunks, each a 4-byte
// big-endian length and one snappy block. Without it the data is one raw
// snappy block, as kgo and librdkafka write it.
const (
	xerialMagic       = "\x82SNAPPY\x00"
	xerialHeaderBytes = 16
)

const (
	// windowBytes is the scanner's window over decompressed data: the most
	// a validation holds at once, however large the batch decompresses.
	windowBytes = 64 << 10
	// zstdMaxWindow bounds the history a zstd frame may ask the decoder
	// to keep: 8 MiB, the size the zstd format asks every decoder to
	// support. Frames asking for more are refused as corrupt.
	zstdMaxWindow = 8 << 20
	// maxPooledBytes is the largest buffer put back into a pool, so that
	// one large raw snappy batch does not stay pinned.
	maxPooledBytes = 4 << 20
	// maxSnappyBlock is the most a raw snappy block (or one xerial chunk)
	// may decode to: it is decoded whole, so this bounds its buffer. A
	// producer's raw block is its whole batch, at most about 1 MiB for kgo
	// and librdkafka; Java frames snappy in 32 KiB xerial chunks.
	maxSnappyBlock = 8 << 20
)

// DecoderBytes bounds the memory one decompression holds at once: the
// scanner's window and the one decompressor in use (a zstd history of at
// most zstdMaxWindow and its block buffers, lz4's blocks of at most 4 MiB,
// or a raw snappy block of at most maxSnappyBlock), however much the batch
// inflates. A server counts it in its memory budget for each request that
// decompresses; a batch that would need more (a zstd window above 8 MiB,
// a snappy block above 8 MiB) is refused (ErrCorruptMessage,
// ErrMessageTooLarge) instead of allocated.
const DecoderBytes = windowBytes + zstdMaxWindow + 1<<20

// MaxDecoders returns how many sets of decompressors the log keeps at
// most: a decompression beyond them waits for one to be given back, so
// that however many requests decompress at once, at most MaxDecoders
// times DecoderBytes is held for it.
func MaxDecoders() int { return 2 * runtime.GOMAXPROCS(0) }

// errTooLarge marks decompressed data past Config.MaxUncompressedBytes.
var errTooLarge = errors.New("decompressed records exceed the limit")

// decoders is one set of decompressors and buffers, reused through
// codecs.pool. One goroutine uses a set at a time.
type decoders struct {
	src    bytes.Reader
	gzip   *gzip.Reader
	lz4    *lz4.Reader
	zstd   *zstd.Decoder
	xerial xerialReader
	window []byte // the scanner's window, windowBytes long
	flat   []byte // a raw snappy block, decoded whole
}

// codecs hands out at most MaxDecoders sets of decoders, so that what
// they hold is bounded however many goroutines decompress, and a warm
// validation allocates nothing (sync.Pool may drop its items at any GC).
type codecs struct {
	free  chan *decoders // sets given back; never more than cap(free) exist
	slots chan struct{}  // one token per set made
}

func newCodecs() *codecs {
	n := MaxDecoders()
	return &codecs{free: make(chan *decoders, n), slots: make(chan struct{}, n)}
}

// get returns a free set, makes one while fewer than MaxDecoders exist, or
// waits for one to be given back. Callers hold no lock while they wait,
// and every holder gives its set back once its batch is scanned.
func (c *codecs) get() *decoders {
	select {
	case d := <-c.free:
		return d
	default:
	}
	select {
	case d := <-c.free:
		return d
	case c.slots <- struct{}{}:
		return &decoders{window: make([]byte, windowBytes)}
	}
}

func (c *codecs) put(d *decoders) {
	d.src.Reset(nil)
	d.xerial.src = nil
	if cap(d.flat) > maxPooledBytes {
		d.flat = nil
	}
	if cap(d.xerial.out) > maxPooledBytes {
		d.xerial.out = nil
	}
	c.free <- d // never blocks: at most cap(free) sets exist
}

// open prepares s to scan the records of a batch compressed with codec,
// holding at most limit bytes once decompressed. The scanner reads from d,
// which must stay checked out until the scan ends. Errors wrap
// ErrCorruptMessage or ErrMessageTooLarge.
func (d *decoders) open(s *scanner, codec Codec, data []byte, limit int64) error {
	if codec == CodecNone {
		*s = scanner{buf: data, end: len(data)}
		return nil
	}
	var r io.Reader
	d.src.Reset(data)
	switch codec {
	case CodecGzip:
		var err error
		if d.gzip == nil {
			d.gzip, err = gzip.NewReader(&d.src)
		} else {
			err = d.gzip.Reset(&d.src)
		}
		if err != nil {
			d.gzip = nil
			return fmt.Errorf("%w: gzip: %w", ErrCorruptMessage, err)
		}
		r = d.gzip
	case CodecSnappy:
		if len(data) >= len(xerialMagic) && string(data[:len(xerialMagic)]) == xerialMagic {
			if len(data) < xerialHeaderBytes {
				return fmt.Errorf("%w: snappy: xerial header cut short", ErrCorruptMessage)
			}
			d.xerial = xerialReader{src: data[xerialHeaderBytes:], out: d.xerial.out[:0], limit: limit}
			r = &d.xerial
			break
		}
		flat, err := decodeSnappy(d.flat[:0], data, min(limit, maxSnappyBlock))
		if err != nil {
			return err
		}
		d.flat = flat
		*s = scanner{buf: flat, end: len(flat)}
		return nil
	case CodecLZ4:
		if d.lz4 == nil {
			d.lz4 = lz4.NewReader(&d.src)
		} else {
			d.lz4.Reset(&d.src)
		}
		r = d.lz4
	case CodecZstd:
		if d.zstd == nil {
			dec, err := zstd.NewReader(nil,
				zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(zstdMaxWindow))
			if err != nil {
				return fmt.Errorf("zstd decoder: %w", err) // options are constant: never happens
			}
			d.zstd = dec
		}
		if err := d.zstd.Reset(&d.src); err != nil {
			return fmt.Errorf("%w: zstd: %w", ErrCorruptMessage, err)
		}
		r = d.zstd
	default:
		return fmt.Errorf("%w: unknown compression codec %d", ErrCorruptMessage, codec)
	}
	*s = scanner{buf: d.window, r: r, limit: limit}
	return nil
}

// decodeSnappy decodes one raw snappy block into dst, refusing blocks
// that declare more than limit bytes before allocating for them.
func decodeSnappy(dst, src []byte, limit int64) ([]byte, error) {
	n, err := s2.DecodedLen(src)
	if err != nil {
		return dst, fmt.Errorf("%w: snappy: %w", ErrCorruptMessage, err)
	}
	if int64(n) > limit {
		return dst, fmt.Errorf("%w: snappy block declares %d bytes: %w", ErrMessageTooLarge, n, errTooLarge)
	}
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	out, err := s2.Decode(dst[:n], src)
	if err != nil {
		return dst, fmt.Errorf("%w: snappy: %w", ErrCorruptMessage, err)
	}
	return out, nil
}

// xerialReader decodes xerial-framed snappy chunk by chunk.
type xerialReader struct {
	src   []byte // chunks not decoded yet
	out   []byte // the current chunk, decoded
	pos   int    // bytes of out already read
	total int64  // bytes decoded so far
	limit int64
}

func (x *xerialReader) Read(p []byte) (int, error) {
	for x.pos == len(x.out) {
		if len(x.src) == 0 {
			return 0, io.EOF
		}
		if len(x.src) < 4 {
			return 0, fmt.Errorf("%w: snappy: xerial chunk length cut short", ErrCorruptMessage)
		}
		n := binary.BigEndian.Uint32(x.src)
		if uint64(n) > uint64(len(x.src)-4) {
			return 0, fmt.Errorf("%w: snappy: xerial chunk of %d bytes, %d left", ErrCorruptMessage, n, len(x.src)-4)
		}
		chunk := x.src[4 : 4+n]
		x.src = x.src[4+n:]
		out, err := decodeSnappy(x.out[:0], chunk, min(x.limit-x.total, maxSnappyBlock))
		if err != nil {
			return 0, err
		}
		x.out, x.pos = out, 0
		x.total += int64(len(out))
	}
	n := copy(p, x.out[x.pos:])
	x.pos += n
	return n, nil
}

// PeekCodec returns the compression codec a produced batch's header
// names, without validating anything else; ok is false when raw is too
// short to hold a header or is not magic 2. ProduceRequest.validateRecords
// refuses zstd before Produce v7 before it looks at anything else, so the
// server asks this before Validate.
func PeekCodec(raw []byte) (codec Codec, ok bool) {
	if len(raw) < batchHeaderBytes || raw[offMagic] != 2 {
		return 0, false
	}
	return Codec(binary.BigEndian.Uint16(raw[offAttributes:]) & attrCodecMask), true
}

// DecodeBytes bounds the memory that decompressing the batch raw holds,
// read from its header and the first frame of its compressed data: none
// for an uncompressed batch; the window and gzip's state; a raw snappy
// block's declared size (each xerial chunk's, the largest); lz4's two
// blocks of the frame's block size; zstd's window. Later frames of a batch
// are bounded by DecoderBytes, which bounds the result too.
func DecodeBytes(raw []byte) int64 {
	codec, ok := PeekCodec(raw)
	if !ok || codec == CodecNone {
		return 0
	}
	data := raw[batchHeaderBytes:]
	var n int64
	switch codec {
	case CodecGzip:
		n = 64 << 10
	case CodecSnappy:
		if len(data) >= xerialHeaderBytes && string(data[:len(xerialMagic)]) == xerialMagic {
			for rest := data[xerialHeaderBytes:]; len(rest) >= 4; {
				size := int(binary.BigEndian.Uint32(rest))
				if size > len(rest)-4 {
					break
				}
				if d, err := s2.DecodedLen(rest[4 : 4+size]); err == nil {
					n = max(n, int64(d))
				}
				rest = rest[4+size:]
			}
		} else if d, err := s2.DecodedLen(data); err == nil {
			n = int64(d)
		}
	case CodecLZ4:
		n = 2 * 4 << 20
		if len(data) >= 6 && binary.LittleEndian.Uint32(data) == 0x184D2204 {
			if id := data[5] >> 4 & 7; id >= 4 {
				n = 2 * (64 << 10) << (2 * (id - 4)) // 64 KiB, 256 KiB, 1 MiB, 4 MiB
			}
		}
	case CodecZstd:
		n = zstdMaxWindow
		var h zstd.Header
		if err := h.Decode(data); err == nil {
			w := h.WindowSize
			if h.SingleSegment {
				w = h.FrameContentSize
			}
			n = int64(min(w, zstdMaxWindow)) + 256<<10
		}
	}
	return min(windowBytes+n, DecoderBytes)
}
