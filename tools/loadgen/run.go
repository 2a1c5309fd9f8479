package loadgen

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Probe reads the resource use of a server process.
type Probe interface {
	// CPU returns the process's CPU time so far, user plus system.
	CPU() (time.Duration, error)
	// RSS returns the process's resident set size in bytes.
	RSS() (int64, error)
}

// Target is one server under test.
type Target struct {
	Name  string
	Addr  string
	Probe Probe // nil: CPU and memory are not measured
}

// setupTimeout bounds bringing every member of a scenario to a stable
// generation.
const setupTimeout = 2 * time.Minute

// stopGrace is how long workers get to drain in-flight requests after the
// window before their connections are closed under them.
const stopGrace = 10 * time.Second

// Run prepares sc on t, measures one window and closes the session.
func Run(ctx context.Context, t Target, sc Scenario) *Result {
	sess, err := Prepare(ctx, t, sc)
	if err != nil {
		return &Result{Scenario: sc.Name, Target: t.Name, Latency: NewHistogram(), SetupCodes: sess.SetupCodes(), Err: err}
	}
	defer sess.Close()
	return sess.Measure(ctx)
}

// Session is a scenario prepared on one server: its members joined and
// stable, its connections open. Measure can run several windows on one
// session, so that windows of different servers can alternate.
type Session struct {
	t          Target
	sc         Scenario
	g          *groupSpec
	conns      []*Conn
	members    [][]*Member // per connection (steady kinds)
	gens       []atomic.Int32
	setupCodes map[int16]int64
	broken     error
	rec        *recordSession // the records kinds
	txn        *txnSession    // the transactional kinds
}

// Prepare joins sc's members on t and opens its connections. On error the
// returned session (never nil) still reports the setup codes.
func Prepare(ctx context.Context, t Target, sc Scenario) (*Session, error) {
	sess := &Session{t: t, sc: sc}
	if err := sess.sc.Normalize(); err != nil {
		return sess, err
	}
	sess.g = newGroupSpec(&sess.sc)
	if sess.sc.Kind.Txn() {
		return sess, sess.prepareTxn(ctx)
	}
	if sess.sc.Kind.Records() {
		return sess, sess.prepareRecords(ctx)
	}
	switch sess.sc.Kind {
	case Members:
		return sess, nil
	case Churn:
		sess.gens = make([]atomic.Int32, sess.sc.Groups)
	default:
		var codes Codes
		members, err := setup(ctx, t, &sess.sc, sess.g, &codes)
		sess.setupCodes = codes.Map()
		if err != nil {
			return sess, err
		}
		sess.members = make([][]*Member, sess.sc.Conns)
		for i := range sess.members {
			for j := i; j < len(members); j += sess.sc.Conns {
				m := *members[j]
				sess.members[i] = append(sess.members[i], &m)
			}
			if len(sess.members[i]) == 0 { // fewer members than connections: share
				m := *members[i%len(members)]
				sess.members[i] = append(sess.members[i], &m)
			}
		}
	}
	for range sess.sc.Conns {
		c, err := Dial(ctx, t.Addr, "loadgen")
		if err != nil {
			sess.Close()
			return sess, err
		}
		sess.conns = append(sess.conns, c)
	}
	return sess, nil
}

// SetupCodes returns the codes answered while the members joined.
func (s *Session) SetupCodes() map[int16]int64 { return s.setupCodes }

// Close closes the session's connections and clients.
func (s *Session) Close() {
	if s.rec != nil {
		s.rec.close()
	}
	if s.txn != nil {
		s.txn.close()
	}
	for _, c := range s.conns {
		c.Close()
	}
}

// Measure runs one window: the scenario's warmup, then its duration.
func (s *Session) Measure(ctx context.Context) *Result {
	r := &Result{Scenario: s.sc.Name, Target: s.t.Name, Latency: NewHistogram(), SetupCodes: s.setupCodes}
	if s.broken != nil {
		r.Err = s.broken
		return r
	}
	switch s.sc.Kind {
	case Churn:
		s.measureChurn(ctx, r)
	case Members:
		runMembers(ctx, s.t, &s.sc, r)
	case Produce, ProduceSync:
		s.measureProduce(ctx, r)
	case Consume:
		s.measureConsume(ctx, r)
	case EndToEnd:
		s.measureEndToEnd(ctx, r)
	case TxnProduce:
		s.measureTxnProduce(ctx, r)
	case TxnConsume:
		s.measureTxnConsume(ctx, r)
	default:
		s.measureSteady(ctx, r)
	}
	return r
}

// window is the measured interval: from start to end.
type window struct{ start, end time.Time }

func (w window) in(t time.Time) bool { return !t.Before(w.start) && t.Before(w.end) }

