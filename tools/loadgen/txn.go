package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The transactional kinds. They are records kinds (Records is true) with
// a table of their own.
const (
	// TxnProduce: Producers goroutines, each with its own transactional
	// kgo client (its own transactional id), begin a transaction, produce
	// TxnRecords records of ValueBytes, flush and commit, over and over.
	// Ops are committed records; Requests committed transactions; Latency
	// is EndTransaction's (the EndTxn round trip, markers durable).
	TxnProduce Kind = 100 + iota
	// TxnConsume: the topic is filled once with Prefill records in
	// transactions of TxnRecords, every fifth one aborted; each window a
	// new read_committed kgo consumer reads every committed record from
	// the start (the window lasts until the last one).
	TxnConsume
)

// Txn reports whether the kind is transactional.
func (k Kind) Txn() bool { return k == TxnProduce || k == TxnConsume }

func txnKindName(k Kind) (string, bool) {
	switch k {
	case TxnProduce:
		return "txn-produce", true
	case TxnConsume:
		return "txn-consume", true
	}
	return "", false
}

// abortEvery: TxnConsume's prefill aborts one transaction in this many.
const abortEvery = 5

// txnSession is the state of a transactional scenario on one server.
type txnSession struct {
	producers []*kgo.Client // TxnProduce: one per goroutine
	values    []byte
	committed int64 // TxnConsume: records the prefill committed
}

func (ts *txnSession) close() {
	for _, p := range ts.producers {
		p.Close()
	}
}

// newTxnProducer is a stock kgo client with a transactional id.
func newTxnProducer(addr, id string) (*kgo.Client, error) {
	return newProducer(addr, kgo.TransactionalID(id), kgo.TransactionTimeout(time.Minute))
}

// prepareTxn makes the producers (TxnProduce, each committing one
// transaction so that its producer id is there before the first window)
// or fills the topic (TxnConsume).
func (s *Session) prepareTxn(ctx context.Context) error {
	sc := &s.sc
	ts := &txnSession{values: randomValues(sc.Producers * valueRegionBytes)}
	s.txn = ts
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	run := time.Now().UnixNano()
	for i := range sc.Producers {
		cl, err := newTxnProducer(s.t.Addr, fmt.Sprintf("%s-%d-%d", sc.Name, run, i))
		if err != nil {
			return err
		}
		ts.producers = append(ts.producers, cl)
	}
	if sc.Kind == TxnProduce {
		for i, cl := range ts.producers {
			if _, err := oneTxn(ctx, cl, sc.Topic, &valueWalk{region: ts.values[i*valueRegionBytes : (i+1)*valueRegionBytes], size: sc.ValueBytes}, 1, kgo.TryCommit); err != nil {
				return fmt.Errorf("loadgen: %s: first transaction: %w", sc.Name, err)
			}
		}
		return nil
	}
	err := s.prefillTxn(ctx)
	ts.close()
	ts.producers = nil
	return err
}

// oneTxn runs one transaction of n records through cl and returns how
// long EndTransaction took.
func oneTxn(ctx context.Context, cl *kgo.Client, topic string, v *valueWalk, n int, commit kgo.TransactionEndTry) (time.Duration, error) {
	if err := cl.BeginTransaction(); err != nil {
		return 0, err
	}
	var (
		mu    sync.Mutex
		first error
	)
	for range n {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: v.next()}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				first = cmp(first, err)
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	mu.Lock()
	err := first
	mu.Unlock()
	if err != nil {
		commit = kgo.TryAbort
	}
	start := time.Now()
	if endErr := cl.EndTransaction(ctx, commit); endErr != nil {
		return 0, endErr
	}
	return time.Since(start), err
}

