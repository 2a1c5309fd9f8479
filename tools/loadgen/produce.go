package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// valueRegionBytes is each producer goroutine's share of the random
// values: it walks its region record by record, so that no two records
// of a batch share bytes a compressor could find.
const valueRegionBytes = 4 << 20

// recordSession is the state of a records scenario (Produce,
// ProduceSync, Consume, EndToEnd) on one server.
type recordSession struct {
	producer *kgo.Client // nil for Consume after its prefill
	values   []byte      // random; Producers regions of valueRegionBytes
	// EndToEnd: the group member, the session's id (in every value), and
	// how many records were produced and consumed since the session
	// began (owned by Measure).
	consumer           *kgo.Client
	id                 uint64
	produced, consumed int64
	// requests counts the producer's Produce requests answered.
	requests produceCounter
}

func (rs *recordSession) close() {
	if rs.producer != nil {
		rs.producer.Close()
	}
	if rs.consumer != nil {
		rs.consumer.Close()
	}
}

// valueWalk hands out one goroutine's record values from its region.
type valueWalk struct {
	region []byte
	size   int
	pos    int
}

func (rs *recordSession) walk(i, size int) *valueWalk {
	return &valueWalk{region: rs.values[i*valueRegionBytes : (i+1)*valueRegionBytes], size: size}
}

func (v *valueWalk) next() []byte {
	if v.pos+v.size > len(v.region) {
		v.pos = 0
	}
	b := v.region[v.pos : v.pos+v.size : v.pos+v.size]
	v.pos += v.size
	return b
}

// randomValues returns n random bytes.
func randomValues(n int) []byte {
	b := make([]byte, n)
	var seed [32]byte
	seed[0] = 1
	_, _ = rand.NewChaCha8(seed).Read(b)
	return b
}

// newProducer is a stock kgo client: one broker to bootstrap from, every
// other setting kgo's default (idempotent, acks all, snappy, 10 ms
// linger, 1 MB batches), and the options given.
func newProducer(addr string, opts ...kgo.Opt) (*kgo.Client, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("loadgen: kgo client: %w", err)
	}
	return cl, nil
}

// prepareRecords makes the session's clients and, for Consume, fills the
// topic.
func (s *Session) prepareRecords(ctx context.Context) error {
	sc := &s.sc
	rs := &recordSession{values: randomValues(sc.Producers * valueRegionBytes)}
	s.rec = rs
	opts := []kgo.Opt{kgo.WithHooks(&rs.requests)}
	if sc.Kind == EndToEnd {
		// kgo's default 10 ms linger alone would put the p99 at 10 ms.
		opts = append(opts, kgo.ProducerLinger(0))
	}
	var err error
	if rs.producer, err = newProducer(s.t.Addr, opts...); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	// One record through, so that metadata and the producer id are there
	// before the first window.
	if err := rs.producer.ProduceSync(ctx, &kgo.Record{Topic: sc.Topic, Value: rs.walk(0, sc.ValueBytes).next()}).FirstErr(); err != nil {
		return fmt.Errorf("loadgen: %s: first record: %w", sc.Name, err)
	}
	switch sc.Kind {
	case Consume:
		err = s.prefill(ctx)
		rs.producer.Close()
		rs.producer = nil
	case EndToEnd:
		err = s.joinConsumer(ctx)
	}
	return err
}

// prefill produces sc.Prefill records (after the first one) with
// sc.Producers goroutines.
func (s *Session) prefill(ctx context.Context) error {
	sc, rs := &s.sc, s.rec
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			first = cmp(first, err)
			mu.Unlock()
		}
	}
	per := (sc.Prefill - 1 + sc.Producers - 1) / sc.Producers
	for i := range sc.Producers {
		wg.Go(func() {
			v := rs.walk(i, sc.ValueBytes)
			for j := range per {
				if i*per+j+1 >= sc.Prefill {
					return
				}
				rs.producer.Produce(ctx, &kgo.Record{Topic: sc.Topic, Value: v.next()}, promise)
			}
		})
	}
	wg.Wait()
	if err := rs.producer.Flush(ctx); err != nil {
		return fmt.Errorf("loadgen: %s: prefill: %w", sc.Name, err)
	}
	if first != nil {
		return fmt.Errorf("loadgen: %s: prefill: %w", sc.Name, first)
	}
	return nil
}

func cmp(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// collector gathers the acknowledgements of one window. Its methods are
// called from kgo's promise goroutines and the producers alike.
type collector struct {
	w     window
	mu    sync.Mutex
	hist  *Histogram      // guarded by mu
	ops   int64           // guarded by mu
	bytes int64           // guarded by mu
	codes map[int16]int64 // guarded by mu
	err   error           // guarded by mu
}

// done records one record acknowledged now, sent at start.
func (c *collector) done(start time.Time, size int, err error) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		var ke *kerr.Error
		switch {
		case errors.As(err, &ke):
			c.codes[ke.Code]++
		case errors.Is(err, context.Canceled):
		default:
			c.err = cmp(c.err, err)
		}
		return
	}
	if c.w.in(now) {
		c.ops++
		c.bytes += int64(size)
		c.hist.Record(now.Sub(start))
	}
}

// measureProduce runs one window of Produce or ProduceSync: sc.Producers
// goroutines produce through the one client until the window ends, then
// whatever is still buffered is flushed (and not counted).
func (s *Session) measureProduce(ctx context.Context, r *Result) {
	sc, rs := &s.sc, s.rec
	now := time.Now()
	w := window{start: now.Add(sc.Warmup), end: now.Add(sc.Warmup + sc.Duration)}
	c := &collector{w: w, hist: NewHistogram(), codes: map[int16]int64{}}
	var wg sync.WaitGroup
	for i := range sc.Producers {
		wg.Go(func() {
			v := rs.walk(i, sc.ValueBytes)
			for ctx.Err() == nil && time.Now().Before(w.end) {
				rec := &kgo.Record{Topic: sc.Topic, Value: v.next()}
				start := time.Now()
				if sc.Kind == ProduceSync {
					err := rs.producer.ProduceSync(ctx, rec).FirstErr()
					c.done(start, len(rec.Value), err)
					continue
				}
				rs.producer.Produce(ctx, rec, func(rec *kgo.Record, err error) { c.done(start, len(rec.Value), err) })
			}
		})
	}
	var req0, req1 int64
	measure(ctx, s.t, w, r, func() { req0 = rs.requests.count() }, func() { req1 = rs.requests.count() })
	wg.Wait()
	flushCtx, cancel := context.WithTimeout(ctx, stopGrace)
	defer cancel()
	if err := rs.producer.Flush(flushCtx); err != nil {
		s.broken = fmt.Errorf("loadgen: %s: records still unacknowledged %v after the window: %w", sc.Name, stopGrace, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r.Ops, r.Requests, r.Bytes = c.ops, req1-req0, c.bytes
	r.Latency = c.hist
	r.Codes = addCodes(r.Codes, c.codes)
	r.Unexpected = unexpected(sc, r.Codes)
	r.Err = cmp(c.err, s.broken)
}
