package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/internal/hostport"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/topics"
	"github.com/minibroker/minibroker/txn"
)

// Config configures a Server. Zero fields mean the default.
type Config struct {
	// Coordinator holds the groups. Required.
	Coordinator *coordinator.Coordinator
	// Catalog holds the topics: Metadata lists them, CreateTopics adds to
	// them. Required.
	Catalog *catalog.Catalog
	// Log holds the partitions' records: Produce appends to it, Fetch and
	// ListOffsets read it, InitProducerId hands out its producer ids.
	// Required.
	Log *records.Log
	// Topics deletes topics and adds partitions for DeleteTopics and
	// CreatePartitions. Default: one over Catalog, Log and Coordinator.
	Topics *topics.Admin
	// Settings are the user settings (settings.go).
	Settings
	// AutoCreateTopics creates, with DefaultPartitions partitions, a topic
	// a Metadata request names and allows to be created (Kafka's
	// auto.create.topics.enable, on by default there; off when zero here:
	// the broker package sets it).
	AutoCreateTopics bool
	// Logger receives connection and request events. Default: discard.
	Logger *slog.Logger
	// Advertise is the host:port that Metadata and FindCoordinator return.
	// Default: the listener's address, or 127.0.0.1 and its port for a
	// listener bound to every interface.
	Advertise string
	// AdminAddr is the address of the admin HTTP API and live page, which
	// a client that speaks HTTP to this port is told of (http.go).
	// Default: none (the admin API is off).
	AdminAddr string
	// ExpiryInterval is how often Serve runs the coordinator's expiry step.
	// Zero runs it never: with a manual clock, expiry is explicit.
	ExpiryInterval time.Duration
	// Observer is told about requests, commits, connections and fencing
	// rejections (observe.go). Default: nobody.
	Observer Observer
	// Transactions is the transaction coordinator. Default: one in memory
	// on the system clock, its timeouts run by the coordinator's expiry
	// step.
	Transactions *txn.Coordinator

	// TLS, when set, makes every connection a TLS server connection
	// (Kafka's SSL listener): the handshake must complete within
	// FrameReadTimeout, and a peer that fails it (a plaintext client, or
	// one without an acceptable certificate when TLS.ClientAuth requires
	// one) is closed and logged at Warn. It must hold a certificate.
	// Default: plaintext.
	TLS *tls.Config
	// Faults is the registry of faults the server applies (fault.go).
	// Default: an empty registry of its own, which Server.Faults returns.
	Faults *Faults
	// SASLUsers, when not empty, turns SASL on (Kafka's SASL_PLAINTEXT
	// listener, or SASL_SSL with TLS): user name to password, served
	// with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (sasl.go). A connection
	// must authenticate within FrameReadTimeout, and before it has, it
	// may send only ApiVersions and SASL requests of at most 512 KiB.
	// Default: SASL off.
	SASLUsers map[string]string
}

// Defaults for Config's zero fields.
const (
	// DefaultMaxFetchBytes is Kafka's fetch.max.bytes (55 MiB). The
	// memory budget bounds how many such answers are built at once.
	DefaultMaxFetchBytes = 55 << 20
	// DefaultMaxFetchWait caps a Fetch's MaxWaitMillis.
	DefaultMaxFetchWait     = 5 * time.Second
	DefaultMaxConnections   = 10_000
	DefaultIdleTimeout      = 10 * time.Minute
	DefaultFrameReadTimeout = 30 * time.Second
)

// Faults returns the registry of faults the server applies.
func (s *Server) Faults() *Faults { return s.faults }

// NodeID is this broker's node id: the only node of its cluster.
const NodeID int32 = 0

// ClusterID is the cluster id Metadata reports.
const ClusterID = "minibroker"

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	if cfg.Coordinator == nil {
		return errors.New("server: Config.Coordinator is required")
	}
	if cfg.Catalog == nil {
		return errors.New("server: Config.Catalog is required")
	}
	if cfg.Log == nil {
		return errors.New("server: Config.Log is required")
	}
	if err := cfg.Settings.Validate(); err != nil {
		return err
	}
	if cfg.ExpiryInterval < 0 {
		return errors.New("server: durations must not be negative")
	}
	if cfg.TLS != nil && len(cfg.TLS.Certificates) == 0 && cfg.TLS.GetCertificate == nil && cfg.TLS.GetConfigForClient == nil {
		return errors.New("server: Config.TLS holds no certificate")
	}
	if err := ValidateSASLUsers(cfg.SASLUsers); err != nil {
		return err
	}
	if cfg.Advertise != "" {
		if _, _, err := splitHostPort(cfg.Advertise); err != nil {
			return fmt.Errorf("server: advertise %q: %w", cfg.Advertise, err)
		}
	}
	return nil
}

