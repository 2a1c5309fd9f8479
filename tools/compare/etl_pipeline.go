package compare

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Member settings every pipeline uses. The heartbeat comes from
// ETLConfig; the rest are kgo's defaults shortened so that a member that
// leaves does not hold a run up.
const (
	etlSessionTimeout   = 6 * time.Second
	etlRebalanceTimeout = 10 * time.Second
	etlTxnTimeout       = 10 * time.Second
	etlFetchMaxWait     = 250 * time.Millisecond
	etlRetryBackoff     = 50 * time.Millisecond
	// etlPoll bounds one PollFetches, so a member sees its stop signal.
	etlPoll = 200 * time.Millisecond
	// etlBatches is how many batches the source is written in, one each
	// etlBatchGap, so that the stages run while members come and go.
	etlBatches  = 40
	etlBatchGap = 25 * time.Millisecond
	// etlDrainTimeout bounds reading the last topic to its end after the
	// members are gone.
	etlDrainTimeout = 20 * time.Second
)

// churnEvent is one membership change of a stage: when the stage has
// delivered At distinct records downstream, a member joins, or the Leave'th member
// (by join order among those present) leaves.
type churnEvent struct {
	At    int
	Join  bool
	Leave int
}

// churnSchedule draws a stage's membership changes from the seed: Churn
// events at spread-out points of the stage's progress (inside its middle
// 80%), each a join when the stage is below Members, a leave when above,
// else either; a leave picks its member at random. The same seed, stage
// and workload give the same schedule.
func churnSchedule(cfg ETLConfig, stage int) []churnEvent {
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(stage)))
	events := make([]churnEvent, 0, cfg.Churn)
	present := cfg.Members
	for i := range cfg.Churn {
		slot := cfg.Records * 8 / 10 / (cfg.Churn + 1)
		at := cfg.Records/10 + slot*(i+1) + rng.IntN(max(slot/2, 1)) - slot/4
		join := present < cfg.Members || (present == cfg.Members && rng.IntN(2) == 0) || present == 1
		ev := churnEvent{At: max(at, 1), Join: join}
		if join {
			present++
		} else {
			ev.Leave = rng.IntN(present)
			present--
		}
		events = append(events, ev)
	}
	return events
}

// pipeline is one row's run on one broker.
type pipeline struct {
	// ctx is the run's: the members' polls, writes, commits and
	// transactions use it, so that a run that ends early (interrupted,
	// timed out) stops them at once instead of retrying for ever.
	ctx    context.Context
	cfg    ETLConfig
	row    ETLRow
	addr   string
	topics []string
	// prefix names the stages' groups (prefix-0, ...) and their members
	// (the client and transactional ids prefix-0-m0, ...).
	prefix string
	stages []*stage

	mu       sync.Mutex
	produced int            // guarded by mu
	pollErrs map[string]int // guarded by mu: errors PollFetches handed the application, by kind
	syncErrs map[string]int // guarded by mu: errors a commit (plain) or End (txn) returned, by kind
}

// stage is one consumer group of a pipeline: it reads from and writes
// every record to to.
type stage struct {
	p        *pipeline
	index    int
	from, to string
	group    string

	mu        sync.Mutex
	processed map[string]int      // guarded by mu: id -> times processed (written downstream, committed or not)
	delivered map[string]struct{} // guarded by mu: ids whose output is acknowledged (produced; committed in a transaction)
	gens      map[int32]struct{}  // guarded by mu: generations (member epochs) the members were told of
	members   []*etlMember        // guarded by mu: present, in join order
	started   int                 // guarded by mu: members ever started, to name the next
	changed   chan struct{}       // guarded by mu: closed and replaced whenever delivered grows
}

// etlMember is one kgo client of a stage and its processing loop.
type etlMember struct {
	name string
	cl   *kgo.Client
	sess *kgo.GroupTransactSession // nil for a plain row
	stop chan struct{}
	done chan struct{}
}

// failPoll counts an error PollFetches returned.
func (p *pipeline) failPoll(err error) {
	p.mu.Lock()
	p.pollErrs[errKind(err)]++
	p.mu.Unlock()
}

// failSync counts an error the application's write, commit or End
// returned; what names the call unless it is the commit.
func (p *pipeline) failSync(what string, err error) {
	p.mu.Lock()
	p.syncErrs[what+errKind(err)]++
	p.mu.Unlock()
}

