package server

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// What a request holds beyond its frame. A frame's bytes are counted in
// the budget's frames lane (frame.go), but a request also holds what it
// decodes to and what is built for its answer, and a few bytes of a frame
// can become hundreds: a Produce topic with null partitions is 3 bytes on
// the wire and about 80 bytes of kmsg struct, and its answer as much
// again; a DeleteTopics name of no bytes gets an answer of its own.
// Without a bound, eight frames under the 16 MiB cap took the process to
// gigabytes (docs/reliability.md).
//
// So before a request is decoded, what it contains is counted from its
// frame (elements.go): its arrays' elements, what they decode to, the
// bytes of its strings and its tagged fields. Its bound is then
//
//	requestBaseBytes + decoded + held + strings*stringCopies
//	  + top strings*topStringCopies + tag sections*tagSectionBytes
//	  + tags*tagBytes
//
// where held is, for each array, its elements times what one holds
// beyond its decoded struct (its answer's element, the answer encoded,
// what the handler keeps for it), and its strings' bytes times what a
// handler copies of them beyond stringCopies: the API's holds, in the
// dispatch table. Each is measured on the
// shapes that hold the most per element (every array filled with empty
// elements, each with a tag or not) by TestRequestBoundsHoldHostileShapes,
// which fails for an API whose requests hold more than their bound, or
// reserve more than four times what real ones hold, or that has no shape.
// What an answer holds beyond its request's elements (every topic's
// metadata, a group's members, a Fetch's records) is reserved by its
// handler in the work lane, as before (the largeAnswer trait).
//
// The bound is reserved in the work lane once the frame is read and before
// it is decoded (reserveRequest); the connection holds no work then, so
// it may wait as a frame's reservation would. A request whose bound passes
// the lane's maximum could never be served within the budget: it is
// refused, and its connection closed. A frame's records, protocol
// metadata and assignments are referred to by its request, not copied,
// and cost nothing more, so a real 16 MiB Produce reserves only what its
// topics and partitions hold.

// smallRequestBytes is the largest bound a request may hold beyond its
// frame without reserving it: a heartbeat, kgo's commit of hundreds of
// partitions and most of a consumer's traffic. What a connection holds
// unreserved is bounded by smallFrameBytes of frame and this.
const smallRequestBytes = 64 << 10

// requestBaseBytes is what any request may hold whatever its elements:
// the request's and its answer's top-level structs, a fixed answer
// (ApiVersions, DescribeCluster).
const requestBaseBytes = 8 << 10

// What a request holds per byte of its strings beyond the decoded copy
// (the answer's encoded copy, a name in an error message), more per byte
// of its own top-level strings (a transactional id in an error, a log
// line and the coordinator's state), per tag section that holds tags
// (kmsg keeps a struct's unknown tags in a map of its own) and per tag
// (the map's entry). Measured on the hostile shapes, with room
// (TestRequestBoundsHoldHostileShapes).
const (
	stringCopies    = 3
	topStringCopies = 5
	tagSectionBytes = 384
	tagBytes        = 160
)

// boundOf returns the bound of what a request holds beyond its frame,
// from what it contains.
func boundOf(e elements) int64 {
	return requestBaseBytes + e.decoded + e.held + e.strings*stringCopies + e.top*topStringCopies +
		e.tagged*tagSectionBytes + e.tags*tagBytes
}

// quickBound returns a bound of what a frame of size bytes at layout l
// may hold beyond itself, whatever it contains: what its costliest byte
// holds (l.perByte), for every byte, and its top-level tag section. It
// spares a small frame the count (a heartbeat, a commit of 16 partitions).
func quickBound(l *requestLayout, size int) int64 {
	n := requestBaseBytes + int64(size)*l.perByte
	if l.flexible {
		n += tagSectionBytes
	}
	return n
}

// tooMuch is the error that closes the connection of a request whose
// bound passes the lane's maximum.
func tooMuch(key int16, size, holds, max int64) error {
	return fmt.Errorf("%w: a %s request of %d bytes holds %d bytes decoded and answered, past the budget's %d",
		errBudget, kmsg.NameForKey(key), size, holds, max)
}

// requestBound returns the bound of what the request of API key at
// version, whose frame is frame and body (after the header's client id)
// body, holds beyond its frame; 0 for a request that cannot hold more than
// smallRequestBytes, and for a key or version not served (its request is
// answered or closed before it is decoded).
func (s *Server) requestBound(key, version int16, frame, body []byte) int64 {
	if key < 0 || int(key) >= len(s.handlers) {
		return 0
	}
	a := &s.handlers[key]
	if version < 0 || int(version) >= len(a.layouts) || a.layouts[version] == nil {
		return 0
	}
	l := a.layouts[version]
	if quickBound(l, len(frame)) <= smallRequestBytes {
		return 0 // a heartbeat, a commit of a few partitions: not counted
	}
	if n := boundOf(countElements(l, body)); n > smallRequestBytes {
		return n
	}
	return 0
}

