package server

import (
	"math/bits"
	"sync"
)

// The buffer pool: large buffers the server fills and empties over and
// over (Produce frames, records read for a Fetch, large answers) are
// reused instead of allocated for each request. A fresh buffer of n bytes
// costs its zeroing, its page faults and, soon, a garbage collection: half
// the server's CPU while a consumer catches up, a fifth while producers
// send large batches. Buffers come in power-of-two classes from
// minPooledBytes to maxPooledBytes; the memory budget counts a buffer's
// whole capacity while a request holds it, and nothing while it waits in
// the pool, where the collector may free it (sync.Pool).

const (
	minPooledBytes = 16 << 10
	maxPooledBytes = 64 << 20
	minPooledShift = 14 // log2(minPooledBytes)
	pooledClasses  = 13 // 16 KiB .. 64 MiB
)

// bufPool is safe for concurrent use.
type bufPool struct {
	classes [pooledClasses]sync.Pool // of *[]byte
}

// pooledCap returns the capacity get(n) returns, and false when n is
// outside the pooled sizes.
func pooledCap(n int) (int, bool) {
	if n > maxPooledBytes {
		return 0, false
	}
	return 1 << classOf(n), true
}

// classOf is the shift of the smallest class holding n bytes.
func classOf(n int) int {
	return max(bits.Len(uint(max(n, 1)-1)), minPooledShift)
}

// get returns an empty buffer with room for n bytes: pooledCap(n), or
// exactly n when n is too large to pool.
func (p *bufPool) get(n int) []byte {
	c, ok := pooledCap(n)
	if !ok {
		return make([]byte, 0, n)
	}
	if b, ok := p.classes[classOf(n)-minPooledShift].Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, c)
}

// put gives b back for reuse; b must not be used afterwards. A buffer
// below the smallest class is dropped; a larger one joins the largest
// class its capacity fills.
func (p *bufPool) put(b []byte) {
	c := cap(b)
	if c < minPooledBytes {
		return
	}
	shift := min(bits.Len(uint(c))-1, minPooledShift+pooledClasses-1)
	b = b[:0]
	p.classes[shift-minPooledShift].Put(&b)
}