// measure sleeps through the warmup, reads the server's CPU, sleeps
// through the window and reads it again.
func measure(ctx context.Context, t Target, w window, r *Result, atStart, atEnd func()) {
	sleepUntil(ctx, w.start)
	var cpu0 time.Duration
	if t.Probe != nil {
		cpu0, _ = t.Probe.CPU()
	}
	if atStart != nil {
		atStart()
	}
	sleepUntil(ctx, w.end)
	if t.Probe != nil {
		if cpu1, err := t.Probe.CPU(); err == nil {
			r.ServerCPU = cpu1 - cpu0
		}
	}
	if atEnd != nil {
		atEnd()
	}
	r.Elapsed = w.end.Sub(w.start)
}

func sleepUntil(ctx context.Context, t time.Time) {
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(t)):
	}
}

// setup joins every member of sc, Members connections per group, as many
// groups at once as the connections allow, and commits once for each
// member of a Fetch scenario so that fetches find an offset.
func setup(ctx context.Context, t Target, sc *Scenario, g *groupSpec, codes *Codes) ([]*Member, error) {
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	slots := max(1, min(sc.Conns, 64)/sc.Members)
	members := make([]*Member, sc.Groups*sc.Members)
	errs := make(chan error, slots)
	for s := range slots {
		go func() {
			errs <- func() error {
				conns := make([]*Conn, sc.Members)
				for i := range conns {
					c, err := Dial(ctx, t.Addr, "loadgen-setup")
					if err != nil {
						return err
					}
					defer c.Close()
					conns[i] = c
				}
				for grp := s; grp < sc.Groups; grp += slots {
					ms, err := stableGroup(ctx, conns, sc.group(grp), g, codes)
					if err != nil {
						return err
					}
					copy(members[grp*sc.Members:], ms)
					if sc.Kind != Fetch {
						continue
					}
					for i, m := range ms {
						resp, err := conns[i].Do(g.commitRequest(m))
						if err != nil {
							return err
						}
						countCommit(resp.(*kmsg.OffsetCommitResponse), codes.Add)
					}
				}
				return nil
			}()
		}()
	}
	var first error
	for range slots {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return members, first
}

// measureSteady runs one window of a Heartbeat, Commit or Fetch scenario.
func (s *Session) measureSteady(ctx context.Context, r *Result) {
	sc := &s.sc
	now := time.Now()
	w := window{start: now.Add(sc.Warmup), end: now.Add(sc.Warmup + sc.Duration)}
	workers := make([]*steadyWorker, len(s.conns))
	var wg sync.WaitGroup
	for i, c := range s.conns {
		sw := &steadyWorker{c: c, sc: sc, g: s.g, w: w, members: s.members[i], hist: NewHistogram(), codes: map[int16]int64{}}
		workers[i] = sw
		wg.Go(sw.run)
	}
	measure(ctx, s.t, w, r, nil, nil)
	if !waitOrClose(&wg, s.conns) {
		s.broken = fmt.Errorf("loadgen: %s: requests still unanswered %v after the window", sc.Name, stopGrace)
	}
	for _, sw := range workers {
		r.Ops += sw.ops
		r.Latency.Merge(sw.hist)
		r.Codes = addCodes(r.Codes, sw.codes)
		if sw.err != nil && r.Err == nil {
			r.Err = sw.err
		}
	}
	if r.Err != nil && s.broken == nil {
		s.broken = r.Err
	}
	r.Requests = r.Ops
	r.Unexpected = unexpected(sc, r.Codes)
}

// waitOrClose waits for the workers, closing their connections if they
// have not drained within stopGrace; it reports whether they drained.
func waitOrClose(wg *sync.WaitGroup, conns []*Conn) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(stopGrace):
		for _, c := range conns {
			c.Close()
		}
		<-done
		return false
	}
}

func addCodes(dst, src map[int16]int64) map[int16]int64 {
	for code, n := range src {
		if dst == nil {
			dst = map[int16]int64{}
		}
		dst[code] += n
	}
	return dst
}

func unexpected(sc *Scenario, codes map[int16]int64) map[int16]int64 {
	var out map[int16]int64
	for code, n := range codes {
		if !sc.expected(code) {
			if out == nil {
				out = map[int16]int64{}
			}
			out[code] = n
		}
	}
	return out
}

// steadyWorker owns one connection and its members' request state.
type steadyWorker struct {
	c       *Conn
	sc      *Scenario
	g       *groupSpec
	w       window
	members []*Member
	next    int

	ops   int64
	hist  *Histogram
	codes map[int16]int64
	err   error
}

// inflight is one request waiting for its response.
type inflight struct {
	resp  kmsg.Response
	start time.Time
}

func (sw *steadyWorker) request() kmsg.Request {
	m := sw.members[sw.next%len(sw.members)]
	sw.next++
	switch sw.sc.Kind {
	case Commit:
		return sw.g.commitRequest(m)
	case Fetch:
		return sw.g.fetchRequest(m)
	default:
		return heartbeatRequest(m)
	}
}