// reserveRequest reserves, before a request is decoded, what it holds
// beyond its frame (requestBound), in the work lane. The connection holds
// no work then (frameBuffered does not let such a frame share a write,
// and no request before it holds work once answered), so the reservation
// may wait as a frame's would. A request whose bound passes the lane's
// maximum is refused.
func (s *Server) reserveRequest(r *request, key, version int16, frame, body []byte) error {
	if r.acct == nil {
		return nil
	}
	n := s.requestBound(key, version, frame, body)
	if n == 0 {
		return nil
	}
	if n > s.mem.work.max {
		s.mem.work.refuse()
		return tooMuch(key, int64(len(frame)), n, s.mem.work.max)
	}
	if _, err := r.acct.reserve(r.ctx, n); err != nil {
		return fmt.Errorf("%w: %d bytes for a request not free within %v", errBudget, n, r.acct.wait)
	}
	return nil
}

// requestBody returns a request frame's body after its header's client
// id, as protocol.ParseHeader does, without allocating; false for a frame
// too short for its header.
func requestBody(frame []byte) ([]byte, bool) {
	if len(frame) < 10 {
		return nil, false
	}
	n := int(int16(binary.BigEndian.Uint16(frame[8:])))
	if n < 0 {
		n = 0
	}
	if len(frame) < 10+n {
		return nil, false
	}
	return frame[10+n:], true
}

// wire reads Kafka's primitive encodings from a request body, only to
// count what kmsg will make of them; past the end it reads zeros and sets
// bad.
type wire struct {
	b        []byte
	flexible bool
	bad      bool
}

func (w *wire) skip(n int) {
	if n < 0 || n > len(w.b) {
		w.b, w.bad = nil, true
		return
	}
	w.b = w.b[n:]
}

func (w *wire) int16() int16 {
	if len(w.b) < 2 {
		w.skip(2)
		return 0
	}
	v := int16(binary.BigEndian.Uint16(w.b))
	w.b = w.b[2:]
	return v
}

func (w *wire) int32() int32 {
	if len(w.b) < 4 {
		w.skip(4)
		return 0
	}
	v := int32(binary.BigEndian.Uint32(w.b))
	w.b = w.b[4:]
	return v
}

func (w *wire) uvarint() uint32 {
	if len(w.b) > 0 && w.b[0] < 0x80 { // one byte: most lengths and tag counts
		v := w.b[0]
		w.b = w.b[1:]
		return uint32(v)
	}
	v, n := binary.Uvarint(w.b)
	if n <= 0 || v > 1<<32-1 {
		w.b, w.bad = nil, true
		return 0
	}
	w.b = w.b[n:]
	return uint32(v)
}

// nullableString skips a string or nullable string and returns its
// length (0 for null).
func (w *wire) nullableString() int {
	var l int
	if w.flexible {
		l = int(w.uvarint()) - 1
	} else {
		l = int(w.int16())
	}
	if l <= 0 {
		return 0
	}
	w.skip(l)
	return l
}

// nullableBytes skips a byte array or nullable byte array.
func (w *wire) nullableBytes() {
	var l int
	if w.flexible {
		l = int(w.uvarint()) - 1
	} else {
		l = int(w.int32())
	}
	if l > 0 {
		w.skip(l)
	}
}

// arrayLen reads an array's length as kmsg does: null is empty, and a
// length past the bytes left is bad (kmsg refuses it before it allocates).
func (w *wire) arrayLen() int {
	var l int
	if w.flexible {
		l = int(w.uvarint()) - 1
	} else {
		l = int(w.int32())
	}
	if l <= 0 {
		return 0
	}
	if l > len(w.b) {
		w.b, w.bad = nil, true
		return 0
	}
	return l
}

// tags skips a tagged field section, in a flexible version, and returns
// how many fields it held and the bytes of their values.
func (w *wire) tags() (fields, size int64) {
	if !w.flexible {
		return 0, 0
	}
	if len(w.b) > 0 && w.b[0] == 0 { // none: most sections
		w.b = w.b[1:]
		return 0, 0
	}
	for n := w.uvarint(); n > 0 && !w.bad; n-- {
		w.uvarint()
		l := w.uvarint()
		w.skip(int(l))
		fields++
		size += int64(l)
	}
	return fields, size
}
