package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"syscall"

	"github.com/minibroker/minibroker/broker"
)

// serve runs "minibroker serve": it parses the flags (serve_flags.go),
// starts the broker and serves until ctx is done. It returns the exit
// status: 2 for a bad flag, 1 when the broker cannot start or stop
// cleanly.
func serve(ctx context.Context, args []string, stderr io.Writer) int {
	f, err := parseServeFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "minibroker serve: %v (minibroker serve -h lists the flags)\n", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: f.logLevel}))
	cfg := f.config(logger)
	prof, err := startProfile(f.profileDir, f.traceFile)
	if err != nil {
		fmt.Fprintf(stderr, "minibroker serve: %v\n", err)
		return 1
	}
	if err := errors.Join(f.explainListen(runServe(ctx, cfg)), prof.stop()); err != nil {
		fmt.Fprintf(stderr, "minibroker serve: %v\n", err)
		return 1
	}
	return 0
}

// makeRunVars are the make run variables that set serve's address flags
// (the Makefile's run target passes them on).
var makeRunVars = map[string]string{"listen": "LISTEN", "admin": "ADMIN"}

// explainListen turns a listener the broker could not bind into what to
// do about it: the flag that moves it, and the make run variable that
// sets the flag. Any other error is returned as it is.
func (f *serveFlags) explainListen(err error) error {
	var le *broker.ListenError
	if !errors.As(err, &le) {
		return err
	}
	name := f.bound.byName[le.Field]
	what := le.Err.Error()
	if errors.Is(le.Err, syscall.EADDRINUSE) {
		what = "the address is in use (another minibroker, a make run, or another program holds it)"
	}
	return fmt.Errorf("--%s %s: %s; give another with --%s ADDR (make run %s=ADDR)", name, le.Addr, what, name, makeRunVars[name])
}

// runServe starts a broker from cfg, serves until ctx is done, then stops
// it, which flushes every acknowledged commit to disk. Meanwhile it keeps
// the process's soft memory limit (memlimit.go).
func runServe(ctx context.Context, cfg broker.Config) error {
	b, err := broker.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer governMemory(b.MemoryStats, cfg.Logger)() // memlimit.go
	return b.Wait()
}
