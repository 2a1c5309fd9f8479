package server

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// What a request holds beyond its frame. A frame's bytes are counted in
// the budget's frames lane (frame.go), but a request also holds what it
// decodes to and what is built for its answer, and a few bytes of a frame
// can become hundreds: a Produce topic with null partitions is 3 bytes on
// the wire and about 80 bytes of kmsg struct, and its answer as much
// again; a DeleteTopics name of no bytes gets an answer with an error
// message. Without a bound, eight frames under the 16 MiB cap took the
// process to gigabytes (docs/reliability.md).
//
// So each API in the dispatch table declares, as holds, a bound on what
// a request of it holds per byte of its frame: the decoded request, the
// answer the handler builds for its elements and the answer encoded. The
// bound is measured, for every API and version, on the shapes that hold
// the most per byte (every array filled with empty elements, every string
// long), by TestRequestBoundsHoldHostileShapes, which fails for an API
// whose requests hold more than it declares, or that has no shape. What
// an answer holds beyond its request's elements (every topic's metadata,
// a group's members, a Fetch's records) is reserved by its handler in the
// work lane, as before (the largeAnswer trait).
//
// The bound is reserved with the frame, in the frames lane, before the
// frame's body is read: a frame over smallFrameBytes reserves its size
// and its bound at once (readLargeFrame), and a small frame whose bound
// passes smallRequestBytes reserves it before it is decoded
// (reserveRequest). A request whose frame and bound together pass the
// lane's maximum is refused, and its connection closed, before its body is
// read: it could never be served within the budget. A Produce is the
// exception, and so are a JoinGroup and a SyncGroup: their frames may be
// mostly records, protocol metadata or assignments, which their requests
// refer to rather than copy, so a bound per frame byte would be far too
// much for a real one. Their bound (counts) is counted instead from their
// elements, read from the frame before it is decoded (produceHolds,
// joinGroupHolds, syncGroupHolds), and reserved in the work lane, which
// the connection does not hold then.

// perByte is what a request holds per byte of its frame, in eighths of a
// byte.
type perByte uint32

// perFrameByte is one byte held per byte of frame.
const perFrameByte perByte = 8

// smallRequestBytes is the largest bound a small frame may hold beyond
// itself without reserving it: a heartbeat, kgo's commit of 16 partitions
// (about 20 KiB by the commit's bound) and most of a consumer's traffic.
// What a connection holds unreserved is bounded by smallFrameBytes of
// frame and this.
const smallRequestBytes = 64 << 10

// requestBaseBytes is what any request may hold whatever its size: the
// request's and its answer's top-level structs, a fixed answer
// (ApiVersions, DescribeCluster).
const requestBaseBytes = 8 << 10

// tagsHold is what a flexible version's tagged fields hold per byte of
// frame, whatever the API: kmsg keeps every unknown tag of every struct in
// a map, an entry of about a hundred bytes for a tag of two to four.
const tagsHold = 40 * perFrameByte

// holdsFor returns the bound of what a request frame of size bytes of API
// key at version holds beyond the frame, by its API's factor, and in a
// flexible version by tagsHold too; 0 for a Produce, whose bound is
// counted from its frame (produceHolds), and for an unknown key (its
// request closes the connection before it is decoded).
func (s *Server) holdsFor(key, version int16, size int) int64 {
	if key < 0 || int(key) >= len(s.handlers) || s.handlers[key].holds == 0 {
		return 0
	}
	a := &s.handlers[key]
	k := a.holds
	if version >= a.flexible {
		k += tagsHold
	}
	return int64(size)*int64(k)/int64(perFrameByte) + requestBaseBytes
}

// tooMuch is the error that closes the connection of a request whose
// frame and bound pass the lane's maximum.
func tooMuch(key int16, size, holds, max int64) error {
	return fmt.Errorf("%w: a %s request of %d bytes may hold %d bytes decoded and answered, past the budget's %d",
		errBudget, kmsg.NameForKey(key), size, holds, max)
}

