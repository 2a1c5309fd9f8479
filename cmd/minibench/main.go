// Command minibench measures minibroker against kfake and against a floor
// server of its own, over the Kafka protocol, and prints one table.
//
//	minibench run [flags]            every scenario against every server
//	minibench serve-floor [flags]    the floor server (run as a child)
//	minibench serve-kfake [flags]    kfake, optionally persistent (child)
//	minibench txn-ids [flags]        idle cost and restart time of many transactional ids
//
// Each server runs as a child process, started fresh for each scenario, so
// that its CPU time (from /proc) is the server's alone.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/minibroker/minibroker/tools/loadgen"
)

const usage = `usage:
  minibench run [flags]           run the scenarios, print the table (minibench run -h)
  minibench serve-floor [flags]   serve the floor server
  minibench serve-kfake [flags]   serve kfake
  minibench txn-ids [flags]       idle cost and restart time of many transactional ids
`

func main() {
	ctx, stop := signalContext()
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// signalContext is done at the first SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return runBench(ctx, args[1:], stdout, stderr)
	case "serve-floor":
		return serveFloor(ctx, args[1:], stderr)
	case "serve-kfake":
		return serveKfake(ctx, args[1:], stderr)
	case "txn-ids":
		return runTxnIDs(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "minibench: unknown command %q\n%s", args[0], usage)
	return 2
}

func serveFloor(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("minibench serve-floor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:9092", "`ADDR` to listen on")
	var cfg loadgen.FloorConfig
	fs.StringVar(&cfg.Dir, "data-dir", "", "`DIR` a Produce appends to (one file, fdatasynced once per request); none: store nothing")
	fs.StringVar(&cfg.Topic, "topic", "bench", "`NAME` of the one topic Metadata shows")
	partitions := fs.Int("partitions", 16, "partitions of the topic")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg.Partitions = int32(*partitions)
	srv, err := loadgen.StartFloor(*listen, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "minibench serve-floor: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "floor ready addr=%s\n", srv.Addr)
	<-ctx.Done()
	if err := srv.Stop(); err != nil {
		fmt.Fprintf(stderr, "minibench serve-floor: %v\n", err)
		return 1
	}
	return 0
}

func serveKfake(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("minibench serve-kfake", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.Int("port", 9092, "loopback `PORT` to listen on")
	topic := fs.String("topic", "bench", "`NAME` of the topic to create")
	partitions := fs.Int("partitions", 16, "partitions of the topic")
	dataDir := fs.String("data-dir", "", "persist to `DIR` (kfake.DataDir)")
	fsync := fs.Bool("fsync", false, "fsync every persisted entry (kfake.SyncWrites); needs --data-dir")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	srv, err := loadgen.StartKfake(loadgen.KfakeConfig{Port: *port, Topic: *topic, Partitions: int32(*partitions), DataDir: *dataDir, Fsync: *fsync})
	if err != nil {
		fmt.Fprintf(stderr, "minibench serve-kfake: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "kfake ready addr=%s\n", srv.Addr)
	<-ctx.Done()
	_ = srv.Stop()
	return 0
}
