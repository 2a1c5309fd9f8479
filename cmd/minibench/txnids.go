package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnIDsConfig is what "minibench txn-ids" was asked to do.
type txnIDsConfig struct {
	minibroker string
	workDir    string
	ids        int
	idle       time.Duration
	bystanders int
	workers    int
	openOnly   bool
	restartBin string
}

// runTxnIDs measures what a minibroker holding many transactional ids
// costs when nothing happens: it gives ids transactions of their own
// (InitProducerId, AddPartitionsToTxn, EndTxn commit), then reads the
// server's CPU time (/proc/<pid>/stat) and bytes written
// (/proc/<pid>/io) over an idle window, times the first transaction of
// new ids (bystanders), then leaves a transaction open on every id,
// kills the server with SIGKILL and times its restart (until it accepts
// connections).
func runTxnIDs(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("minibench txn-ids", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg txnIDsConfig
	fs.StringVar(&cfg.minibroker, "minibroker", "bin/minibroker", "`PATH` of the minibroker binary (make build)")
	fs.StringVar(&cfg.workDir, "work-dir", ".cache/bench/txn-ids", "`DIR` for the data directory and the server log")
	fs.IntVar(&cfg.ids, "ids", 40_000, "transactional ids to create")
	fs.DurationVar(&cfg.idle, "idle", time.Minute, "idle window measured")
	fs.IntVar(&cfg.bystanders, "bystanders", 20, "new transactional ids whose first transaction is timed")
	fs.IntVar(&cfg.workers, "workers", 32, "concurrent connections creating ids")
	fs.BoolVar(&cfg.openOnly, "open-only", false, "only open a transaction on each id, kill and time the restart")
	fs.StringVar(&cfg.restartBin, "restart-minibroker", "", "`PATH` of the binary that restarts after the kill (default -minibroker): another build's restart, timed on the same data dir")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := txnIDs(ctx, cfg, stdout); err != nil {
		fmt.Fprintf(stderr, "minibench txn-ids: %v\n", err)
		return 1
	}
	return 0
}

func txnIDs(ctx context.Context, cfg txnIDsConfig, out io.Writer) error {
	dataDir := filepath.Join(cfg.workDir, "data")
	if err := os.RemoveAll(cfg.workDir); err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	bc := &benchConfig{minibroker: cfg.minibroker, partitions: 1}
	logPath := filepath.Join(cfg.workDir, "server.log")
	srv, err := startServer(ctx, bc, serverMinibroker, dataDir, recording{}, logPath)
	if err != nil {
		return err
	}
	defer func() {
		if srv != nil {
			_ = srv.stop()
		}
	}()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	if !cfg.openOnly {
		if err := idleAndBystanders(ctx, cfg, cl, srv, dataDir, out); err != nil {
			return err
		}
	}
	start := time.Now()
	if err := forEachID(ctx, cfg, "txn-", func(id string) error { return openTxn(ctx, cl, id) }); err != nil {
		return err
	}
	fmt.Fprintf(out, "opened a transaction on each of %d ids in %v\n", cfg.ids, time.Since(start).Round(time.Millisecond))
	cl.Close()
	_ = srv.cmd.Process.Signal(syscall.SIGKILL)
	<-srv.exited
	srv.log.Close()
	srv = nil
	if cfg.restartBin != "" {
		bc.minibroker = cfg.restartBin
	}
	start = time.Now()
	srv, err = startServer(ctx, bc, serverMinibroker, dataDir, recording{}, logPath+".restart")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "restart (%s) after SIGKILL with %d open transactions: ready in %v\n", bc.minibroker, cfg.ids, time.Since(start).Round(time.Millisecond))
	return nil
}

