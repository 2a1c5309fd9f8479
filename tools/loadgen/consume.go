package loadgen

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumeTimeout bounds reading a prefilled topic once.
const consumeTimeout = 2 * time.Minute

// pollSlice bounds each poll of the EndToEnd member, so that it checks
// between polls whether it has read everything.
const pollSlice = 50 * time.Millisecond

// fetchErrors counts the errors of polled fetches: Kafka codes into
// codes, anything else returned.
func fetchErrors(fs kgo.Fetches, codes map[int16]int64) error {
	var first error
	for _, fe := range fs.Errors() {
		var ke *kerr.Error
		switch {
		case errors.As(fe.Err, &ke):
			codes[ke.Code]++
		case errors.Is(fe.Err, context.Canceled), errors.Is(fe.Err, context.DeadlineExceeded), errors.Is(fe.Err, kgo.ErrClientClosed):
		default:
			first = cmp(first, fmt.Errorf("loadgen: fetch %s-%d: %w", fe.Topic, fe.Partition, fe.Err))
		}
	}
	return first
}

// measureConsume runs one window of Consume: a new kgo consumer (every
// setting kgo's default) reads the prefilled topic from the start, and
// the window lasts from the client's creation to its last record. The
// server's CPU is read around the same span.
func (s *Session) measureConsume(ctx context.Context, r *Result) {
	sc := &s.sc
	ctx, cancel := context.WithTimeout(ctx, consumeTimeout)
	defer cancel()
	var cpu0 time.Duration
	if s.t.Probe != nil {
		cpu0, _ = s.t.Probe.CPU()
	}
	start := time.Now()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.t.Addr), kgo.ConsumeTopics(sc.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		r.Err = fmt.Errorf("loadgen: kgo client: %w", err)
		return
	}
	defer cl.Close()
	codes := map[int16]int64{}
	var n int64
	for n < int64(sc.Prefill) && r.Err == nil {
		fs := cl.PollFetches(ctx)
		r.Err = fetchErrors(fs, codes)
		n += int64(fs.NumRecords())
		if ctx.Err() != nil {
			r.Err = cmp(r.Err, fmt.Errorf("loadgen: %s: read %d of %d records in %v", sc.Name, n, sc.Prefill, consumeTimeout))
		}
	}
	r.Elapsed = time.Since(start)
	if s.t.Probe != nil {
		if cpu1, err := s.t.Probe.CPU(); err == nil {
			r.ServerCPU = cpu1 - cpu0
		}
	}
	r.Ops, r.Requests, r.Bytes = n, n, n*int64(sc.ValueBytes)
	r.Codes = codes
	r.Unexpected = unexpected(sc, r.Codes)
	if r.Err != nil {
		s.broken = r.Err
	}
}

// e2eHeader is what starts an EndToEnd value: the time it was produced
// (Unix nanoseconds; 0 for the setup marker) and the session's id, so
// that the member counts only this session's records.
const e2eHeader = 16

// joinConsumer starts the EndToEnd group member, waits until it holds
// every partition, then produces a marker and reads until it has it: the
// member reads from the start, whatever the topic held before, and is
// caught up when the first window begins.
func (s *Session) joinConsumer(ctx context.Context) error {
	sc, rs := &s.sc, s.rec
	rs.id = rand.Uint64()
	var assigned atomic.Bool
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.t.Addr), kgo.ConsumeTopics(sc.Topic), kgo.ConsumerGroup(sc.Name),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			if len(m[sc.Topic]) == sc.Partitions {
				assigned.Store(true)
			}
		}))
	if err != nil {
		return fmt.Errorf("loadgen: kgo client: %w", err)
	}
	rs.consumer = cl
	sentMarker, marked := false, false
	for !marked {
		pctx, cancel := context.WithTimeout(ctx, pollSlice)
		fs := cl.PollFetches(pctx) // the group's join runs in the client, but polls let it finish
		cancel()
		fs.EachRecord(func(rec *kgo.Record) {
			if sent, ok := rs.mine(rec.Value); ok && sent.IsZero() {
				marked = true
			}
		})
		if ctx.Err() != nil {
			return fmt.Errorf("loadgen: %s: the consumer was not assigned the topic, or did not read the marker: %w", sc.Name, ctx.Err())
		}
		if assigned.Load() && !sentMarker {
			sentMarker = true
			marker := rs.e2eValue(rs.walk(0, sc.ValueBytes).next(), time.Time{})
			if err := rs.producer.ProduceSync(ctx, &kgo.Record{Topic: sc.Topic, Value: marker}).FirstErr(); err != nil {
				return fmt.Errorf("loadgen: %s: marker: %w", sc.Name, err)
			}
		}
	}
	return nil
}

