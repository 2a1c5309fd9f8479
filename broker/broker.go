// Package broker is the one place a minibroker is put together: the data
// directory, the topic catalog, the offsets store, the coordinator, the
// Kafka server with its expiry ticker, and the admin API. The `minibroker
// serve` command, the labs, the load generator, the examples and the tests
// all start brokers through it.
//
// It is also the way to run minibroker inside a Go test, as franz-go's
// kfake is run:
//
//	b, err := broker.Start(ctx, broker.Config{Topics: map[string]int32{"orders": 4}})
//	if err != nil { ... }
//	defer b.Close()
//	client, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), ...)
//
// With Config.ManualClock, time moves only by Advance, members expire only
// when Expire runs, and ExpireMember fences one member on demand: the
// chapter's experiments, run against real clients.
package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/internal/datadir"
	"github.com/minibroker/minibroker/internal/hostport"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/server"
	"github.com/minibroker/minibroker/topics"
	"github.com/minibroker/minibroker/txn"
)

// ErrRealClock is returned by Advance on a broker that runs on the system
// clock.
var ErrRealClock = errors.New("broker: the clock is real; only a broker with Config.ManualClock can be advanced")

// Broker is a running minibroker. Its methods are safe for concurrent use.
type Broker struct {
	addr      string
	adminAddr string
	dataDir   string
	logger    *slog.Logger

	clock   coordinator.Clock
	manual  *clock.Manual // nil on the system clock
	catalog *catalog.Catalog
	store   offsetStore
	log     *records.Log
	coord   *coordinator.Coordinator
	topics  *topics.Admin
	faults  *server.Faults
	srv     *server.Server
	txns    *txn.Coordinator

	lock      *datadir.Dir // nil in memory; released once stopped
	cancel    context.CancelFunc
	stopped   chan struct{} // closed once everything has stopped
	stopErr   error         // set before stopped is closed
	closeOnce sync.Once
}

// offsetStore is what the broker needs of either offsets store.
type offsetStore interface {
	coordinator.OffsetStore
	Stats() offsets.Stats
	Close() error
}

// Start assembles a broker from cfg, binds its listeners and serves until
// ctx is done or Close is called. It returns once the broker accepts
// connections; on error nothing is left running or locked.
func Start(ctx context.Context, cfg Config) (_ *Broker, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := &Broker{dataDir: cfg.DataDir, logger: cfg.Logger, stopped: make(chan struct{})}
	if b.logger == nil {
		b.logger = slog.New(slog.DiscardHandler)
	}
	var cleanup []func() error // undone in reverse on a failed start
	defer func() {
		if err != nil {
			for i := len(cleanup) - 1; i >= 0; i-- {
				_ = cleanup[i]()
			}
		}
	}()

	// The lock comes before anything in the data directory is opened,
	// read or repaired, and is released only after every store has
	// closed. A directory that exists is locked before the listeners are
	// bound, so that a second broker on it is told whose it is, whatever
	// address it asks for; one that does not is made only once they are
	// bound, so that a start on an address in use leaves no data dir
	// behind.
	lockDir := func() error {
		lock, err := datadir.Lock(b.dataDir)
		if err != nil {
			return err
		}
		b.lock = lock
		cleanup = append(cleanup, lock.Release)
		return nil
	}
	if b.dataDir != "" {
		if _, err := os.Stat(b.dataDir); err == nil {
			if err := lockDir(); err != nil {
				return nil, err
			}
		}
	}
	lns, err := listen(cfg)
	if err != nil {
		return nil, err
	}
	cleanup = append(cleanup, lns.close)
	if lns.admin != nil {
		// The Kafka server names it to a client that speaks HTTP to the
		// Kafka port.
		b.adminAddr = lns.admin.Addr().String()
	}
	if b.dataDir != "" && b.lock == nil {
		if err := os.MkdirAll(b.dataDir, 0o755); err != nil {
			return nil, fmt.Errorf("data dir: %w", err)
		}
		if err := lockDir(); err != nil {
			return nil, err
		}
	}
	b.clock = clock.System{}
	expiry := cmp.Or(cfg.ExpiryInterval, DefaultExpiryInterval)
	if cfg.ManualClock {
		b.manual = clock.NewManual(time.UnixMilli(0))
		b.clock, expiry = b.manual, 0
	}
	if b.log, err = openLog(cfg, b.logger); err != nil {
		return nil, err
	}
	cleanup = append(cleanup, b.log.Close)
	if b.catalog, err = openCatalog(cfg, b.logger, b.log); err != nil {
		return nil, err
	}
	cleanup = append(cleanup, b.catalog.Close)
	// The admin side's hooks come before the store, the coordinator and
	// the server, which report to them; its server, which reads them all,
	// comes after them.
	hooks := &AdminHooks{}
	if cfg.Admin != "" {
		if hooks, err = cfg.AdminAPI(b.clock); err != nil {
			return nil, fmt.Errorf("admin: %w", err)
		}
	}
	if b.store, err = openOffsets(cfg, b.logger, hooks.ObserveSync); err != nil {
		return nil, err
	}
	cleanup = append(cleanup, b.store.Close)
	coordCfg := coordinator.Config{
		Clock: b.clock, Store: b.store, Topics: b.catalog, Logger: b.logger, Settings: cfg.GroupSettings,
		OnRebalance: hooks.OnRebalance, OnGroupDeleted: hooks.OnGroupDeleted,
	}
	if b.coord, err = coordinator.New(coordCfg); err != nil {
		return nil, err
	}
	b.topics = &topics.Admin{Catalog: b.catalog, Log: b.log, Coordinator: b.coord, Logger: b.logger}
	if err := b.topics.Finish(); err != nil {
		return nil, err
	}
	b.faults = server.NewFaults(b.logger, server.CoordinatorTargets(b.coord, b.catalog))
	if b.txns, err = openTransactions(cfg, b); err != nil {
		return nil, err
	}
	cleanup = append(cleanup, b.txns.Close)
	srv, err := server.New(server.Config{
		Coordinator: b.coord, Catalog: b.catalog, Log: b.log, Logger: b.logger, Settings: cfg.ServerSettings,
		Advertise: cfg.Advertise, AutoCreateTopics: !cfg.NoAutoCreateTopics, ExpiryInterval: expiry,
		TLS: cfg.TLS, Faults: b.faults, SASLUsers: cfg.SASLUsers, Transactions: b.txns, Topics: b.topics,
		AdminAddr: b.adminAddr, Observer: hooks.Observer,
	})
	if err != nil {
		return nil, err
	}
	b.srv = srv
	var adm AdminServer
	if cfg.Admin != "" {
		adm, err = hooks.Start(AdminParts{
			Coordinator: b.coord, Catalog: b.catalog, Log: b.log, Topics: b.topics, Faults: b.faults, Transactions: b.txns,
			Clock: b.clock, Logger: b.logger, Token: cfg.AdminToken, OffsetStats: b.store.Stats, MemoryStats: srv.MemoryStats,
			AuthStats: srv.AuthStats, Advertised: srv.Advertised,
		})
		if err != nil {
			return nil, fmt.Errorf("admin: %w", err)
		}
	}
	b.serve(ctx, cfg, lns, srv, adm)
	return b, nil
}