// idleAndBystanders creates the ids, each with a committed transaction,
// measures the idle server and times the bystanders' first transactions.
func idleAndBystanders(ctx context.Context, cfg txnIDsConfig, cl *kgo.Client, srv *child, dataDir string, out io.Writer) error {
	start := time.Now()
	if err := forEachID(ctx, cfg, "txn-", func(id string) error { return oneTxn(ctx, cl, id, true) }); err != nil {
		return err
	}
	fmt.Fprintf(out, "created %d transactional ids, each with one committed transaction, in %v\n", cfg.ids, time.Since(start).Round(time.Millisecond))
	journal, _ := os.Stat(filepath.Join(dataDir, "transactions.log"))
	if journal != nil {
		fmt.Fprintf(out, "transaction log: %d bytes\n", journal.Size())
	}
	pid := srv.cmd.Process.Pid
	cpu0, io0, err := procUsage(pid)
	if err != nil {
		return err
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(cfg.idle):
	}
	cpu1, io1, err := procUsage(pid)
	if err != nil {
		return err
	}
	took := time.Since(t0)
	fmt.Fprintf(out, "idle %v: CPU %.1f%% of one core, disk writes %.2f MB/s (%d bytes)\n", took.Round(time.Second),
		100*float64(cpu1-cpu0)/float64(took), float64(io1-io0)/took.Seconds()/1e6, io1-io0)
	var lat []time.Duration
	for i := range cfg.bystanders {
		at := time.Now()
		if err := oneTxn(ctx, cl, fmt.Sprintf("bystander-%d", i), true); err != nil {
			return err
		}
		lat = append(lat, time.Since(at))
		time.Sleep(100 * time.Millisecond) // spread over expiry steps
	}
	slices.Sort(lat)
	fmt.Fprintf(out, "bystander first transaction (InitProducerId, AddPartitionsToTxn, EndTxn), %d ids: p50 %v, max %v\n",
		len(lat), lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
	return nil
}

// forEachID runs fn for ids prefix0 .. prefix<n-1> on cfg.workers
// goroutines.
func forEachID(ctx context.Context, cfg txnIDsConfig, prefix string, fn func(string) error) error {
	ids := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				if err := fn(id); err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range cfg.ids {
		select {
		case ids <- prefix + strconv.Itoa(i):
		case <-ctx.Done():
		}
	}
	close(ids)
	wg.Wait()
	return cmpErr(first, ctx.Err())
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// oneTxn gives id a producer id and one transaction on bench-0, ended
// by EndTxn.
func oneTxn(ctx context.Context, cl *kgo.Client, id string, commit bool) error {
	pid, epoch, err := initID(ctx, cl, id)
	if err != nil {
		return err
	}
	if err := addPartition(ctx, cl, id, pid, epoch); err != nil {
		return err
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, pid, epoch, commit
	resp, err := end.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

// openTxn bumps id's epoch and begins a transaction it leaves open. A
// client's retry of an InitProducerId the server was slow to answer may
// bump the epoch twice: PRODUCER_FENCED then starts over, a few times.
func openTxn(ctx context.Context, cl *kgo.Client, id string) error {
	var err error
	for range 5 {
		var pid int64
		var epoch int16
		if pid, epoch, err = initID(ctx, cl, id); err != nil {
			return err
		}
		if err = addPartition(ctx, cl, id, pid, epoch); !errors.Is(err, kerr.ProducerFenced) {
			return err
		}
	}
	return err
}

func initID(ctx context.Context, cl *kgo.Client, id string) (int64, int16, error) {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = &id, int32((15 * time.Minute).Milliseconds())
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, 0, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return 0, 0, fmt.Errorf("InitProducerId %s: %w", id, err)
	}
	return resp.ProducerID, resp.ProducerEpoch, nil
}

func addPartition(ctx context.Context, cl *kgo.Client, id string, pid int64, epoch int16) error {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "bench", Partitions: []int32{0}}}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("AddPartitionsToTxn %s: %w", id, err)
			}
		}
	}
	return nil
}

// procUsage reads a process's CPU time (user + system) and the bytes it
// caused to be written to storage.
func procUsage(pid int) (time.Duration, int64, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// Fields after the command name, which ends at the last ')'.
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, 0, errors.New("short /proc stat")
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const ticks = 100 // USER_HZ
	cpu := time.Duration(utime+stime) * time.Second / ticks
	io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(io), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return cpu, n, err
		}
	}
	return 0, 0, errors.New("no write_bytes in /proc io")
}
