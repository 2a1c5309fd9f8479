package protocol

// Skimming a request frame too large to hold: its header and, for a
// Produce, the names its answer must repeat (topics and partition
// indexes) are decoded as its bytes arrive, and everything else (the
// records) is read past without being kept, so that the memory it costs
// does not depend on its size. The server answers such a Produce
// MESSAGE_TOO_LARGE for every partition it names, as Kafka answers a batch
// over message.max.bytes (docs/design.md section 4).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// SkimClientIDBytes is the most of a skimmed request's client id kept in
// its header: enough to name the client in a log line.
const SkimClientIDBytes = 256

// Costs of what a skimmed Produce keeps, charged against the caller's
// bound: a topic's name and its entry, and a partition's entry.
const (
	skimTopicCost     = 48
	skimPartitionCost = 8
)

// errSkimBound is a skimmed request that names more than its caller's
// bound allows it to keep.
var errSkimBound = errors.New("protocol: skimmed request names more than its bound")

// Skimmer reads one frame of a known size from a stream, never past the
// frame's end and without keeping its bytes: only what its methods
// return. Owned by one goroutine.
type Skimmer struct {
	r    io.Reader
	left int64 // bytes of the frame not yet read
	buf  [8]byte
}

// NewSkimmer returns a Skimmer of the frame of size bytes that r is about
// to deliver (its size prefix already read). A *bufio.Reader is read past
// without a copy (its Discard).
func NewSkimmer(r io.Reader, size int32) *Skimmer {
	return &Skimmer{r: r, left: int64(size)}
}

// Left returns the bytes of the frame not yet read.
func (s *Skimmer) Left() int64 { return s.left }

// Discard reads the rest of the frame without keeping it.
func (s *Skimmer) Discard() error { return s.skip(s.left) }