// errKind names an error the application was handed: the kerr name when
// there is one.
func errKind(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

// run starts the stages, writes the source, plays each stage's churn
// schedule and returns once the last stage has delivered every record
// and every change has happened, or ctx ends; the members are closed
// when it returns.
func (p *pipeline) run(ctx context.Context) error {
	p.ctx = ctx
	for i := range p.cfg.Stages {
		s := &stage{p: p, index: i, from: p.topics[i], to: p.topics[i+1],
			group:     fmt.Sprintf("%s-%d", p.prefix, i),
			processed: map[string]int{}, delivered: map[string]struct{}{}, gens: map[int32]struct{}{},
			changed: make(chan struct{})}
		p.stages = append(p.stages, s)
	}
	defer p.closeAll()
	for _, s := range p.stages {
		for range p.cfg.Members {
			if err := s.join(); err != nil {
				return err
			}
		}
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.ClientID("etl-source"), kgo.DefaultProduceTopic(p.topics[0]),
		kgo.RetryBackoffFn(func(int) time.Duration { return etlRetryBackoff }))
	if err != nil {
		return err
	}
	defer prod.Close()
	var wg sync.WaitGroup
	errc := make(chan error, 1+len(p.stages))
	wg.Go(func() { errc <- p.writeSource(ctx, prod) })
	for _, s := range p.stages {
		wg.Go(func() { errc <- s.churn(ctx, churnSchedule(p.cfg, s.index)) })
	}
	last := p.stages[len(p.stages)-1]
	waitErr := last.waitDelivered(ctx, p.cfg.Records)
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
	}
	if waitErr != nil && !errors.Is(waitErr, context.DeadlineExceeded) {
		return waitErr
	}
	return nil // a run that timed out shows what is missing
}

// writeSource writes the source records, keyed by their ids, in
// etlBatches batches.
func (p *pipeline) writeSource(ctx context.Context, prod *kgo.Client) error {
	per := max(p.cfg.Records/etlBatches, 1)
	for from := 0; from < p.cfg.Records; from += per {
		recs := make([]*kgo.Record, 0, per)
		for i := from; i < min(from+per, p.cfg.Records); i++ {
			recs = append(recs, &kgo.Record{Key: []byte(recordID(i)), Value: fmt.Appendf(nil, "record %d", i)})
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("write the source: %w", err)
		}
		p.mu.Lock()
		p.produced += len(recs)
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(etlBatchGap):
		}
	}
	return nil
}

// closeAll stops and closes every member of every stage at once.
func (p *pipeline) closeAll() {
	var wg sync.WaitGroup
	for _, s := range p.stages {
		s.mu.Lock()
		members := s.members
		s.members = nil
		s.mu.Unlock()
		for _, m := range members {
			wg.Go(m.close)
		}
	}
	wg.Wait()
}

// churn plays a stage's schedule: each event waits until the stage has
// delivered its count of records.
func (s *stage) churn(ctx context.Context, events []churnEvent) error {
	for _, ev := range events {
		if err := s.waitDelivered(ctx, ev.At); err != nil {
			return err
		}
		if ev.Join {
			if err := s.join(); err != nil {
				return err
			}
			continue
		}
		s.mu.Lock()
		m := s.members[ev.Leave%len(s.members)]
		s.members = slices.DeleteFunc(s.members, func(o *etlMember) bool { return o == m })
		s.mu.Unlock()
		m.close()
	}
	return nil
}

// waitDelivered returns once the stage has delivered n distinct records,
// or ctx ends.
func (s *stage) waitDelivered(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		got, changed := len(s.delivered), s.changed
		s.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// rebalances is the generations the stage's members were told of after
// the first.
func (s *stage) rebalances() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(len(s.gens)-1, 0)
}

// sawGeneration records the generation (member epoch) cl holds.
func (s *stage) sawGeneration(cl *kgo.Client) {
	if _, gen := cl.GroupMetadata(); gen > 0 {
		s.mu.Lock()
		s.gens[gen] = struct{}{}
		s.mu.Unlock()
	}
}

// record counts a batch written downstream; delivered says its output is
// acknowledged.
func (s *stage) record(ids []string, delivered bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	grew := false
	for _, id := range ids {
		if !delivered {
			s.processed[id]++
			continue
		}
		if _, ok := s.delivered[id]; !ok {
			s.delivered[id] = struct{}{}
			grew = true
		}
	}
	if grew {
		close(s.changed)
		s.changed = make(chan struct{})
	}
}