func (sw *steadyWorker) run() {
	depth := sw.sc.InFlight
	ring := make([]inflight, depth)
	head, n := 0, 0
	stopping := false
	add := func(code int16) {
		if code != 0 {
			sw.codes[code]++
		}
	}
	for {
		for !stopping && n < depth {
			req := sw.request()
			sw.c.Queue(req)
			ring[(head+n)%depth] = inflight{resp: req.ResponseKind(), start: time.Now()}
			n++
		}
		if n == 0 {
			return
		}
		if err := sw.c.Flush(); err != nil {
			sw.fail(err)
			return
		}
		f := ring[head]
		if err := sw.c.Read(f.resp); err != nil {
			sw.fail(err)
			return
		}
		head, n = (head+1)%depth, n-1
		now := time.Now()
		if sw.w.in(now) {
			sw.ops++
			sw.hist.Record(now.Sub(f.start))
		}
		// Codes count in the warmup and the drain too: none is hidden.
		switch resp := f.resp.(type) {
		case *kmsg.HeartbeatResponse:
			add(resp.ErrorCode)
		case *kmsg.OffsetCommitResponse:
			countCommit(resp, add)
		case *kmsg.OffsetFetchResponse:
			countFetch(resp, add)
		}
		if !now.Before(sw.w.end) {
			stopping = true
		}
	}
}

// fail records err unless the window is over (the runner may close the
// connection then).
func (sw *steadyWorker) fail(err error) {
	if time.Now().Before(sw.w.end) {
		sw.err = err
	}
}

func countCommit(resp *kmsg.OffsetCommitResponse, add func(int16)) {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			add(p.ErrorCode)
		}
	}
}

func countFetch(resp *kmsg.OffsetFetchResponse, add func(int16)) {
	add(resp.ErrorCode)
	for _, g := range resp.Groups {
		add(g.ErrorCode)
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				add(p.ErrorCode)
			}
		}
	}
}

// runMembers joins Groups x Members members, pipelining each group's
// joins on one connection (a synchronous coordinator answers each join at
// once; a server with a join barrier cannot run this scenario), and then
// reads the server's resident set.
func runMembers(ctx context.Context, t Target, sc *Scenario, r *Result) {
	g := newGroupSpec(sc)
	if t.Probe != nil {
		r.RSSBefore, _ = t.Probe.RSS()
	}
	var joined atomic.Int64
	var codes Codes
	hists := make([]*Histogram, sc.Conns)
	errs := make(chan error, sc.Conns)
	start := time.Now()
	for c := range sc.Conns {
		hists[c] = NewHistogram()
		go func() {
			errs <- func() error {
				conn, err := Dial(ctx, t.Addr, "loadgen")
				if err != nil {
					return err
				}
				defer conn.Close()
				ids := make([]string, sc.Members)
				for grp := c; grp < sc.Groups; grp += sc.Conns {
					clear(ids) // the first join of a new member has no id
					for round := range 2 {
						t0 := time.Now()
						for i := range sc.Members {
							conn.Queue(g.join(sc.group(grp), ids[i]))
						}
						if err := conn.Flush(); err != nil {
							return err
						}
						for i := range sc.Members {
							jr := kmsg.NewPtrJoinGroupResponse()
							jr.Version = joinVersion
							if err := conn.Read(jr); err != nil {
								return err
							}
							codes.Add(jr.ErrorCode)
							ids[i] = jr.MemberID
							if round == 1 && jr.ErrorCode == 0 {
								joined.Add(1)
							}
						}
						if round == 1 {
							hists[c].Record(time.Since(t0) / time.Duration(sc.Members))
						}
					}
				}
				return nil
			}()
		}()
	}
	for range sc.Conns {
		if err := <-errs; err != nil && r.Err == nil {
			r.Err = err
		}
	}
	r.Elapsed = time.Since(start)
	for _, h := range hists {
		r.Latency.Merge(h)
	}
	r.Members = joined.Load()
	r.Ops = r.Members
	r.Requests = 2 * int64(sc.Groups*sc.Members)
	r.Codes = codes.Map()
	r.Unexpected = unexpected(sc, r.Codes)
	delete(r.Unexpected, kerr.MemberIDRequired.Code) // the first of each member's two joins
	if t.Probe != nil {
		time.Sleep(500 * time.Millisecond) // let the server settle
		r.RSS, _ = t.Probe.RSS()
	}
	if r.Members != int64(sc.Groups*sc.Members) && r.Err == nil {
		r.Err = fmt.Errorf("loadgen: %s: joined %d of %d members", sc.Name, r.Members, sc.Groups*sc.Members)
	}
}