// Header reads the request header's fixed fields and its client id, of
// which it keeps at most SkimClientIDBytes. The tagged fields of a
// flexible header (v2) are read by the method that reads the body, as
// DecodeRequest reads them, since only the API version says whether they
// are there.
func (s *Skimmer) Header() (RequestHeader, error) {
	var h RequestHeader
	if err := s.fill(8); err != nil {
		return h, fmt.Errorf("%w: %d bytes, need at least 10", ErrMalformedHeader, s.left)
	}
	h.APIKey = int16(binary.BigEndian.Uint16(s.buf[0:]))
	h.APIVersion = int16(binary.BigEndian.Uint16(s.buf[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(s.buf[4:]))
	if err := s.fill(2); err != nil {
		return h, fmt.Errorf("%w: client id truncated", ErrMalformedHeader)
	}
	n := int16(binary.BigEndian.Uint16(s.buf[:2]))
	if n < 0 {
		return h, nil // null
	}
	id, err := s.bytes(min(int(n), SkimClientIDBytes))
	if err == nil {
		err = s.skip(int64(n) - int64(len(id)))
	}
	if err != nil {
		return h, fmt.Errorf("%w: client id truncated", ErrMalformedHeader)
	}
	clientID := string(id)
	h.ClientID = &clientID
	return h, nil
}

// ProduceSkim is what a skimmed Produce request names: everything its
// answer needs, nothing of its records.
type ProduceSkim struct {
	Acks   int16
	Topics []ProduceSkimTopic
}

// ProduceSkimTopic is one topic of a skimmed Produce.
type ProduceSkimTopic struct {
	Topic      string
	Partitions []ProduceSkimPartition
}

// ProduceSkimPartition is one partition of a skimmed Produce and the size
// of the records it carried (-1: null).
type ProduceSkimPartition struct {
	Partition    int32
	RecordsBytes int32
}

// SkimProduce reads the rest of a Produce request of version (3-12, after
// the Header): the header's tagged fields, then the body, keeping the
// acks and each topic's name and partition indexes and reading past
// everything else, the records above all. What it keeps is charged
// against bound (a topic costs its name's length and 48 bytes, a
// partition 8); a request that names more is an error, as is one whose
// fields run past the frame (ErrMalformedRequest). Bytes after the body
// are left for Discard.
func (s *Skimmer) SkimProduce(version int16, bound int) (ProduceSkim, error) {
	var skim ProduceSkim
	if version < 3 || version > 12 {
		return skim, &UnsupportedVersionError{Key: int16(kmsg.Produce), Version: version}
	}
	flexible := version >= 9
	if flexible {
		if err := s.skipTags(); err != nil {
			return skim, fmt.Errorf("%w: tagged fields truncated", ErrMalformedHeader)
		}
	}
	malformed := func(what string, err error) error {
		return fmt.Errorf("%w: Produce v%d: %s: %w", ErrMalformedRequest, version, what, err)
	}
	if _, err := s.skipString(flexible, true); err != nil { // transactional id
		return skim, malformed("transactional id", err)
	}
	if err := s.fill(6); err != nil {
		return skim, malformed("acks and timeout", err)
	}
	skim.Acks = int16(binary.BigEndian.Uint16(s.buf[:2]))
	topics, err := s.arrayLen(flexible)
	if err != nil {
		return skim, malformed("topics", err)
	}
	for range topics {
		n, err := s.stringLen(flexible, false)
		if err != nil {
			return skim, malformed("topic name", err)
		}
		if bound -= skimTopicCost + n; bound < 0 {
			return skim, errSkimBound
		}
		name, err := s.bytes(n)
		if err != nil {
			return skim, malformed("topic name", err)
		}
		t := ProduceSkimTopic{Topic: string(name)}
		partitions, err := s.arrayLen(flexible)
		if err != nil {
			return skim, malformed("partitions", err)
		}
		if bound -= skimPartitionCost * partitions; bound < 0 {
			return skim, errSkimBound
		}
		t.Partitions = make([]ProduceSkimPartition, 0, partitions)
		for range partitions {
			if err := s.fill(4); err != nil {
				return skim, malformed("partition", err)
			}
			p := ProduceSkimPartition{Partition: int32(binary.BigEndian.Uint32(s.buf[:4]))}
			if p.RecordsBytes, err = s.skipBytes(flexible); err != nil {
				return skim, malformed("records", err)
			}
			if flexible {
				if err := s.skipTags(); err != nil {
					return skim, malformed("partition tags", err)
				}
			}
			t.Partitions = append(t.Partitions, p)
		}
		if flexible {
			if err := s.skipTags(); err != nil {
				return skim, malformed("topic tags", err)
			}
		}
		skim.Topics = append(skim.Topics, t)
	}
	if flexible {
		if err := s.skipTags(); err != nil {
			return skim, malformed("tags", err)
		}
	}
	return skim, nil
}

// errPastFrame is a field that runs past the frame's end.
var errPastFrame = errors.New("runs past the end of the frame")

// fill reads the next n (at most 8) bytes into buf.
func (s *Skimmer) fill(n int) error {
	if int64(n) > s.left {
		return errPastFrame
	}
	if _, err := io.ReadFull(s.r, s.buf[:n]); err != nil {
		return noEOF(err)
	}
	s.left -= int64(n)
	return nil
}

// bytes reads the next n bytes into a new slice: only for what is kept,
// whose size the caller has bounded.
func (s *Skimmer) bytes(n int) ([]byte, error) {
	if int64(n) > s.left {
		return nil, errPastFrame
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(s.r, b); err != nil {
		return nil, noEOF(err)
	}
	s.left -= int64(n)
	return b, nil
}

// skip reads past the next n bytes without keeping them.
func (s *Skimmer) skip(n int64) error {
	if n > s.left {
		return errPastFrame
	}
	var err error
	if d, ok := s.r.(interface{ Discard(int) (int, error) }); ok {
		for n > 0 && err == nil {
			var got int
			got, err = d.Discard(int(min(n, math.MaxInt32)))
			n -= int64(got)
			s.left -= int64(got)
		}
	} else {
		var got int64
		got, err = io.CopyN(io.Discard, s.r, n)
		s.left -= got
	}
	return noEOF(err)
}

// uvarint reads an unsigned varint of at most 32 bits, as the compact
// lengths and the tag numbers and sizes of flexible versions are.
func (s *Skimmer) uvarint() (uint32, error) {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		if err := s.fill(1); err != nil {
			return 0, err
		}
		b := s.buf[0]
		v |= uint32(b&0x7f) << shift
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, errors.New("varint longer than 5 bytes")
}

// length reads a length: a uvarint less one (flexible; 0 is null) or a
// signed int16 or int32 (width bytes). Null is -1; any other negative
// length is an error unless nullable.
func (s *Skimmer) length(flexible bool, width int, nullable bool) (int64, error) {
	var n int64
	if flexible {
		u, err := s.uvarint()
		if err != nil {
			return 0, err
		}
		n = int64(u) - 1
	} else {
		if err := s.fill(width); err != nil {
			return 0, err
		}
		if width == 2 {
			n = int64(int16(binary.BigEndian.Uint16(s.buf[:2])))
		} else {
			n = int64(int32(binary.BigEndian.Uint32(s.buf[:4])))
		}
	}
	if n < -1 || n == -1 && !nullable {
		return 0, fmt.Errorf("invalid length %d", n)
	}
	return n, nil
}

// stringLen reads a string's length: -1 for a null one.
func (s *Skimmer) stringLen(flexible, nullable bool) (int, error) {
	n, err := s.length(flexible, 2, nullable)
	return int(n), err
}

// skipString reads past a string, returning its length.
func (s *Skimmer) skipString(flexible, nullable bool) (int, error) {
	n, err := s.stringLen(flexible, nullable)
	if err == nil && n > 0 {
		err = s.skip(int64(n))
	}
	return n, err
}

// skipBytes reads past nullable bytes, returning their length (-1: null).
func (s *Skimmer) skipBytes(flexible bool) (int32, error) {
	n, err := s.length(flexible, 4, true)
	if err == nil && n > 0 {
		err = s.skip(n)
	}
	return int32(n), err
}

// arrayLen reads an array's length; a null array is empty.
func (s *Skimmer) arrayLen(flexible bool) (int, error) {
	n, err := s.length(flexible, 4, true)
	if err != nil {
		return 0, err
	}
	// Each element takes at least one byte, so a length past what is left
	// cannot be true: refuse it before anything is made for it.
	if n > s.left {
		return 0, errPastFrame
	}
	return int(max(n, 0)), nil
}

// skipTags reads past a tagged field section.
func (s *Skimmer) skipTags() error {
	num, err := s.uvarint()
	for ; err == nil && num > 0; num-- {
		if _, err = s.uvarint(); err != nil {
			break
		}
		var size uint32
		if size, err = s.uvarint(); err == nil {
			err = s.skip(int64(size))
		}
	}
	return err
}
