package loadgen

import (
	"math/bits"
	"time"
)

// histSubBits sets the histogram's precision: 2^histSubBits buckets per
// power of two, so a recorded value is known to within 1/64 (1.6%).
const histSubBits = 6

// histBuckets covers every int64 nanosecond value.
const histBuckets = (64-histSubBits)<<histSubBits + 1<<(histSubBits+1)

// Histogram is a log-linear latency histogram in the spirit of HDR
// histograms: exact below 128 ns, then 64 buckets per power of two. It
// is not safe for concurrent use; each worker keeps its own and the
// runner merges them.
type Histogram struct {
	counts [histBuckets]uint64
	n      uint64
	sum    uint64
	max    uint64
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram { return &Histogram{} }

func bucketOf(v uint64) int {
	if v < 1<<(histSubBits+1) {
		return int(v)
	}
	shift := bits.Len64(v) - 1 - histSubBits
	return shift<<histSubBits + int(v>>shift)
}

// bucketMid returns the middle of bucket i's range.
func bucketMid(i int) uint64 {
	if i < 1<<(histSubBits+1) {
		return uint64(i)
	}
	shift := i>>histSubBits - 1
	mant := uint64(i - shift<<histSubBits)
	lo := mant << shift
	return lo + (uint64(1)<<shift)/2
}

// Record adds one latency.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(max(d, 0))
	h.counts[bucketOf(v)]++
	h.n++
	h.sum += v
	h.max = max(h.max, v)
}

// Merge adds o's values to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// Count returns how many values were recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Mean returns the mean value, 0 when empty.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / h.n)
}

// Max returns the largest value recorded.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Quantile returns the value at quantile q (0..1), within the bucket
// precision; 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n-1)) + 1
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(bucketMid(i), h.max))
		}
	}
	return time.Duration(h.max)
}