// e2eValue copies value and writes the header into it.
func (rs *recordSession) e2eValue(value []byte, sent time.Time) []byte {
	v := append([]byte(nil), value...)
	if !sent.IsZero() {
		binary.BigEndian.PutUint64(v, uint64(sent.UnixNano()))
	} else {
		binary.BigEndian.PutUint64(v, 0)
	}
	binary.BigEndian.PutUint64(v[8:], rs.id)
	return v
}

// mine returns when an EndToEnd value of this session was produced (zero
// for the marker); ok is false for anybody else's record.
func (rs *recordSession) mine(value []byte) (sent time.Time, ok bool) {
	if len(value) < e2eHeader || binary.BigEndian.Uint64(value[8:]) != rs.id {
		return time.Time{}, false
	}
	if ns := int64(binary.BigEndian.Uint64(value)); ns != 0 {
		sent = time.Unix(0, ns)
	}
	return sent, true
}

// measureEndToEnd runs one window of EndToEnd: one goroutine produces a
// record every 1/sc.Rate seconds (its value starts with the time it was
// produced), the group member polls, and each record produced in the
// window counts with the time from its produce to its poll. After the
// window the member reads on until it has every record produced.
func (s *Session) measureEndToEnd(ctx context.Context, r *Result) {
	sc, rs := &s.sc, s.rec
	now := time.Now()
	w := window{start: now.Add(sc.Warmup), end: now.Add(sc.Warmup + sc.Duration)}
	c := &collector{w: w, hist: NewHistogram(), codes: map[int16]int64{}}
	produced := make(chan int64, 1) // the producer's total, once it stops
	go func() {
		v := rs.walk(0, sc.ValueBytes)
		interval := time.Second / time.Duration(sc.Rate)
		n := rs.produced
		for next := time.Now(); ctx.Err() == nil && next.Before(w.end); next = next.Add(interval) {
			time.Sleep(time.Until(next))
			n++
			rs.producer.Produce(ctx, &kgo.Record{Topic: sc.Topic, Value: rs.e2eValue(v.next(), time.Now())}, func(_ *kgo.Record, err error) {
				if err != nil {
					c.done(time.Time{}, 0, err)
				}
			})
		}
		produced <- n
	}()
	// The member polls in slices of pollSlice, so that it notices when
	// the producer has stopped and it has read every record.
	type polled struct {
		codes map[int16]int64
		err   error
	}
	pollDone := make(chan polled, 1)
	go func() {
		out := polled{codes: map[int16]int64{}}
		want := int64(-1)
		var deadline time.Time
		for want < 0 || rs.consumed < want {
			select {
			case want = <-produced:
				rs.produced, deadline = want, time.Now().Add(stopGrace)
			default:
			}
			if ctx.Err() != nil || want >= 0 && time.Now().After(deadline) {
				out.err = fmt.Errorf("loadgen: %s: consumed %d of %d records %v after the window", sc.Name, rs.consumed, want, stopGrace)
				break
			}
			pctx, cancel := context.WithTimeout(ctx, pollSlice)
			fs := rs.consumer.PollFetches(pctx)
			cancel()
			got := time.Now()
			out.err = cmp(out.err, fetchErrors(fs, out.codes))
			fs.EachRecord(func(rec *kgo.Record) {
				sent, ok := rs.mine(rec.Value)
				if !ok || sent.IsZero() {
					return
				}
				rs.consumed++
				if w.in(sent) {
					c.mu.Lock()
					c.ops++
					c.bytes += int64(len(rec.Value))
					c.hist.Record(got.Sub(sent))
					c.mu.Unlock()
				}
			})
		}
		pollDone <- out
	}()
	measure(ctx, s.t, w, r, nil, nil)
	p := <-pollDone
	if p.err != nil {
		s.broken = p.err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r.Ops, r.Requests, r.Bytes = c.ops, c.ops, c.bytes
	r.Latency = c.hist
	r.Codes = addCodes(addCodes(r.Codes, c.codes), p.codes)
	r.Unexpected = unexpected(sc, r.Codes)
	r.Err = cmp(c.err, s.broken)
}
