package admin

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/server"
	"github.com/minibroker/minibroker/topics"
)

// Config configures a Server. Zero fields mean the default.
type Config struct {
	// Coordinator is what the API reads and drives. Required.
	Coordinator *coordinator.Coordinator
	// Catalog is the topic catalog, for the ownership grid. Required.
	Catalog *catalog.Catalog
	// Recorder holds the events and metrics the API shows: the one the
	// coordinator and the server report to. Required.
	Recorder *Recorder
	// Clock is the coordinator's clock: "now", deadlines and event times
	// are read from it, and POST /v1/clock/advance works only when it is a
	// *clock.Manual (409 otherwise). Default clock.System{}.
	Clock coordinator.Clock
	// Logger receives the API's actions (clock advanced, members
	// expired) and the requests its guard refuses. Default: discard.
	Logger *slog.Logger
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every API request (guard.go). It must be set when the API listens
	// on an address other than a loopback one. Default: none.
	Token string
	// MaxConnections caps the connections served at once; when all are
	// taken, a new one takes the slot of the one that has waited longest
	// for a request (at least 100 ms), and only when none has do more wait
	// in the listen backlog (limit.go). Default DefaultMaxConnections.
	MaxConnections int
	// OffsetStats reads the offsets store's counters for GET
	// /v1/storage. Default: none shown.
	OffsetStats func() offsets.Stats
	// Log is the partition logs, for the log offsets, lags and sizes of
	// GET /v1/groups and GET /v1/topics and the metrics of the log end
	// and the lag. Default: none; those offsets are null and those
	// metrics absent.
	Log Log
	// Transactions is the transaction coordinator GET /v1/transactions
	// lists. Default: none; the list is empty.
	Transactions Transactions
	// MaxPartitionSeries caps the partitions reported in
	// minibroker_partition_log_end_offset: the first ones in topic and
	// partition order. Default DefaultMaxPartitionSeries.
	MaxPartitionSeries int
	// Faults is the server's fault registry, for /v1/faults and the
	// faults' metrics. Default: none; POST /v1/faults answers 404.
	Faults *server.Faults
	// Topics deletes topics for DELETE /v1/topics/{name}. Default: none;
	// that route answers 404.
	Topics *topics.Admin
	// Advertised returns the Kafka host:port the broker advertises
	// (server.Server.Advertised), for GET /v1/cluster. Default: none;
	// GET /v1/cluster lists no broker.
	Advertised func() string
}

// DefaultMaxConnections is Config.MaxConnections's default: a handful of
// browser tabs and scrapers, not a public service.
const DefaultMaxConnections = 64

// DefaultMaxPartitionSeries is Config.MaxPartitionSeries's default: a
// broker may hold 100,000 partitions, and /metrics need not list them
// all.
const DefaultMaxPartitionSeries = 1000

// HTTP limits of Serve, as a Go server facing untrusted peers sets them.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = time.Minute
	maxHeaderBytes    = 16 << 10
)

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	if cfg.Coordinator == nil {
		return errors.New("admin: Config.Coordinator is required")
	}
	if cfg.Catalog == nil {
		return errors.New("admin: Config.Catalog is required")
	}
	if cfg.Recorder == nil {
		return errors.New("admin: Config.Recorder is required")
	}
	if cfg.MaxConnections < 0 {
		return fmt.Errorf("admin: MaxConnections %d must not be negative", cfg.MaxConnections)
	}
	if cfg.MaxPartitionSeries < 0 {
		return fmt.Errorf("admin: MaxPartitionSeries %d must not be negative", cfg.MaxPartitionSeries)
	}
	return nil
}

// shutdownGrace bounds how long Serve waits for requests in flight once
// its context is done.
const shutdownGrace = 5 * time.Second

