package lab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"sync"
	"time"

	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/server"
)

// DefaultTopics is the topic catalog of an in-process broker whose config
// names none: the chapter's orders topic with four partitions, and
// payments with one, as `make run` creates them.
func DefaultTopics() map[string]int32 {
	return map[string]int32{"orders": 4, "payments": 1}
}

// BrokerConfig configures StartBroker. Zero fields mean the default.
type BrokerConfig struct {
	// Clock is the coordinator's clock. Default: a clock.Manual reading
	// Unix 0, so that nothing expires unless the caller moves it and runs
	// the expiry step (Broker.Clock, Broker.Coordinator.Expire).
	Clock coordinator.Clock
	// ExpiryInterval is how often the server runs the expiry step. Zero
	// (the default) never runs it, as with `serve --clock manual`; set it
	// with a real clock.
	ExpiryInterval time.Duration
	// DataDir holds offsets.json. Default: a new temporary directory that
	// Close removes. A directory given here is kept, so a second broker can
	// reopen it.
	DataDir string
	// Topics is the topic catalog. Default: DefaultTopics.
	Topics map[string]int32
	// Logger receives the broker's events. Default: discard.
	Logger *slog.Logger
}

// Broker is a minibroker running in this process on an ephemeral loopback
// port.
type Broker struct {
	// Addr is the host:port the broker listens on.
	Addr string
	// Clock is the manual clock when the broker runs on one, else nil.
	Clock *clock.Manual
	// Coordinator is the broker's coordinator, for the expiry lab and for
	// tests that look behind the wire.
	Coordinator *coordinator.Coordinator

	store  *offsets.Store
	tmpDir string // removed by Close; "" when the caller chose DataDir
	cancel context.CancelFunc
	served chan error // receives Serve's result once

	closeOnce sync.Once
	closeErr  error // set inside closeOnce
}

// StartBroker starts a broker on 127.0.0.1:0 and returns once it accepts
// connections. Close stops it.
func StartBroker(cfg BrokerConfig) (b *Broker, err error) {
	b = &Broker{served: make(chan error, 1)}
	dir := cfg.DataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "minibroker-lab-"); err != nil {
			return nil, fmt.Errorf("lab: data dir: %w", err)
		}
		b.tmpDir = dir
	}
	defer func() {
		if err != nil && b.tmpDir != "" {
			os.RemoveAll(b.tmpDir)
		}
	}()
	if b.store, err = offsets.Open(offsets.Config{Dir: dir}); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	defer func() {
		if err != nil {
			b.store.Close()
		}
	}()

	clk := cfg.Clock
	if clk == nil {
		b.Clock = clock.NewManual(time.UnixMilli(0))
		clk = b.Clock
	} else if m, ok := clk.(*clock.Manual); ok {
		b.Clock = m
	}
	topics := cfg.Topics
	if topics == nil {
		topics = DefaultTopics()
	}
	b.Coordinator, err = coordinator.New(coordinator.Config{
		Clock: clk, Store: b.store, Topics: maps.Clone(topics), Logger: cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	srv, err := server.New(server.Config{
		Coordinator: b.Coordinator, Logger: cfg.Logger, ExpiryInterval: cfg.ExpiryInterval,
	})
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("lab: listen: %w", err)
	}
	b.Addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go func() { b.served <- srv.Serve(ctx, ln) }()
	return b, nil
}

// Close stops the server, waits for it, flushes and closes the offsets
// store, and removes the temporary data directory. It is idempotent and
// safe to call from several goroutines; every call returns the first
// call's result.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		b.cancel()
		serveErr := <-b.served
		storeErr := b.store.Close()
		var rmErr error
		if b.tmpDir != "" {
			rmErr = os.RemoveAll(b.tmpDir)
		}
		b.closeErr = errors.Join(serveErr, storeErr, rmErr)
	})
	return b.closeErr
}