// Server serves the Kafka protocol for one coordinator.
type Server struct {
	coord        *coordinator.Coordinator
	logger       *slog.Logger
	advertise    string
	maxFrame     int32
	expiry       time.Duration
	catalog      *catalog.Catalog
	topics       *topics.Admin
	log          *records.Log
	autoCreate   bool
	defaultParts int32
	maxFetch     int32
	unknown      unknownTopics
	maxFetchWait time.Duration
	observer     Observer
	timed        bool // an observer was configured: requests are timed for it
	handlers     apiTable
	maxConns     int
	idleTimeout  time.Duration
	frameTimeout time.Duration
	tls          *tls.Config
	mem          *memory
	faults       *Faults
	pidErrors    everyInterval // rate-limits InitProducerId failures in the log
	oversizeLog  everyInterval // rate-limits frames over MaxFrameBytes in the log
	httpLog      everyInterval // rate-limits HTTP requests on this port in the log
	adminAddr    string        // Config.AdminAddr
	sasl         *saslUsers    // nil: SASL off
	txns         *txn.Coordinator
	authDelay    time.Duration // FailedAuthenticationDelay; <= 0: off
	// authWait waits out authDelay, or until ctx is done: waitFor but in
	// tests, which see when a delay begins and say when it ends.
	authWait func(ctx context.Context, d time.Duration)

	mu       sync.Mutex
	conns    map[net.Conn]struct{} // guarded by mu
	shutdown bool                  // guarded by mu
	host     string                // guarded by mu; set by Serve
	port     int32                 // guarded by mu; set by Serve
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	set := cfg.Settings.WithDefaults()
	s := &Server{
		coord:        cfg.Coordinator,
		logger:       cfg.Logger,
		advertise:    cfg.Advertise,
		adminAddr:    cfg.AdminAddr,
		maxFrame:     set.MaxFrameBytes,
		expiry:       cfg.ExpiryInterval,
		catalog:      cfg.Catalog,
		log:          cfg.Log,
		topics:       cfg.Topics,
		autoCreate:   cfg.AutoCreateTopics,
		defaultParts: set.DefaultPartitions,
		maxFetch:     set.MaxFetchBytes,
		maxFetchWait: set.MaxFetchWait,
		observer:     cfg.Observer,
		maxConns:     set.MaxConnections,
		idleTimeout:  set.IdleTimeout,
		frameTimeout: set.FrameReadTimeout,
		authDelay:    set.FailedAuthenticationDelay,
		authWait:     waitFor,
		mem:          newMemory(set.MaxInFlightBytes),
		conns:        make(map[net.Conn]struct{}),
	}
	if cfg.TLS != nil {
		s.tls = cfg.TLS.Clone()
	}
	var err error
	if s.sasl, err = newSASLUsers(cfg.SASLUsers); err != nil {
		return nil, err
	}
	if s.topics == nil {
		s.topics = &topics.Admin{Catalog: cfg.Catalog, Log: cfg.Log, Coordinator: cfg.Coordinator, Logger: cfg.Logger}
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	s.timed = s.observer != nil
	if s.observer == nil {
		s.observer = nopObserver{}
	}
	s.txns = cfg.Transactions
	if s.txns == nil {
		t, err := txn.New(txn.Config{Clock: clock.System{}, Partitions: cfg.Log, Offsets: cfg.Coordinator, Logger: s.logger})
		if err != nil {
			return nil, err
		}
		cfg.Coordinator.OnExpire(func() { t.Expire() })
		s.txns = t
	}
	s.handlers = newAPITable(handlers())
	s.faults = cfg.Faults
	if s.faults == nil {
		s.faults = NewFaults(s.logger, CoordinatorTargets(s.coord, s.catalog))
	}
	return s, nil
}

// Serve accepts connections on ln until ctx is done, then closes ln and
// every connection, waits for everything it started, and returns nil. An
// accept error while running is logged and retried with a backoff from
// 5 ms to 1 s. Serve takes ownership of ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if err := s.setAddress(ln.Addr().String()); err != nil {
		ln.Close()
		return err
	}
	closed := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		close(closed)
	})

	var wg sync.WaitGroup
	if s.expiry > 0 {
		wg.Go(func() { s.runExpiry(ctx) })
	}
	var refused refusals
	backoff := time.Duration(0)
