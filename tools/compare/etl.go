package compare

// The ETL comparison (minicompare etl): the price of the chapter's model
// on a real workload. A pipeline of stock kgo consumer groups, each stage
// reading one topic and writing every record it reads to the next, with
// members joining and leaving on a schedule drawn from a seed, runs
// against minibroker and kfake side by side, once per group protocol and
// balancer, plainly (at least once) and with kgo's GroupTransactSession
// and read_committed readers. Every source record carries a unique id in
// its key, so a record processed twice is counted by identity, and the
// last topic, read to its end, says what reached the output.

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/interrupt"
	"github.com/minibroker/minibroker/tools/lab"
)

// ETLProtocol is a group protocol and balancer a pipeline's members use.
type ETLProtocol struct {
	// Name is what the table calls it: "eager range", "consumer uniform".
	Name string
	// Balancer is the kgo balancer the members name.
	Balancer func() kgo.GroupBalancer
	// Consumer selects KIP-848's consumer protocol (kgo.ServerSideBalancer):
	// the broker assigns, with the assignor the balancer names.
	Consumer bool
}

// ETLProtocols returns the protocols the comparison runs, in table order:
// classic eager (range, round-robin), classic cooperative-sticky, and the
// consumer protocol with its uniform and range assignors.
func ETLProtocols() []ETLProtocol {
	return []ETLProtocol{
		{Name: "eager range", Balancer: kgo.RangeBalancer},
		{Name: "eager round-robin", Balancer: kgo.RoundRobinBalancer},
		{Name: "cooperative-sticky", Balancer: kgo.CooperativeStickyBalancer},
		{Name: "consumer uniform", Balancer: kgo.StickyBalancer, Consumer: true},
		{Name: "consumer range", Balancer: kgo.RangeBalancer, Consumer: true},
	}
}

// ETLRow is one line pair of the table: a protocol, plain or inside
// transactions.
type ETLRow struct {
	Protocol      ETLProtocol
	Transactional bool
}

// Mode is "plain" or "txn".
func (r ETLRow) Mode() string {
	if r.Transactional {
		return "txn"
	}
	return "plain"
}

// slug names the row's topics, groups and transactional ids.
func (r ETLRow) slug() string {
	s := []byte(r.Protocol.Name + "-" + r.Mode())
	for i, c := range s {
		if c == ' ' {
			s[i] = '-'
		}
	}
	return string(s)
}

// ETLRows returns every row: each protocol plain, then each in
// transactions.
func ETLRows() []ETLRow {
	var rows []ETLRow
	for _, tx := range []bool{false, true} {
		for _, p := range ETLProtocols() {
			rows = append(rows, ETLRow{Protocol: p, Transactional: tx})
		}
	}
	return rows
}

// ETLConfig is one comparison's workload. The zero value of a field takes
// its default (DefaultETLConfig).
type ETLConfig struct {
	Records    int   // source records, each with a unique id
	Partitions int32 // partitions of every topic
	Stages     int   // stages; a pipeline has Stages+1 topics
	Members    int   // members per stage when it starts
	Churn      int   // membership changes per stage (joins and leaves)
	Seed       uint64
	// Heartbeat is the members' heartbeat interval (classic) and the
	// brokers' consumer-protocol heartbeat interval.
	Heartbeat time.Duration
	// Timeout bounds one row on one side; a run that has not delivered
	// every record by then stops and reports what is missing.
	Timeout time.Duration
	// Rows are the rows to run (default ETLRows).
	Rows []ETLRow
	// Parallel is how many rows run at once, each on both sides.
	Parallel int
}

// DefaultETLConfig is the default run's workload: it finishes in well
// under a minute on two cores.
func DefaultETLConfig() ETLConfig {
	return ETLConfig{Records: 2000, Partitions: 6, Stages: 2, Members: 3, Churn: 4, Seed: 1,
		Heartbeat: 250 * time.Millisecond, Timeout: 45 * time.Second, Parallel: 2}
}

func (c ETLConfig) withDefaults() ETLConfig {
	d := DefaultETLConfig()
	if c.Records <= 0 {
		c.Records = d.Records
	}
	if c.Partitions <= 0 {
		c.Partitions = d.Partitions
	}
	if c.Stages <= 0 {
		c.Stages = d.Stages
	}
	if c.Members <= 0 {
		c.Members = d.Members
	}
	if c.Churn < 0 {
		c.Churn = 0
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = d.Heartbeat
	}
	if c.Timeout <= 0 {
		c.Timeout = d.Timeout
	}
	if len(c.Rows) == 0 {
		c.Rows = ETLRows()
	}
	if c.Parallel <= 0 {
		c.Parallel = d.Parallel
	}
	return c
}

// ETLResult is what one row measured on one side.
type ETLResult struct {
	Row  ETLRow
	Side Side
	// In is the records written to the source topic; Out the records a
	// reader (read_committed for a transactional row) finds in the last
	// topic.
	In, Out int
	// Reprocessed counts, by the most times one stage processed it
	// (2, 3, ...), the source records some stage processed more than once.
	Reprocessed map[int]int
	// DupOut is the source records the last topic holds more than once.
	DupOut int
	// Missing is the source records the last topic does not hold.
	Missing int
	// Rebalances is the generations (member epochs, for the consumer
	// protocol) the members were told of after their first, summed over
	// the stages.
	Rebalances int
	// PollErrors counts the errors PollFetches handed the application, by
	// kind (the kerr name); CommitErrors those CommitUncommittedOffsets
	// (plain) or End (txn) returned.
	PollErrors, CommitErrors map[string]int
	Elapsed                  time.Duration
	// Err is why the run could not finish, nil when it did.
	Err error
}