// reserveRequest reserves, before a small frame is decoded, what its
// request may hold beyond it, when that passes smallRequestBytes: in the
// frames lane by its API's factor, or, for an API that counts its bound
// (a Produce), in the work lane by what it counts in body. The connection
// holds nothing of either lane then (frameBuffered does not let such a
// frame share a write, and no request before it holds work once
// answered), so the reservation may wait as a frame's would. A frame over
// smallFrameBytes reserved its bound with its size (readLargeFrame), but
// a counted one is counted here whatever its size.
func (s *Server) reserveRequest(r *request, key, version int16, frame, body []byte) error {
	if r.acct == nil {
		return nil
	}
	if count := s.handlers[key].counts; count != nil {
		n := count(body, version)
		if n <= smallRequestBytes {
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
	if len(frame) > smallFrameBytes {
		return nil // reserved with the frame
	}
	n := s.holdsFor(key, version, len(frame))
	if n <= smallRequestBytes {
		return nil
	}
	if n+int64(len(frame)) > s.mem.frames.max {
		s.mem.frames.refuse()
		return tooMuch(key, int64(len(frame)), n, s.mem.frames.max)
	}
	return r.acct.reserveFrames(r.ctx, n)
}

// reserveFrames takes n bytes of the frames lane for a request about to
// be decoded, waiting up to FrameReadTimeout only while the connection
// holds nothing in the budget (memory.go's rules).
func (a *account) reserveFrames(ctx context.Context, n int64) error {
	if a.frames > 0 || a.work > 0 {
		a.mem.frames.add(n)
		a.frames += n
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, a.wait)
	defer cancel()
	got, err := a.mem.frames.acquire(ctx, n)
	if err != nil {
		return fmt.Errorf("%w: %d bytes for a request not free within %v", errBudget, n, a.wait)
	}
	a.frames += got
	return nil
}

// joinGroupHolds returns the bound of what a JoinGroup request holds
// beyond its frame: its protocols, counted from the wire, and the strings
// it copies (its ids three times: decoded, kept, and in an answer or an
// error). A protocol's metadata is referred to in the frame, not
// copied, so a member's 1 MiB of metadata costs nothing more.
func joinGroupHolds(body []byte, version int16) int64 {
	w := wire{b: body, flexible: version >= 6}
	w.tags()
	n := requestBaseBytes + 3*int64(w.nullableString()) // group
	w.skip(4)                                           // session timeout
	if version >= 1 {
		w.skip(4) // rebalance timeout
	}
	n += 3 * int64(w.nullableString()) // member id
	if version >= 5 {
		n += 3 * int64(w.nullableString()) // instance id
	}
	n += 3 * int64(w.nullableString()) // protocol type
	protocols := w.arrayLen()
	n += int64(protocols) * joinProtocolBytes
	for range protocols {
		if w.bad {
			break
		}
		n += int64(w.nullableString())
		w.nullableBytes()
		n += w.tags() * tagBytes
	}
	if version >= 8 {
		n += 3 * int64(w.nullableString()) // reason
	}
	return n + w.tags()*tagBytes
}

// syncGroupHolds returns the bound of what a SyncGroup request holds
// beyond its frame: the leader's assignments, counted from the wire, and
// the strings it copies; an assignment's bytes are referred to in the
// frame.
func syncGroupHolds(body []byte, version int16) int64 {
	w := wire{b: body, flexible: version >= 4}
	w.tags()
	n := requestBaseBytes + 3*int64(w.nullableString()) // group
	w.skip(4)                                           // generation
	n += int64(w.nullableString())                      // member id
	if version >= 3 {
		n += 3 * int64(w.nullableString()) // instance id
	}
	if version >= 5 {
		n += 3 * int64(w.nullableString()+w.nullableString()) // protocol type and name
	}
	assignments := w.arrayLen()
	n += int64(assignments) * syncAssignmentBytes
	for range assignments {
		if w.bad {
			break
		}
		n += int64(w.nullableString())
		w.nullableBytes()
		n += w.tags() * tagBytes
	}
	return n + w.tags()*tagBytes
}

// What a JoinGroup's protocol and a SyncGroup's assignment hold, decoded
// and handled, measured on the hostile shapes with room: 340 and 100
// bytes (TestRequestBoundsHoldHostileShapes).
const (
	joinProtocolBytes   = 512
	syncAssignmentBytes = 192
)

// What a Produce's topic, partition and unknown tagged field hold beyond
// the frame, decoded and answered: the request's and the answer's structs
// (the answer's slices grown by appending), the answer encoded, and what
// the handler keeps per partition while it waits for the appends (a
// failed partition's error). Measured on the hostile shapes, with room:
// 370, 518 and 130 bytes (TestRequestBoundsHoldHostileShapes).
const (
	produceTopicBytes = 448
	producePartBytes  = 640
	tagBytes          = 160
)

// produceHolds returns the bound of what a Produce request of version,
// whose body (after the request header, but for a flexible version's
// header tags) is body, holds beyond its frame:
// its topics and partitions, counted from the wire as kmsg will decode
// them, times what each holds, and the names it copies, twice (the
// answer's encoded copy). The records are not counted: the request refers
// to them in the frame. A malformed body is counted as far as kmsg would
// allocate before it fails: an array's elements are counted once its
// length is read, as kmsg allocates them then.
func produceHolds(body []byte, version int16) int64 {
	w := wire{b: body, flexible: version >= 9}
	w.tags() // the request header's, which are not kept
	n := requestBaseBytes + int64(w.nullableString())
	w.skip(2 + 4) // acks, timeout
	topics := w.arrayLen()
	n += int64(topics) * produceTopicBytes
	for range topics {
		if w.bad {
			break
		}
		n += 2 * int64(w.nullableString())
		parts := w.arrayLen()
		n += int64(parts) * producePartBytes
		for range parts {
			if w.bad {
				break
			}
			w.skip(4) // partition
			w.nullableBytes()
			n += w.tags() * tagBytes
		}
		n += w.tags() * tagBytes
	}
	return n + w.tags()*tagBytes
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
// how many fields it held.
func (w *wire) tags() int64 {
	if !w.flexible {
		return 0
	}
	var fields int64
	for n := w.uvarint(); n > 0 && !w.bad; n-- {
		w.uvarint()
		w.skip(int(w.uvarint()))
		fields++
	}
	return fields
}
