package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/minibroker/minibroker/tools/loadgen"
)

// readyTimeout bounds a server's start, loading stored offsets included.
const readyTimeout = 2 * time.Minute

// stopTimeout bounds a server's clean shutdown (minibroker folds its
// journal into offsets.json when it stops).
const stopTimeout = 2 * time.Minute

// child is one server process.
type child struct {
	cmd     *exec.Cmd
	addr    string
	log     *os.File
	dataDir string // removed once the server has stopped
	exited  chan error
}

// startServer starts server as a child process listening on a free
// loopback port and waits until it accepts connections. A minibroker
// records what rec names.
func startServer(ctx context.Context, cfg *benchConfig, server, dataDir string, rec recording, logPath string) (*child, error) {
	port, err := loadgen.FreePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var argv []string
	switch server {
	case serverMinibroker:
		argv = []string{cfg.minibroker, "serve", "--listen", addr, "--data-dir", dataDir,
			"--topic", "bench:" + strconv.Itoa(cfg.partitions), "--log-level", "warn"}
		if rec.profileDir != "" {
			argv = append(argv, "--profile-dir", rec.profileDir)
		}
		if rec.traceFile != "" {
			argv = append(argv, "--trace-file", rec.traceFile)
		}
	case serverKfake:
		argv = []string{cfg.self, "serve-kfake", "--port", strconv.Itoa(port), "--partitions", strconv.Itoa(cfg.partitions)}
	case serverKfakeFsync:
		argv = []string{cfg.self, "serve-kfake", "--port", strconv.Itoa(port), "--partitions", strconv.Itoa(cfg.partitions),
			"--data-dir", dataDir, "--fsync"}
	case serverFloor:
		argv = []string{cfg.self, "serve-floor", "--listen", addr, "--data-dir", dataDir, "--partitions", strconv.Itoa(cfg.partitions)}
	default:
		return nil, fmt.Errorf("unknown server %q", server)
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", server, err)
	}
	c := &child{cmd: cmd, addr: addr, log: logf, exited: make(chan error, 1)}
	go func() { c.exited <- cmd.Wait() }()
	deadline := time.Now().Add(readyTimeout)
	for {
		conn, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			conn.Close()
			return c, nil
		}
		select {
		case err := <-c.exited:
			logf.Close()
			return nil, fmt.Errorf("%s exited before it was ready (%v); see %s", server, err, logPath)
		case <-ctx.Done():
			_ = c.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = c.stop()
			return nil, fmt.Errorf("%s not ready on %s after %v; see %s", server, addr, readyTimeout, logPath)
		}
	}
}

// stop asks the server to shut down cleanly (SIGTERM) and waits for it,
// killing it if it takes too long.
func (c *child) stop() error {
	defer c.log.Close()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-c.exited:
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == -1 {
			return nil // ended by the signal, as a server may be
		}
		return err
	case <-time.After(stopTimeout):
		_ = c.cmd.Process.Kill()
		<-c.exited
		return fmt.Errorf("did not stop within %v", stopTimeout)
	}
}