// join starts a member of the stage.
func (s *stage) join() error {
	s.mu.Lock()
	name := fmt.Sprintf("%s-m%d", s.group, s.started)
	s.started++
	s.mu.Unlock()
	row := s.p.row
	opts := []kgo.Opt{
		kgo.SeedBrokers(s.p.addr), kgo.ClientID(name),
		kgo.ConsumerGroup(s.group), kgo.ConsumeTopics(s.from),
		kgo.Balancers(row.Protocol.Balancer()),
		kgo.HeartbeatInterval(s.p.cfg.Heartbeat), kgo.SessionTimeout(etlSessionTimeout),
		kgo.RebalanceTimeout(etlRebalanceTimeout), kgo.FetchMaxWait(etlFetchMaxWait),
		kgo.RetryBackoffFn(func(int) time.Duration { return etlRetryBackoff }),
		kgo.OnPartitionsAssigned(func(_ context.Context, cl *kgo.Client, _ map[string][]int32) { s.sawGeneration(cl) }),
	}
	if row.Protocol.Consumer {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	m := &etlMember{name: name, stop: make(chan struct{}), done: make(chan struct{})}
	if row.Transactional {
		opts = append(opts, kgo.TransactionalID(name), kgo.TransactionTimeout(etlTxnTimeout),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		sess, err := kgo.NewGroupTransactSession(opts...)
		if err != nil {
			return err
		}
		m.sess, m.cl = sess, sess.Client()
	} else {
		// Kafka's at-least-once without replays on a graceful rebalance:
		// no rebalance between a poll and the commit of what it returned.
		opts = append(opts, kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll())
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return err
		}
		m.cl = cl
	}
	s.mu.Lock()
	s.members = append(s.members, m)
	s.mu.Unlock()
	go s.loop(m)
	return nil
}

// loop is a member's application: poll, write every record to the next
// topic (in a transaction with the offsets, for a transactional row),
// until stopped.
func (s *stage) loop(m *etlMember) {
	defer close(m.done)
	ctx := s.p.ctx
	for {
		select {
		case <-m.stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, etlPoll)
		var fs kgo.Fetches
		if m.sess != nil {
			fs = m.sess.PollFetches(pctx)
		} else {
			fs = m.cl.PollFetches(pctx)
		}
		cancel()
		if fs.IsClientClosed() {
			return
		}
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
				s.p.failPoll(fe.Err)
			}
		}
		s.sawGeneration(m.cl)
		recs := fs.Records()
		if len(recs) == 0 {
			if m.sess == nil {
				m.cl.AllowRebalance()
			}
			continue
		}
		ids := make([]string, len(recs))
		out := make([]*kgo.Record, len(recs))
		for i, r := range recs {
			ids[i] = string(r.Key)
			out[i] = &kgo.Record{Topic: s.to, Key: r.Key, Value: r.Value}
		}
		if m.sess != nil {
			s.transact(ctx, m, ids, out)
			continue
		}
		s.process(ctx, m, ids, out)
	}
}

// process writes a batch downstream, then commits what the poll returned,
// then lets a rebalance that waited for it go ahead.
func (s *stage) process(ctx context.Context, m *etlMember, ids []string, out []*kgo.Record) {
	defer m.cl.AllowRebalance()
	if err := m.cl.ProduceSync(ctx, out...).FirstErr(); err != nil {
		s.p.failSync("produce ", err)
		return
	}
	s.record(ids, false)
	s.record(ids, true)
	if err := m.cl.CommitUncommittedOffsets(ctx); err != nil {
		s.p.failSync("", err)
	}
}

// transact writes a batch in one transaction with its offsets; the batch
// is delivered only if the transaction commits.
func (s *stage) transact(ctx context.Context, m *etlMember, ids []string, out []*kgo.Record) {
	if err := m.sess.Begin(); err != nil {
		s.p.failSync("begin ", err)
		return
	}
	var wg sync.WaitGroup
	for _, r := range out {
		wg.Add(1)
		m.sess.Produce(ctx, r, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				s.p.failSync("produce ", err)
			}
		})
	}
	wg.Wait()
	s.record(ids, false)
	committed, err := m.sess.End(ctx, kgo.TryCommit)
	if err != nil {
		s.p.failSync("", err)
	}
	if committed {
		s.record(ids, true)
	}
}

// close stops the member's loop, then closes its client, leaving the
// group; a plain member has committed what it processed.
func (m *etlMember) close() {
	close(m.stop)
	<-m.done
	if m.sess != nil {
		m.sess.Close()
		return
	}
	m.cl.Close()
}
