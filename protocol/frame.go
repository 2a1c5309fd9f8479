package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DefaultMaxFrameBytes is the frame size cap used when none is given: 16 MiB.
// Kafka's socket.request.max.bytes defaults to 100 MiB; a broker that only
// coordinates groups never needs frames that large.
const DefaultMaxFrameBytes = 16 << 20

// frameChunk is how much of a large frame we allocate before its bytes
// arrive. A peer that announces a large frame and then stalls costs us at
// most this much, not the announced size; one that trickles bytes costs at
// most twice what it has sent (readChunked doubles only once the previous
// part is full). Small, because a server may hold one such frame per
// connection, for thousands of connections.
const frameChunk = 4 << 10

// ErrFrameTooLarge matches every *FrameSizeError: a size prefix that is
// negative or above the cap. Kafka answers both with InvalidReceiveException
// and closes the connection (NetworkReceive.readFrom); so do we.
var ErrFrameTooLarge = errors.New("protocol: invalid frame size")

// FrameSizeError reports a frame whose size prefix is negative or larger than
// the cap. errors.Is(err, ErrFrameTooLarge) is true for it.
type FrameSizeError struct {
	Size int32 // the size prefix as sent by the peer
	Max  int32 // the cap in force
}

// Error describes the bad size and the cap.
func (e *FrameSizeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("protocol: negative frame size %d", e.Size)
	}
	return fmt.Sprintf("protocol: frame size %d exceeds max %d", e.Size, e.Max)
}

// Is makes errors.Is(err, ErrFrameTooLarge) true.
func (e *FrameSizeError) Is(target error) bool { return target == ErrFrameTooLarge }

// ReadFrame reads one frame from r: an int32 big-endian size, then that many
// bytes. It returns the bytes after the size prefix (header and body).
//
// maxBytes <= 0 means DefaultMaxFrameBytes. A size below 0 or above maxBytes gives a
// *FrameSizeError and nothing more is read. A clean end of stream before the
// first byte of the size gives io.EOF; any other short read gives
// io.ErrUnexpectedEOF.
//
// The frame is read into buf when its capacity suffices, so a connection can
// reuse one buffer; the result aliases buf in that case and is valid only
// until the next call. Otherwise ReadFrame allocates in steps as data arrives
// and never allocates more than the announced size. r may be a *bufio.Reader
// holding several pipelined requests.
func ReadFrame(r io.Reader, maxBytes int32, buf []byte) ([]byte, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxFrameBytes
	}
	var sizeBuf [4]byte
	if _, err := io.ReadFull(r, sizeBuf[:]); err != nil {
		return nil, err // io.EOF only when no byte of the size arrived
	}
	size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
	if size < 0 || size > maxBytes {
		return nil, &FrameSizeError{Size: size, Max: maxBytes}
	}
	n := int(size)
	if n <= cap(buf) || n <= frameChunk {
		if n > cap(buf) || buf == nil { // an empty frame is not nil
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, noEOF(err)
		}
		return buf, nil
	}
	return readChunked(r, n, buf[:0])
}

// readChunked reads n bytes into buf, growing it by doubling (capped at n)
// only after the previous part has been filled.
func readChunked(r io.Reader, n int, buf []byte) ([]byte, error) {
	if cap(buf) < frameChunk {
		buf = make([]byte, 0, frameChunk)
	}
	for len(buf) < n {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(2*cap(buf), n))
			copy(grown, buf)
			buf = grown
		}
		part := buf[len(buf):cap(buf)]
		if _, err := io.ReadFull(r, part); err != nil {
			return nil, noEOF(err)
		}
		buf = buf[:cap(buf)]
	}
	return buf, nil
}

// noEOF turns io.EOF inside a frame into io.ErrUnexpectedEOF: once the size
// has been read, the frame is owed in full.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// AppendResponse appends resp as one frame to dst and returns the result:
// size | correlation id | header tags | body.
//
// Flexible responses use response header v1, which ends with an empty tagged
// field section (one 0x00 byte). ApiVersions (key 18) always uses response
// header v0, even at flexible versions, so that a client can read it before it
// knows our versions (ApiVersionsResponse.json, KIP-511).
func AppendResponse(dst []byte, corrID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // size, filled in below
	dst = binary.BigEndian.AppendUint32(dst, uint32(corrID))
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		dst = append(dst, 0) // no tagged fields
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
