package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/minibroker/minibroker/tools/loadgen"
)

// The servers under test.
const (
	serverMinibroker = "minibroker"
	serverKfake      = "kfake"
	serverKfakeFsync = "kfake-fsync"
	serverFloor      = "floor"
)

var allServers = []string{serverMinibroker, serverKfake, serverKfakeFsync, serverFloor}

// benchConfig is what "minibench run" was asked to do.
type benchConfig struct {
	minibroker string // path of the minibroker binary
	self       string // path of this binary, for the serve-* children
	workDir    string // data directories and server logs
	out        string // where the report goes besides stdout
	duration   time.Duration
	warmup     time.Duration
	rounds     int
	only       *regexp.Regexp
	servers    map[string]bool
	scale      float64 // 1 for the real run; smaller for quick checks
	partitions int
	inProcess  bool   // run the in-process measurements
	profile    string // minibroker writes pprof profiles under profile/<scenario>; "" for none
	trace      string // minibroker writes execution traces to trace/<scenario>.trace; "" for none
}

func parseRunFlags(args []string, stderr io.Writer) (*benchConfig, error) {
	fs := flag.NewFlagSet("minibench run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := &benchConfig{}
	fs.StringVar(&cfg.minibroker, "minibroker", "bin/minibroker", "`PATH` of the minibroker binary (make build)")
	fs.StringVar(&cfg.workDir, "work-dir", ".cache/bench", "`DIR` for data directories and server logs")
	fs.StringVar(&cfg.out, "out", ".cache/bench/report.md", "`FILE` to write the report to, besides stdout")
	fs.DurationVar(&cfg.duration, "duration", 800*time.Millisecond, "measured time of each window")
	fs.DurationVar(&cfg.warmup, "warmup", 200*time.Millisecond, "unmeasured time before each window")
	fs.IntVar(&cfg.rounds, "rounds", 5, "windows per scenario and server, alternating between the servers")
	only := fs.String("only", "", "run only scenarios whose name matches `REGEXP`")
	servers := fs.String("servers", strings.Join(allServers, ","), "comma-separated `LIST` of servers to run")
	fs.Float64Var(&cfg.scale, "scale", 1, "scale the large scenarios (members, stored offsets) by `F`, for quick checks")
	fs.IntVar(&cfg.partitions, "partitions", 16, "partitions of the bench topic")
	fs.StringVar(&cfg.profile, "profile", "", "`DIR`: minibroker writes pprof profiles of each scenario to DIR/<scenario> (serve --profile-dir); read them with go tool pprof -top")
	fs.StringVar(&cfg.trace, "trace", "", "`DIR`: minibroker writes the execution trace of each scenario to DIR/<scenario>.trace (serve --trace-file); read it with go tool trace")
	fs.BoolVar(&cfg.inProcess, "in-process", true, "also run the in-process measurements (rebalance, idle member memory)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	re, err := regexp.Compile(*only)
	if err != nil {
		return nil, fmt.Errorf("-only: %w", err)
	}
	cfg.only = re
	cfg.servers = map[string]bool{}
	for _, s := range strings.Split(*servers, ",") {
		s = strings.TrimSpace(s)
		if !slicesContains(allServers, s) {
			return nil, fmt.Errorf("-servers: unknown server %q (have %s)", s, strings.Join(allServers, ", "))
		}
		cfg.servers[s] = true
	}
	if cfg.duration <= 0 || cfg.warmup < 0 || cfg.scale <= 0 || cfg.partitions < 1 || cfg.rounds < 1 {
		return nil, errors.New("-duration, -rounds, -scale and -partitions must be positive, -warmup not negative")
	}
	if cfg.self, err = os.Executable(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// benchScenario is one scenario and what the servers need for it.
type benchScenario struct {
	loadgen.Scenario
	about string
	// stored offsets to preload into minibroker's data directory.
	stored int
}

// scenarios returns the scenarios of one run. Groups are named after the
// scenario, so no two scenarios share state even on one server.
func scenarios(cfg *benchConfig) []benchScenario {
	mk := func(name, about string, sc loadgen.Scenario) benchScenario {
		sc.Name = name
		sc.Partitions = cfg.partitions
		sc.Duration, sc.Warmup = cfg.duration, cfg.warmup
		return benchScenario{Scenario: sc, about: about}
	}
	steady := []string{serverMinibroker, serverKfake, serverFloor}
	durable := []string{serverMinibroker, serverKfake, serverKfakeFsync, serverFloor}
	hb := func(conns, groups, members, inflight int) loadgen.Scenario {
		return loadgen.Scenario{Kind: loadgen.Heartbeat, Conns: conns, Groups: groups, Members: members, InFlight: inflight, Servers: steady}
	}
	scaled := func(n int) int { return max(1, int(float64(n)*cfg.scale)) }
	out := []benchScenario{
		mk("hb-c1", "heartbeat, 1 conn, 1 group x 1 member", hb(1, 1, 1, 1)),
		mk("hb-c4", "heartbeat, 4 conns, 4 groups x 1", hb(4, 4, 1, 1)),
		mk("hb-c16", "heartbeat, 16 conns, 16 groups x 1", hb(16, 16, 1, 1)),
		mk("hb-c64", "heartbeat, 64 conns, 64 groups x 1", hb(64, 64, 1, 1)),
		mk("hb-pipe8-c4", "heartbeat, 4 conns x 8 in flight", hb(4, 4, 1, 8)),
		mk("commit-c4", "durable commit, 4 conns, 4 groups x 1, 1 partition per commit",
			loadgen.Scenario{Kind: loadgen.Commit, Conns: 4, Groups: 4, Servers: durable}),
		mk("commit-c64", "durable commit, 64 conns, 64 groups x 1",
			loadgen.Scenario{Kind: loadgen.Commit, Conns: 64, Groups: 64, Servers: durable}),
		mk("commit-g100x10", "durable commit, 64 conns, 100 groups x 10 members",
			loadgen.Scenario{Kind: loadgen.Commit, Conns: 64, Groups: 100, Members: 10, Servers: durable}),
		mk("fetch-c64", "offset fetch, 64 conns, 64 groups x 1, 1 partition",
			loadgen.Scenario{Kind: loadgen.Fetch, Conns: 64, Groups: 64, Servers: steady}),
		mk("churn-50", "join churn: 1 group of 50 members, each leaves and re-joins; ops = rebalances (generations), latency = join to synced",
			loadgen.Scenario{Kind: loadgen.Churn, Conns: 50, Groups: 1, Servers: durable}),
		mk("groups-1", "heartbeat, 64 conns, 1 group x 64 members", hb(64, 1, 64, 1)),
		mk("groups-10", "heartbeat, 64 conns, 10 groups x 6 members", hb(64, 10, 6, 1)),
		mk("groups-100", "heartbeat, 64 conns, 100 groups x 1", hb(64, 100, 1, 1)),
		mk("groups-1000", "heartbeat, 64 conns, 1000 groups x 1", hb(64, 1000, 1, 1)),
	}
	for _, n := range []int{1_000, 1_000_000} {
		s := mk(fmt.Sprintf("stored-%s", countName(scaledStored(n, cfg))), fmt.Sprintf("durable commit, 64 conns, with %d offsets stored", scaledStored(n, cfg)),
			loadgen.Scenario{Kind: loadgen.Commit, Conns: 64, Groups: 64, GroupPrefix: "stored", Servers: []string{serverMinibroker}})
		s.stored = scaledStored(n, cfg)
		out = append(out, s)
	}
	members := mk("members-100k", fmt.Sprintf("join %d groups x 10 members, then read the broker's RSS", scaled(10_000)),
		loadgen.Scenario{Kind: loadgen.Members, Conns: 16, Groups: scaled(10_000), Members: 10, Servers: []string{serverMinibroker}})
	out = append(out, members)
	out = append(out, recordScenarios(cfg, mk)...)
	out = append(out, txnScenarios(cfg, mk)...)
	var kept []benchScenario
	for _, s := range out {
		if cfg.only.MatchString(s.Name) {
			kept = append(kept, s)
		}
	}
	return kept
}

// scaledStored keeps the small stored count as it is: it is the baseline.
func scaledStored(n int, cfg *benchConfig) int {
	if n <= 1_000 {
		return n
	}
	return max(10_000, int(float64(n)*cfg.scale))
}

func countName(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1_000 && n%1_000 == 0:
		return fmt.Sprintf("%dk", n/1_000)
	}
	return fmt.Sprint(n)
}

// outcome is one scenario's results, by server.
type outcome struct {
	sc      benchScenario
	results map[string]*loadgen.Result
}

// inProcessResults are the measurements run without sockets.
type inProcessResults struct {
	rebalance       map[int]time.Duration // members -> one rebalance over 10,000 partitions
	bytesPerMember  float64
	idleMembers     int
	rebalanceParts  int
	measuredWithout bool
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseRunFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "minibench run: %v\n", err)
		return 2
	}
	if cfg.servers[serverMinibroker] {
		if _, err := os.Stat(cfg.minibroker); err != nil {
			fmt.Fprintf(stderr, "minibench run: minibroker binary: %v (run make build)\n", err)
			return 1
		}
	}
	if err := os.MkdirAll(cfg.workDir, 0o755); err != nil {
		fmt.Fprintf(stderr, "minibench run: %v\n", err)
		return 1
	}
	meta := runMeta{start: time.Now(), loadStart: loadAvg(), cpuStart: readCPUTimes(), args: args}
	var outcomes []*outcome
	for _, sc := range scenarios(cfg) {
		if ctx.Err() != nil {
			return 1
		}
		o := runScenario(ctx, cfg, sc)
		for _, server := range allServers {
			if r := o.results[server]; r != nil {
				fmt.Fprintf(stderr, "%-14s %-12s %10.0f ops/s  p50 %-9s p99 %-9s cpu/op %-8s codes %s%s\n", sc.Name, server, r.MedianRate(),
					fmtDur(r.Latency.Quantile(0.5)), fmtDur(r.Latency.Quantile(0.99)), fmtDur(r.CPUPerOp()), loadgen.FormatCodes(r.Codes), errSuffix(r.Err))
			}
		}
		outcomes = append(outcomes, o)
	}
	var disk *diskResults
	for _, o := range outcomes {
		if o.sc.Kind == loadgen.ProduceSync || o.sc.Kind == loadgen.TxnProduce {
			disk = measureDisk(cfg, stderr)
			break
		}
	}
	var inproc *inProcessResults
	if cfg.inProcess {
		inproc = measureInProcess(cfg, stderr)
	}
	meta.end, meta.loadEnd, meta.cpuEnd = time.Now(), loadAvg(), readCPUTimes()
	report := renderReport(cfg, meta, outcomes, inproc, disk)
	fmt.Fprint(stdout, report)
	if cfg.out != "" {
		err := os.MkdirAll(filepath.Dir(cfg.out), 0o755)
		if err == nil {
			err = os.WriteFile(cfg.out, []byte(report), 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "minibench run: write %s: %v\n", cfg.out, err)
			return 1
		}
		fmt.Fprintf(stderr, "report written to %s\n", cfg.out)
	}
	for _, o := range outcomes {
		for _, r := range o.results {
			if r.Err != nil || len(r.Unexpected) > 0 {
				return 1
			}
		}
	}
	return 0
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return "  ERROR " + err.Error()
}

// runScenario starts a fresh server of each kind sc runs on, prepares sc
// on each, then measures cfg.rounds windows per server, alternating
// between the servers and reversing their order every round, so that load
// from outside the run hits them alike. The servers stop afterwards.
func runScenario(ctx context.Context, cfg *benchConfig, sc benchScenario) *outcome {
	o := &outcome{sc: sc, results: map[string]*loadgen.Result{}}
	fail := func(server string, err error) {
		o.results[server] = &loadgen.Result{Scenario: sc.Name, Target: server, Latency: loadgen.NewHistogram(), Err: err}
	}
	var order []string
	sessions := map[string]*loadgen.Session{}
	children := map[string]*child{}
	defer func() {
		for server, sess := range sessions {
			sess.Close()
			if err := children[server].stop(); err != nil && o.results[server] != nil && o.results[server].Err == nil {
				o.results[server].Err = fmt.Errorf("stop %s: %w", server, err)
			}
			// The records scenarios leave gigabytes behind; the logs stay.
			_ = os.RemoveAll(children[server].dataDir)
		}
	}()
	for _, server := range allServers {
		if !cfg.servers[server] || !sc.RunsOn(server) {
			continue
		}
		ch, err := startChild(ctx, cfg, server, sc)
		if err != nil {
			fail(server, err)
			continue
		}
		target := loadgen.Target{Name: server, Addr: ch.addr, Probe: loadgen.ProcProbe{Pid: ch.cmd.Process.Pid}}
		sess, err := loadgen.Prepare(ctx, target, sc.Scenario)
		sessions[server], children[server] = sess, ch
		if err != nil {
			r := loadgen.Merge()
			r.Scenario, r.Target, r.SetupCodes, r.Err = sc.Name, server, sess.SetupCodes(), err
			o.results[server] = r
			continue
		}
		order = append(order, server)
	}
	rounds := cfg.rounds
	if sc.Kind == loadgen.Members {
		rounds = 1
	}
	windows := map[string][]*loadgen.Result{}
	for round := range rounds {
		for i := range order {
			server := order[i]
			if round%2 == 1 {
				server = order[len(order)-1-i]
			}
			if ctx.Err() != nil {
				return o
			}
			windows[server] = append(windows[server], sessions[server].Measure(ctx))
		}
	}
	for server, ws := range windows {
		o.results[server] = loadgen.Merge(ws...)
	}
	return o
}

// recording is what a minibroker child records of its scenario: pprof
// profiles into profileDir, an execution trace into traceFile; "" for
// none.
type recording struct {
	profileDir, traceFile string
}

// recording names the files -profile and -trace ask for the scenario
// name; serve makes their directories.
func (cfg *benchConfig) recording(name string) recording {
	var rec recording
	if cfg.profile != "" {
		rec.profileDir = filepath.Join(cfg.profile, name)
	}
	if cfg.trace != "" {
		rec.traceFile = filepath.Join(cfg.trace, name+".trace")
	}
	return rec
}

// startChild prepares a fresh data directory and starts server for sc.
func startChild(ctx context.Context, cfg *benchConfig, server string, sc benchScenario) (*child, error) {
	dataDir := filepath.Join(cfg.workDir, "data", sc.Name+"-"+server)
	if err := os.RemoveAll(dataDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	if sc.stored > 0 && server == serverMinibroker {
		groups := make([]string, sc.Groups)
		for i := range groups {
			groups[i] = fmt.Sprintf("%s-%d", sc.GroupPrefix, i)
		}
		if err := loadgen.WriteStoredOffsets(dataDir, groups, sc.stored); err != nil {
			return nil, err
		}
	}
	var rec recording
	if server == serverMinibroker {
		rec = cfg.recording(sc.Name)
	}
	ch, err := startServer(ctx, cfg, server, dataDir, rec, filepath.Join(cfg.workDir, "logs", sc.Name+"-"+server+".log"))
	if err != nil {
		return nil, err
	}
	ch.dataDir = dataDir
	return ch, nil
}

// measureInProcess times rebalances and weighs idle members in this
// process, on the coordinator alone.
func measureInProcess(cfg *benchConfig, stderr io.Writer) *inProcessResults {
	res := &inProcessResults{rebalance: map[int]time.Duration{}, rebalanceParts: 10_000}
	for _, m := range []int{10, 100, 1_000} {
		d, err := loadgen.MeasureRebalance(m, res.rebalanceParts, 21)
		if err != nil {
			fmt.Fprintf(stderr, "rebalance %d: %v\n", m, err)
			continue
		}
		res.rebalance[m] = d
		fmt.Fprintf(stderr, "in-process     rebalance    %d members x %d partitions: %s\n", m, res.rebalanceParts, fmtDur(d))
	}
	groups := max(1, int(10_000*cfg.scale))
	res.idleMembers = groups * 10
	b, err := loadgen.MeasureIdleMembers(groups, 10, cfg.partitions)
	if err != nil {
		fmt.Fprintf(stderr, "idle members: %v\n", err)
		res.measuredWithout = true
	}
	res.bytesPerMember = b
	fmt.Fprintf(stderr, "in-process     idle member  %.0f bytes (%d members)\n", b, res.idleMembers)
	return res
}

// runMeta describes the run for the report's header.
type runMeta struct {
	start, end         time.Time
	loadStart, loadEnd string
	cpuStart, cpuEnd   cpuTimes
	args               []string
}

// cpuTimes is the first line of /proc/stat: the machine's CPU time since
// boot, in clock ticks, by where it went.
type cpuTimes struct {
	busy, idle, steal uint64 // steal: time the hypervisor ran something else
	ok                bool
}

func readCPUTimes() cpuTimes {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return parseCPUTimes(line)
}

// parseCPUTimes reads "cpu user nice system idle iowait irq softirq steal
// ...": idle and iowait are idle, steal is steal, the rest is busy. The
// guest columns are already inside user and nice.
func parseCPUTimes(line string) cpuTimes {
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuTimes{}
	}
	var v [8]uint64
	for i := range v {
		n, err := strconv.ParseUint(f[i+1], 10, 64)
		if err != nil {
			return cpuTimes{}
		}
		v[i] = n
	}
	return cpuTimes{
		busy:  v[0] + v[1] + v[2] + v[5] + v[6],
		idle:  v[3] + v[4],
		steal: v[7],
		ok:    true,
	}
}

// machine is the report's sentence on the machine during the run: the
// load average at its start and end, and where the CPUs' time went
// between the two /proc/stat readings.
func (m runMeta) machine() string {
	return fmt.Sprintf("Load average %s at the start of the run, %s at the end; over the run, %s.",
		m.loadStart, m.loadEnd, cpuShare(m.cpuStart, m.cpuEnd))
}

// cpuShare describes the machine's CPU time between two readings:
// "the machine's CPUs 83% busy, 12% idle, 5% stolen by the hypervisor".
func cpuShare(start, end cpuTimes) string {
	if !start.ok || !end.ok {
		return "CPU shares unknown (no /proc/stat)"
	}
	// The counters only grow: no tick passed unless end's total is past start's.
	was, now := start.busy+start.idle+start.steal, end.busy+end.idle+end.steal
	if now <= was {
		return "CPU shares unknown (no time passed)"
	}
	total := now - was
	busy, idle, steal := end.busy-start.busy, end.idle-start.idle, end.steal-start.steal
	pct := func(n uint64) float64 { return 100 * float64(n) / float64(total) }
	return fmt.Sprintf("the machine's CPUs %.0f%% busy, %.0f%% idle, %.0f%% stolen by the hypervisor (/proc/stat)", pct(busy), pct(idle), pct(steal))
}

func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func cpus() int { return runtime.NumCPU() }