accept:
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.logger.Warn("accept failed", "err", err, "backoff", backoff)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		switch s.track(conn) {
		case shuttingDown:
			conn.Close()
			break accept
		case full:
			conn.Close()
			refused.log(s.logger, conn, s.maxConns)
			continue
		}
		wg.Go(func() {
			remote := conn.RemoteAddr().String()
			s.observer.ConnOpened(remote)
			defer s.untrack(conn)
			defer s.observer.ConnClosed(remote) // before untrack closes the socket
			s.serveConn(ctx, conn, remote)
		})
	}
	// The listener is closed, and closed completely, before Serve returns:
	// if the AfterFunc is running, wait for its Close to finish.
	if stop() {
		ln.Close()
	} else {
		<-closed
	}
	s.closeAll()
	wg.Wait()
	return nil
}

// refusals rate-limits the log of connections refused by MaxConnections:
// the first refusal is logged at once, later ones at most once a second
// with the number refused since the last line. Owned by Serve's goroutine.
type refusals struct {
	last  time.Time
	count int
}

func (r *refusals) log(logger *slog.Logger, conn net.Conn, limit int) {
	r.count++
	if now := time.Now(); now.Sub(r.last) >= time.Second {
		logger.Warn("too many connections, refusing", "remote", conn.RemoteAddr().String(), "limit", limit, "refused", r.count)
		r.last, r.count = now, 0
	}
}

// setAddress records what Metadata and FindCoordinator advertise: the
// advertised address, or else the bound one, where a listener bound to
// every interface is advertised at the loopback address (Kafka refuses
// to advertise 0.0.0.0; clients on other hosts need Config.Advertise).
func (s *Server) setAddress(bound string) error {
	addr := s.advertise
	if addr == "" {
		addr, _ = hostport.Reachable(bound)
	}
	host, port, err := splitHostPort(addr)
	if err != nil {
		return fmt.Errorf("server: advertise %q: %w", addr, err)
	}
	s.mu.Lock()
	s.host, s.port = host, port
	s.mu.Unlock()
	return nil
}

// Advertised returns the host:port Metadata and FindCoordinator
// advertise ("" until Serve has bound its listener).
func (s *Server) Advertised() string {
	host, port := s.address()
	if host == "" {
		return ""
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// address returns the advertised host and port.
func (s *Server) address() (string, int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.host, s.port
}

func splitHostPort(addr string) (string, int32, error) {
	host, port, err := hostport.Split(addr)
	if err != nil {
		return "", 0, err
	}
	if host == "" {
		return "", 0, errors.New("empty host")
	}
	return host, int32(port), nil
}

// trackResult is what track decided about a new connection.
type trackResult int8

const (
	tracked      trackResult = iota // serve it
	full                            // MaxConnections are being served: refuse it
	shuttingDown                    // shutdown has begun: close it and stop
)

// track registers conn unless MaxConnections are already served or
// shutdown has begun.
func (s *Server) track(conn net.Conn) trackResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.shutdown:
		return shuttingDown
	case len(s.conns) >= s.maxConns:
		return full
	}
	s.conns[conn] = struct{}{}
	return tracked
}

func (s *Server) untrack(conn net.Conn) {
	s.mu.Lock()
	delete(s.conns, conn)
	s.mu.Unlock()
	conn.Close()
}

// closeAll starts shutdown and closes every connection, which unblocks
// their reads; each goroutine then exits.
func (s *Server) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shutdown = true
	for conn := range s.conns {
		conn.Close()
	}
}

// runExpiry runs the coordinator's expiry step every s.expiry until ctx
// is done (real clock only).
func (s *Server) runExpiry(ctx context.Context) {
	t := time.NewTicker(s.expiry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.coord.Expire() // the step logs whom it removed
		}
	}
}