// prefillTxn fills the topic with sc.Prefill records in transactions of
// sc.TxnRecords, spread over the producers, one in abortEvery aborted.
func (s *Session) prefillTxn(ctx context.Context) error {
	sc, ts := &s.sc, s.txn
	txns := (sc.Prefill + sc.TxnRecords - 1) / sc.TxnRecords
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	for i, cl := range ts.producers {
		wg.Go(func() {
			v := &valueWalk{region: ts.values[i*valueRegionBytes : (i+1)*valueRegionBytes], size: sc.ValueBytes}
			for n := i; n < txns; n += len(ts.producers) {
				end := kgo.TryCommit
				if n%abortEvery == abortEvery-1 && n != txns-1 {
					end = kgo.TryAbort
				}
				_, err := oneTxn(ctx, cl, sc.Topic, v, sc.TxnRecords, end)
				mu.Lock()
				if err != nil {
					first = cmp(first, err)
				} else if end == kgo.TryCommit {
					ts.committed += int64(sc.TxnRecords)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		return fmt.Errorf("loadgen: %s: prefill: %w", sc.Name, first)
	}
	return nil
}

// measureTxnProduce runs one window of TxnProduce. A transaction counts
// in the window its commit is answered in.
func (s *Session) measureTxnProduce(ctx context.Context, r *Result) {
	sc, ts := &s.sc, s.txn
	now := time.Now()
	w := window{start: now.Add(sc.Warmup), end: now.Add(sc.Warmup + sc.Duration)}
	var (
		mu    sync.Mutex
		hist  = NewHistogram()
		ops   int64
		txns  int64
		codes = map[int16]int64{}
		first error
		wg    sync.WaitGroup
	)
	for i, cl := range ts.producers {
		wg.Go(func() {
			v := &valueWalk{region: ts.values[i*valueRegionBytes : (i+1)*valueRegionBytes], size: sc.ValueBytes}
			for ctx.Err() == nil && time.Now().Before(w.end) {
				d, err := oneTxn(ctx, cl, sc.Topic, v, sc.TxnRecords, kgo.TryCommit)
				done := time.Now()
				mu.Lock()
				var ke *kerr.Error
				switch {
				case errors.As(err, &ke):
					codes[ke.Code]++
				case err != nil:
					first = cmp(first, err)
				case w.in(done):
					ops += int64(sc.TxnRecords)
					txns++
					hist.Record(d)
				}
				mu.Unlock()
				if err != nil {
					return // a transactional client that failed is not reused
				}
			}
		})
	}
	measure(ctx, s.t, w, r, nil, nil)
	wg.Wait()
	r.Ops, r.Requests, r.Bytes = ops, txns, ops*int64(sc.ValueBytes)
	r.Latency = hist
	r.Codes = addCodes(r.Codes, codes)
	r.Unexpected = unexpected(sc, r.Codes)
	r.Err = first
	if first != nil || len(codes) > 0 {
		s.broken = cmp(first, fmt.Errorf("loadgen: %s: a transaction failed: %s", sc.Name, FormatCodes(codes)))
	}
}

// measureTxnConsume runs one window of TxnConsume: a new read_committed
// consumer reads the committed records from the start; reading one more
// than the prefill committed is an error (an aborted record got through).
func (s *Session) measureTxnConsume(ctx context.Context, r *Result) {
	sc, want := &s.sc, s.txn.committed
	ctx, cancel := context.WithTimeout(ctx, consumeTimeout)
	defer cancel()
	var cpu0 time.Duration
	if s.t.Probe != nil {
		cpu0, _ = s.t.Probe.CPU()
	}
	start := time.Now()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.t.Addr), kgo.ConsumeTopics(sc.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		r.Err = fmt.Errorf("loadgen: kgo client: %w", err)
		return
	}
	defer cl.Close()
	codes := map[int16]int64{}
	var n int64
	for n < want && r.Err == nil {
		fs := cl.PollFetches(ctx)
		r.Err = fetchErrors(fs, codes)
		n += int64(fs.NumRecords())
		if ctx.Err() != nil {
			r.Err = cmp(r.Err, fmt.Errorf("loadgen: %s: read %d of %d committed records in %v", sc.Name, n, want, consumeTimeout))
		}
	}
	r.Elapsed = time.Since(start)
	if s.t.Probe != nil {
		if cpu1, err := s.t.Probe.CPU(); err == nil {
			r.ServerCPU = cpu1 - cpu0
		}
	}
	if n > want && r.Err == nil {
		r.Err = fmt.Errorf("loadgen: %s: read %d records, only %d were committed", sc.Name, n, want)
	}
	r.Ops, r.Requests, r.Bytes = n, n, n*int64(sc.ValueBytes)
	r.Codes = codes
	r.Unexpected = unexpected(sc, r.Codes)
	if r.Err != nil {
		s.broken = r.Err
	}
}