// Server is the admin HTTP API. It is safe for concurrent use.
type Server struct {
	coord       *coordinator.Coordinator
	catalog     *catalog.Catalog
	recorder    *Recorder
	clock       coordinator.Clock
	manual      *clock.Manual // nil unless the clock is manual
	logger      *slog.Logger
	token       string
	maxConns    int
	offsetStats func() offsets.Stats
	log         Log // nil: no log offsets
	faults      *server.Faults
	txns        Transactions // nil: no transactions listed
	topics      *topics.Admin
	advertised  func() string // nil: no broker listed
	handler     http.Handler  // the mux behind the guard

	mu    sync.Mutex
	bound string // guarded by mu; the host Serve's listener is bound to
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		coord:    cfg.Coordinator,
		catalog:  cfg.Catalog,
		recorder: cfg.Recorder,
		clock:    cfg.Clock,
		logger:   cfg.Logger,
		token:    cfg.Token,
		maxConns: cfg.MaxConnections,

		offsetStats: cfg.OffsetStats,
		log:         cfg.Log,
		faults:      cfg.Faults,
		txns:        cfg.Transactions,
		topics:      cfg.Topics,
		advertised:  cfg.Advertised,
	}
	if s.maxConns == 0 {
		s.maxConns = DefaultMaxConnections
	}
	if s.clock == nil {
		s.clock = clock.System{}
	}
	s.manual, _ = s.clock.(*clock.Manual)
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.handlePage)
	mux.HandleFunc("GET /v1/groups", s.handleGroups)
	mux.HandleFunc("GET /v1/groups/{group}", s.handleGroup)
	mux.HandleFunc("GET /v1/events", s.handleEvents)
	mux.HandleFunc("GET /v1/storage", s.handleStorage)
	mux.HandleFunc("GET /v1/topics", s.handleTopics)
	mux.HandleFunc("GET /v1/connections", s.handleConnections)
	mux.HandleFunc("GET /v1/transactions", s.handleTransactions)
	mux.HandleFunc("GET /v1/cluster", s.handleCluster)
	mux.HandleFunc("POST /v1/clock/advance", s.handleAdvance)
	mux.HandleFunc("POST /v1/expire", s.handleExpire)
	mux.HandleFunc("POST /v1/groups/{group}/members/{member}/expire", s.handleExpireMember)
	mux.HandleFunc("POST /v1/groups/{group}/rebalance", s.handleRebalance)
	mux.HandleFunc("DELETE /v1/groups/{group}", s.handleDeleteGroup)
	mux.HandleFunc("DELETE /v1/topics/{topic}", s.handleDeleteTopic)
	mux.HandleFunc("POST /v1/faults", s.handleInjectFault)
	mux.HandleFunc("GET /v1/faults", s.handleFaults)
	mux.HandleFunc("DELETE /v1/faults/{id}", s.handleRemoveFault)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.recorder.metrics.registry, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(s.logger.Handler(), slog.LevelError),
	}))
	s.handler = &guard{next: mux, token: s.token, hosts: s.boundHosts, logger: s.logger}
	if s.log != nil {
		c := &stateCollector{s: s, maxPartitions: cmp.Or(cfg.MaxPartitionSeries, DefaultMaxPartitionSeries)}
		if err := s.recorder.metrics.registry.Register(c); err != nil {
			return nil, fmt.Errorf("admin: the log's metrics: %w", err)
		}
	}
	if s.faults != nil {
		if err := s.recorder.metrics.registry.Register(faultCollector{s.faults}); err != nil {
			return nil, fmt.Errorf("admin: the faults' metrics: %w", err)
		}
	}
	return s, nil
}

// Handler returns the API's handler, guard included, for http.Server or
// httptest.
func (s *Server) Handler() http.Handler { return s.handler }

// boundHosts returns the host the API is bound to, when it names one
// address (not the unspecified one): requests may name it as their Host.
func (s *Server) boundHosts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bound == "" {
		return nil
	}
	return []string{s.bound}
}

// Serve serves the API on ln until ctx is done, then shuts down, waiting
// up to 5 s for requests in flight, and returns nil. It returns early with
// the error if serving fails. Serve takes ownership of ln.
//
// A listener on an address other than a loopback one needs Config.Token.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		if !tcp.IP.IsLoopback() && s.token == "" {
			ln.Close()
			return fmt.Errorf("admin: %s is not a loopback address; serving the admin API there needs a token", ln.Addr())
		}
		if !tcp.IP.IsUnspecified() {
			s.mu.Lock()
			s.bound = tcp.IP.String()
			s.mu.Unlock()
		}
	}
	lim := newLimitListener(ln, s.maxConns)
	hs := &http.Server{
		Handler:           lim.track(s.handler),
		ConnContext:       connContext,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
	ln = lim
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(done)
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			hs.Close()
		}
	})
	err := hs.Serve(ln)
	if stop() {
		return err // ctx is not done: serving failed on its own
	}
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// now reads the coordinator's clock.
func (s *Server) now() time.Time { return s.clock.Now() }

// clockKind names the clock for the page: "manual" or "real".
func (s *Server) clockKind() string {
	if s.manual != nil {
		return "manual"
	}
	return "real"
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":"encoding the answer failed"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// errorJSON is every error answer's body.
type errorJSON struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorJSON{Error: msg})
}

// stamp renders t both ways the API gives instants.
func stamp(t time.Time) (string, int64) {
	return t.UTC().Format(time.RFC3339Nano), t.UnixMilli()
}