// Twice is the source records some stage processed more than once.
func (r ETLResult) Twice() int {
	n := 0
	for _, c := range r.Reprocessed {
		n += c
	}
	return n
}

// ETLTopics returns the topics a row's pipeline uses, source first.
func ETLTopics(cfg ETLConfig, row ETLRow) []string {
	cfg = cfg.withDefaults()
	topics := make([]string, cfg.Stages+1)
	for i := range topics {
		topics[i] = fmt.Sprintf("etl-%s-%d", row.slug(), i)
	}
	return topics
}

// RunETL runs every row of cfg against the brokers at addrs, both sides
// of a row at once, cfg.Parallel rows at a time, and returns the results
// by row, minibroker first. It creates each row's topics first. progress,
// if not nil, gets a line as each row starts and ends.
func RunETL(ctx context.Context, cfg ETLConfig, addrs map[Side]string, progress io.Writer) []ETLResult {
	cfg = cfg.withDefaults()
	results := make([]ETLResult, 0, 2*len(cfg.Rows))
	for _, row := range cfg.Rows {
		for _, side := range Sides() {
			results = append(results, ETLResult{Row: row, Side: side})
		}
	}
	var mu sync.Mutex // guards progress
	say := func(format string, args ...any) {
		if progress == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(progress, format+"\n", args...)
	}
	slots := make(chan struct{}, cfg.Parallel)
	var wg sync.WaitGroup
	// results holds each row's pair, minibroker first: the loop reads
	// none of it, since the goroutines write it.
	for i := 0; i < len(results); i += len(Sides()) {
		r, k := &results[i], &results[i+1]
		slots <- struct{}{} // rows start in table order
		wg.Go(func() {
			defer func() { <-slots }()
			say("etl: %s %s: running on both brokers", r.Row.Protocol.Name, r.Row.Mode())
			var sides sync.WaitGroup
			for _, res := range []*ETLResult{r, k} {
				sides.Go(func() {
					*res = runETLRow(ctx, cfg, res.Row, res.Side, addrs[res.Side])
					say("etl: %s %s on %s: %s", res.Row.Protocol.Name, res.Row.Mode(), res.Side, res.summary())
				})
			}
			sides.Wait()
		})
	}
	wg.Wait()
	return results
}

// summary is a result in a line, for progress.
func (r ETLResult) summary() string {
	if r.Err != nil {
		return "error: " + r.Err.Error()
	}
	return fmt.Sprintf("%d in, %d out, %d processed twice or more, %d missing, in %s", r.In, r.Out, r.Twice(), r.Missing, r.Elapsed.Round(100*time.Millisecond))
}

// runETLRow plays one row on one broker, in topics and groups named
// after the row (ETLTopics), which it creates first.
func runETLRow(ctx context.Context, cfg ETLConfig, row ETLRow, side Side, addr string) (res ETLResult) {
	start := time.Now()
	if interrupt.Interrupted(ctx) {
		return ETLResult{Row: row, Side: side, Err: interrupt.ErrInterrupted}
	}
	run := ctx
	defer func() {
		// A row the interrupt cut short has no result, whatever failed.
		if res.Err != nil && interrupt.Interrupted(run) {
			res.Err = interrupt.ErrInterrupted
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	topics := ETLTopics(cfg, row)
	want := make(map[string]int32, len(topics))
	for _, t := range topics {
		want[t] = cfg.Partitions
	}
	if err := lab.EnsureTopics(ctx, addr, want); err != nil {
		return ETLResult{Row: row, Side: side, Err: err, Elapsed: time.Since(start)}
	}
	res = measureETL(ctx, cfg, row, addr, topics, "etl-"+row.slug())
	res.Side = side
	return res
}

// measureETL runs a row's pipeline through topics, which exist, with its
// groups named prefix-0, prefix-1..., and measures it: the last topic is
// read to its end once the members are gone. cfg has its defaults.
func measureETL(ctx context.Context, cfg ETLConfig, row ETLRow, addr string, topics []string, prefix string) (res ETLResult) {
	res = ETLResult{Row: row, Reprocessed: map[int]int{}, PollErrors: map[string]int{}, CommitErrors: map[string]int{}}
	start := time.Now()
	defer func() { res.Elapsed = time.Since(start) }()
	p := &pipeline{cfg: cfg, row: row, addr: addr, topics: topics, prefix: prefix, pollErrs: map[string]int{}, syncErrs: map[string]int{}}
	if err := p.run(ctx); err != nil {
		res.Err = err
	}
	res.In = p.produced
	res.PollErrors, res.CommitErrors = p.pollErrs, p.syncErrs
	worst := map[string]int{} // source id -> most times one stage processed it
	for _, s := range p.stages {
		res.Rebalances += s.rebalances()
		for id, n := range s.processed {
			if n > 1 && n > worst[id] {
				worst[id] = n
			}
		}
	}
	for _, n := range worst {
		res.Reprocessed[n]++
	}
	if res.Err != nil {
		return res
	}
	out, err := readToEnd(ctx, addr, topics[len(topics)-1], cfg.Partitions, row.Transactional)
	if err != nil {
		res.Err = err
		return res
	}
	for _, n := range out {
		res.Out += n
		if n > 1 {
			res.DupOut++
		}
	}
	for i := range cfg.Records {
		if out[recordID(i)] == 0 {
			res.Missing++
		}
	}
	return res
}

// recordID is the key of the i'th source record: its identity through
// the pipeline.
func recordID(i int) string { return fmt.Sprintf("id-%07d", i) }