// ListenError is what Start returns when it cannot bind a listener.
// Field names the Config field that holds the address, Listen (the Kafka
// listener) or Admin, so that a caller can name its own setting for it;
// Err is net.Listen's error (errors.Is(err, syscall.EADDRINUSE) when
// another process holds the address).
type ListenError struct {
	Field string // "Listen" or "Admin"
	Addr  string // the address asked for
	Err   error
}

// Error names the field, the address and net.Listen's error.
func (e *ListenError) Error() string { return fmt.Sprintf("broker: %s %s: %v", e.Field, e.Addr, e.Err) }

// Unwrap returns net.Listen's error.
func (e *ListenError) Unwrap() error { return e.Err }

// listeners are a broker's bound addresses, not yet served.
type listeners struct {
	kafka, admin net.Listener // admin nil when off
}

// listen binds the admin listener, if any, then the Kafka one, so that a
// broker whose admin address is taken never accepts a Kafka connection.
// Nothing is accepted until serve.
func listen(cfg Config) (*listeners, error) {
	var lns listeners
	if cfg.Admin != "" {
		ln, err := net.Listen("tcp", cfg.Admin)
		if err != nil {
			return nil, &ListenError{Field: "Admin", Addr: cfg.Admin, Err: err}
		}
		lns.admin = ln
	}
	addr := cmp.Or(cfg.Listen, DefaultListen)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = lns.close()
		return nil, &ListenError{Field: "Listen", Addr: addr, Err: err}
	}
	lns.kafka = ln
	return &lns, nil
}

// close closes the listeners a failed start bound; Serve closes them
// once serving.
func (l *listeners) close() error {
	var errs []error
	for _, ln := range []net.Listener{l.admin, l.kafka} {
		if ln != nil {
			errs = append(errs, ln.Close())
		}
	}
	return errors.Join(errs...)
}

