package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/protocol"
)

// TopicSaver persists the topic catalog after CreateTopics changes it.
type TopicSaver interface {
	SaveTopics(topics map[string]int32) error
}

// Config configures a Server. Zero fields mean the default.
type Config struct {
	// Coordinator holds the groups and the topic catalog. Required.
	Coordinator *coordinator.Coordinator
	// Logger receives connection and request events. Default: discard.
	Logger *slog.Logger
	// Advertise is the host:port that Metadata and FindCoordinator return.
	// Default: the listener's address.
	Advertise string
	// MaxFrameBytes caps a request frame (Kafka's socket.request.max.bytes,
	// 100 MiB there). Default protocol.DefaultMaxFrameBytes (16 MiB).
	MaxFrameBytes int32
	// ExpiryInterval is how often Serve runs the coordinator's expiry step.
	// Zero runs it never: with a manual clock, expiry is explicit.
	ExpiryInterval time.Duration
	// Topics persists the catalog after CreateTopics. Default: not persisted.
	Topics TopicSaver
	// MaxFetchWait caps how long a Fetch waits before its empty answer.
	// Default 5 s; a Fetch never waits longer than its own MaxWaitMillis.
	MaxFetchWait time.Duration
	// Observer is told about requests, commits, connections and fencing
	// rejections (observe.go). Default: nobody.
	Observer Observer
}

// NodeID is this broker's node id: the only node of its cluster.
const NodeID int32 = 0

// ClusterID is the cluster id Metadata reports.
const ClusterID = "minibroker"

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	if cfg.Coordinator == nil {
		return errors.New("server: Config.Coordinator is required")
	}
	if cfg.MaxFrameBytes < 0 {
		return fmt.Errorf("server: MaxFrameBytes %d must not be negative", cfg.MaxFrameBytes)
	}
	if cfg.ExpiryInterval < 0 || cfg.MaxFetchWait < 0 {
		return errors.New("server: durations must not be negative")
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
	topics       TopicSaver
	maxFetchWait time.Duration
	observer     Observer
	handlers     map[kmsg.Key]handler

	mu       sync.Mutex
	conns    map[net.Conn]struct{} // guarded by mu
	shutdown bool                  // guarded by mu
	host     string                // guarded by mu; set by Serve
	port     int32                 // guarded by mu; set by Serve
	catalog  sync.Mutex            // serializes CreateTopics so saves land in order
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		coord:        cfg.Coordinator,
		logger:       cfg.Logger,
		advertise:    cfg.Advertise,
		maxFrame:     cfg.MaxFrameBytes,
		expiry:       cfg.ExpiryInterval,
		topics:       cfg.Topics,
		maxFetchWait: cfg.MaxFetchWait,
		observer:     cfg.Observer,
		conns:        make(map[net.Conn]struct{}),
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.maxFrame == 0 {
		s.maxFrame = protocol.DefaultMaxFrameBytes
	}
	if s.maxFetchWait == 0 {
		s.maxFetchWait = 5 * time.Second
	}
	if s.observer == nil {
		s.observer = nopObserver{}
	}
	s.handlers = handlers()
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
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()

	var wg sync.WaitGroup
	if s.expiry > 0 {
		wg.Go(func() { s.runExpiry(ctx) })
	}
	backoff := time.Duration(0)
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
		if !s.track(conn) {
			conn.Close()
			break
		}
		wg.Go(func() {
			s.observer.ConnOpened()
			defer s.observer.ConnClosed()
			defer s.untrack(conn)
			s.serveConn(ctx, conn)
		})
	}
	ln.Close()
	s.closeAll()
	wg.Wait()
	return nil
}

// setAddress records what Metadata and FindCoordinator advertise.
func (s *Server) setAddress(bound string) error {
	addr := s.advertise
	if addr == "" {
		addr = bound
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

// address returns the advertised host and port.
func (s *Server) address() (string, int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.host, s.port
}

func splitHostPort(addr string) (string, int32, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("bad port %q", portText)
	}
	if host == "" {
		return "", 0, errors.New("empty host")
	}
	return host, int32(port), nil
}

// track registers conn, or reports false once shutdown has begun.
func (s *Server) track(conn net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdown {
		return false
	}
	s.conns[conn] = struct{}{}
	return true
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
			for _, e := range s.coord.Expire() {
				s.logger.Info("member expired", "group", e.Group, "member", e.MemberID)
			}
		}
	}
}