// serve starts serving on the listeners Start bound; it cannot fail.
func (b *Broker) serve(ctx context.Context, cfg Config, lns *listeners, srv *server.Server, adm AdminServer) {
	ln, adminLn := lns.kafka, lns.admin
	var everywhere bool
	b.addr, everywhere = hostport.Reachable(ln.Addr().String())
	if everywhere {
		b.logger.Warn("listening on all interfaces", "addr", ln.Addr().String(), "advertise", cmp.Or(cfg.Advertise, b.addr),
			"hint", "clients on other hosts reach it only at an address given as Advertise (--advertise); Addr and, by default, Metadata name 127.0.0.1")
	}
	if cfg.TLS == nil && plaintextExposed(ln.Addr()) {
		b.logger.Warn("listening on a non-loopback address without TLS: commits and group membership travel in the clear; give --tls-cert and --tls-key",
			"addr", b.addr)
	}

	ctx, b.cancel = context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	if adm != nil {
		wg.Go(func() { errs <- adm.Serve(ctx, adminLn) })
		b.logger.Info("admin ready", "addr", b.adminAddr, "url", "http://"+b.adminAddr+"/")
	}
	wg.Go(func() {
		errs <- srv.Serve(ctx, ln)
		b.cancel() // the admin side stops with the broker
	})
	go func() {
		wg.Wait()
		close(errs)
		var all []error
		for err := range errs {
			all = append(all, err)
		}
		if err := b.txns.Close(); err != nil {
			all = append(all, fmt.Errorf("close transaction log: %w", err))
		}
		if err := b.store.Close(); err != nil {
			all = append(all, fmt.Errorf("flush offsets: %w", err))
		}
		if err := b.catalog.Close(); err != nil {
			all = append(all, fmt.Errorf("fold topic journal: %w", err))
		}
		if err := b.log.Close(); err != nil {
			all = append(all, fmt.Errorf("close partition logs: %w", err))
		}
		if b.lock != nil {
			if err := b.lock.Release(); err != nil {
				all = append(all, err)
			}
		}
		b.stopErr = errors.Join(all...)
		b.logger.Info("minibroker stopped")
		close(b.stopped)
	}()
	kind := "real"
	if b.manual != nil {
		kind = "manual"
	}
	b.logger.Info("minibroker ready", "addr", b.addr, "data_dir", b.dataDir, "clock", kind,
		"topics", len(b.catalog.List()), "tls", cfg.TLS != nil, "sasl_users", len(cfg.SASLUsers))
}

// plaintextExposed reports whether a plaintext listener bound to addr can
// be reached from other hosts: any address but a loopback one.
func plaintextExposed(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return !ok || !tcp.IP.IsLoopback()
}

// Addr returns the address a client on this host dials to reach the
// Kafka listener: the seed broker for clients. It is the bound address,
// "127.0.0.1:PORT" by default; for a broker bound to every interface
// (Listen "0.0.0.0:0", ":0", "[::]:0") it is "127.0.0.1:PORT", which
// Metadata also advertises unless Config.Advertise says otherwise.
func (b *Broker) Addr() string { return b.addr }

// AdminAddr returns the admin API's address, or "" when it is off.
func (b *Broker) AdminAddr() string { return b.adminAddr }

// DataDir returns the data directory, or "" for a broker in memory.
func (b *Broker) DataDir() string { return b.dataDir }

// Close stops the broker gracefully: it closes the listeners and every
// connection, waits for them, and flushes the offsets. It is idempotent;
// every call returns the same result.
func (b *Broker) Close() error {
	b.closeOnce.Do(b.cancel)
	return b.Wait()
}

// Wait blocks until the broker has stopped (Close, or the Start context
// done) and everything is flushed, and returns what went wrong, if
// anything.
func (b *Broker) Wait() error {
	<-b.stopped
	return b.stopErr
}

// Coordinator returns the broker's coordinator, for tests and tools that
// look behind the wire.
func (b *Broker) Coordinator() *coordinator.Coordinator { return b.coord }

// Log returns the broker's partition logs, for tests and tools that look
// behind the wire.
func (b *Broker) Log() *records.Log { return b.log }

// MemoryStats returns what the Kafka server's memory budget holds and has
// done (the minibroker_memory_* series of /metrics).
func (b *Broker) MemoryStats() server.MemoryStats { return b.srv.MemoryStats() }

// Catalog returns the broker's topic catalog.
func (b *Broker) Catalog() *catalog.Catalog { return b.catalog }

// Now reads the broker's clock.
func (b *Broker) Now() time.Time { return b.clock.Now() }

// Advance moves the manual clock forward by d and returns its reading.
// Nothing expires until Expire runs. On the system clock it returns
// ErrRealClock.
func (b *Broker) Advance(d time.Duration) (time.Time, error) {
	if b.manual == nil {
		return b.clock.Now(), ErrRealClock
	}
	return b.manual.Advance(d)
}

// Expire runs the expiry step now and returns the members it removed,
// sorted: the chapter's explicit expiry. With Config.OffsetsRetention it
// also expires offsets and deletes groups. The step logs what it removed.
func (b *Broker) Expire() []coordinator.Expired { return b.coord.Expire() }

// ExpireMember ends one member's session now: its group rebalances
// without it, and its next heartbeat or commit is fenced. An unknown
// group or member is an error wrapping coordinator.ErrUnknownMemberID.
func (b *Broker) ExpireMember(group, memberID string) error {
	return b.coord.ExpireMember(group, memberID)
}

// ForceRebalance starts a new generation of group with the same members,
// so every member is fenced at its next heartbeat or commit and re-joins.
// An unknown group is an error wrapping coordinator.ErrUnknownGroup; a
// group without members has nothing to rebalance (nil).
func (b *Broker) ForceRebalance(group string) error {
	return b.coord.ForceRebalance(group)
}

// Committed returns group's committed offsets as OffsetFetch answers
// them, sorted by topic and partition: only what is durable (acknowledged
// commits). A group that committed nothing has none.
func (b *Broker) Committed(group string) []offsets.Entry {
	return b.coord.Committed(group)
}
