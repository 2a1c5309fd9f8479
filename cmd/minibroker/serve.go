package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/protocol"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/server"
)

// serveFlags are the flags of "minibroker serve" (docs/design.md section 5).
type serveFlags struct {
	listen         string
	advertise      string
	dataDir        string
	topics         topicFlags
	minSession     time.Duration
	maxSession     time.Duration
	expiryInterval time.Duration
	clock          string
	maxFrameBytes  int
	maxInFlight    int64
	logLevel       slog.Level
	admin          string
	adminToken     string

	// Limits (docs/reliability.md).
	maxConnections   int
	idleTimeout      time.Duration
	frameReadTimeout time.Duration
	maxGroupSize     int
	maxGroups        int
	maxMetadataBytes int
	maxMemberMeta    int
	maxGroupMeta     int
	maxIDBytes       int

	// Records (docs/design.md section 8).
	segmentBytes      int64
	retentionBytes    int64
	maxMessageBytes   int
	autoCreateTopics  bool
	acceptDataLoss    bool
	defaultPartitions int
	maxFetchBytes     int
	maxFetchWait      time.Duration

	// KIP-848 consumer groups: the broker decides both.
	consumerSession  time.Duration
	consumerInterval time.Duration

	// Offsets retention: 0 keeps offsets and groups for ever.
	offsetsRetention time.Duration
	txnMaxTimeout    time.Duration

	// TLS: the file names as given, and the configuration built from them
	// (nil: plaintext).
	tlsCert, tlsKey, tlsClientCA string
	tls                          *tls.Config

	// SASL users, from repeated --sasl-user NAME:PASSWORD (none: SASL off).
	saslUsers saslUserFlags

	// pprof profiles of the run (profile.go); not a broker setting.
	profileDir string
}

// saslUserFlags collects repeated --sasl-user NAME:PASSWORD flags. The
// name ends at the first ':'; the password may hold more of them.
type saslUserFlags map[string]string

func (u saslUserFlags) String() string { return "" }

func (u saslUserFlags) Set(v string) error {
	name, password, ok := strings.Cut(v, ":")
	switch {
	case !ok:
		return errors.New("want NAME:PASSWORD, got no ':'")
	case name == "":
		return errors.New("want NAME:PASSWORD, got an empty name")
	case password == "":
		return fmt.Errorf("want NAME:PASSWORD, got an empty password for %q", name)
	}
	if _, dup := u[name]; dup {
		return fmt.Errorf("user %q given twice", name)
	}
	u[name] = password
	return nil
}

// topicFlags collects repeated --topic NAME:PARTITIONS flags.
type topicFlags map[string]int32

func (t topicFlags) String() string { return "" }

func (t topicFlags) Set(v string) error {
	name, count, ok := strings.Cut(v, ":")
	if !ok {
		return fmt.Errorf("want NAME:PARTITIONS, got %q", v)
	}
	n, err := strconv.ParseInt(count, 10, 32)
	if err != nil || n < 1 || n > catalog.MaxPartitions {
		return fmt.Errorf("partitions of %q must be a whole number of at least 1 and at most %d, got %q", name, catalog.MaxPartitions, count)
	}
	if !catalog.ValidTopicName(name) {
		return fmt.Errorf("invalid topic name %q: use 1-249 characters from [a-zA-Z0-9._-]", name)
	}
	t[name] = int32(n)
	return nil
}

func parseServeFlags(args []string, stderr io.Writer) (*serveFlags, error) {
	f := &serveFlags{topics: topicFlags{}, saslUsers: saslUserFlags{}}
	fs := flag.NewFlagSet("minibroker serve", flag.ContinueOnError)
	// A mistake gets one line (serve prints it); only -h prints the list.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&f.listen, "listen", "127.0.0.1:9092", "`ADDR` to listen on")
	fs.StringVar(&f.advertise, "advertise", "", "`HOST:PORT` that Metadata and FindCoordinator return (default: the bound address)")
	fs.StringVar(&f.dataDir, "data-dir", "./minibroker-data", "`DIR` for offsets.json and topics.json")
	fs.Var(f.topics, "topic", "`NAME:PARTITIONS` to create if absent; repeatable")
	fs.DurationVar(&f.minSession, "min-session-timeout", coordinator.DefaultMinSessionTimeout, "smallest session timeout a member may ask for")
	fs.DurationVar(&f.maxSession, "max-session-timeout", coordinator.DefaultMaxSessionTimeout, "largest session timeout a member may ask for")
	fs.DurationVar(&f.consumerSession, "consumer-session-timeout", coordinator.DefaultConsumerSessionTimeout, "session of every KIP-848 consumer group member (Kafka's group.consumer.session.timeout.ms)")
	fs.DurationVar(&f.consumerInterval, "consumer-heartbeat-interval", coordinator.DefaultConsumerHeartbeatInterval, "heartbeat interval KIP-848 members are told to keep; below --consumer-session-timeout (Kafka's group.consumer.heartbeat.interval.ms)")
	fs.DurationVar(&f.txnMaxTimeout, "transaction-max-timeout", 15*time.Minute, "the longest transaction timeout a producer may ask for (Kafka's transaction.max.timeout.ms); longer gets INVALID_TRANSACTION_TIMEOUT")
	fs.DurationVar(&f.offsetsRetention, "offsets-retention", 0, "how long an Empty group's committed offsets are kept before the expiry step removes them and deletes the group (Kafka's offsets.retention.minutes); 0 keeps them for ever")
	fs.DurationVar(&f.expiryInterval, "expiry-interval", 100*time.Millisecond, "real clock: how often the expiry step runs")
	fs.StringVar(&f.clock, "clock", "real", "real|manual; with manual, time and expiry move only on request")
	fs.IntVar(&f.maxFrameBytes, "max-frame-bytes", protocol.DefaultMaxFrameBytes, "largest request frame accepted, in bytes")
	fs.Int64Var(&f.maxInFlight, "max-inflight-bytes", server.DefaultMaxInFlightBytes, "request frame bytes held at once over every connection, and as much again for what handlers build; past it a request waits, unread (Kafka's queued.max.request.bytes); at least --max-frame-bytes")
	fs.IntVar(&f.maxMemberMeta, "max-member-metadata-bytes", coordinator.DefaultMaxMemberMetadataBytes, "one member's protocol metadata and subscribed topic names, in bytes; more gets INVALID_REQUEST")
	fs.IntVar(&f.maxGroupMeta, "max-group-metadata-bytes", coordinator.DefaultMaxGroupMetadataBytes, "a group's members' protocol metadata and subscriptions together, in bytes; a join past it gets GROUP_MAX_SIZE_REACHED")
	fs.TextVar(&f.logLevel, "log-level", slog.LevelInfo, "debug|info|warn|error")
	fs.StringVar(&f.admin, "admin", "", "`ADDR` to serve the admin HTTP API, /metrics and the live page on (default: off)")
	fs.StringVar(&f.profileDir, "profile-dir", "", "`DIR` to write pprof profiles of the run to when it stops: cpu, allocs, mutex, heap (default: off)")
	fs.StringVar(&f.adminToken, "admin-token", "", "`TOKEN` every admin API request must carry as \"Authorization: Bearer TOKEN\"; required when --admin is not a loopback address (default: none)")
	fs.IntVar(&f.maxConnections, "max-connections", server.DefaultMaxConnections, "connections served at once; more are closed at once and logged")
	fs.DurationVar(&f.idleTimeout, "idle-timeout", server.DefaultIdleTimeout, "close a connection that starts no request for this long (Kafka's connections.max.idle.ms)")
	fs.DurationVar(&f.frameReadTimeout, "frame-read-timeout", server.DefaultFrameReadTimeout, "close a connection whose request frame, TLS handshake or answer write takes longer")
	fs.IntVar(&f.maxGroupSize, "max-group-size", coordinator.DefaultMaxGroupSize, "members (and pending member ids) per group; more get GROUP_MAX_SIZE_REACHED (Kafka's group.max.size)")
	fs.IntVar(&f.maxGroups, "max-groups", coordinator.DefaultMaxGroups, "groups in all; a join or commit that would make another gets POLICY_VIOLATION")
	fs.IntVar(&f.maxMetadataBytes, "max-metadata-bytes", offsets.MaxMetadataBytes, "largest commit metadata, 1 to 4096 bytes; more gets OFFSET_METADATA_TOO_LARGE (Kafka's offset.metadata.max.bytes)")
	fs.IntVar(&f.maxIDBytes, "max-id-bytes", coordinator.DefaultMaxIDBytes, "longest group id and client id, in bytes (member ids: 32 more); longer get INVALID_GROUP_ID or INVALID_REQUEST")
	fs.Int64Var(&f.segmentBytes, "segment-bytes", records.DefaultSegmentBytes, "size at which a partition's active segment file rolls, in bytes (Kafka's log.segment.bytes)")
	fs.Int64Var(&f.retentionBytes, "retention-bytes", 0, "bytes each partition keeps; older whole segments are deleted; 0: unlimited (Kafka's log.retention.bytes)")
	fs.IntVar(&f.maxMessageBytes, "max-message-bytes", records.DefaultMaxMessageBytes, "largest record batch a producer may send, in bytes; more gets MESSAGE_TOO_LARGE (Kafka's message.max.bytes)")
	fs.BoolVar(&f.acceptDataLoss, "accept-data-loss", false, "start even though acknowledged records are missing from the data dir (start-up refuses by default and names what is missing); each loss is logged at Error")
	fs.BoolVar(&f.autoCreateTopics, "auto-create-topics", true, "create a topic a Metadata request names and allows to be created (Kafka's auto.create.topics.enable)")
	fs.IntVar(&f.defaultPartitions, "default-partitions", 1, "partitions of an auto-created topic (Kafka's num.partitions)")
	fs.IntVar(&f.maxFetchBytes, "max-fetch-bytes", server.DefaultMaxFetchBytes, "largest Fetch answer, whatever it asks for, in bytes (Kafka's fetch.max.bytes)")
	fs.DurationVar(&f.maxFetchWait, "max-fetch-wait", server.DefaultMaxFetchWait, "longest a Fetch waits for records, whatever it asks for")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "`FILE` with the PEM server certificate chain; with --tls-key, serve TLS only (default: plaintext)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "`FILE` with the PEM private key of --tls-cert")
	fs.StringVar(&f.tlsClientCA, "tls-client-ca", "", "`FILE` with PEM CA certificates; clients must present a certificate they signed (needs --tls-cert)")
	fs.Var(f.saslUsers, "sasl-user", "`NAME:PASSWORD` of a user clients authenticate as with SASL PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (repeatable); with any, every connection must authenticate (Kafka's SASL_PLAINTEXT, or SASL_SSL with --tls-cert; default: SASL off)")
	explainDurations(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "usage: minibroker serve [flags]")
			fs.SetOutput(stderr)
			fs.PrintDefaults()
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case f.clock != "real" && f.clock != "manual":
		return nil, fmt.Errorf("--clock must be real or manual, got %q", f.clock)
	case f.minSession <= 0 || f.maxSession < f.minSession:
		return nil, fmt.Errorf("--min-session-timeout (%v) must be positive and at most --max-session-timeout (%v)", f.minSession, f.maxSession)
	case f.consumerInterval <= 0 || f.consumerSession <= f.consumerInterval:
		return nil, fmt.Errorf("--consumer-heartbeat-interval (%v) must be positive and below --consumer-session-timeout (%v)", f.consumerInterval, f.consumerSession)
	case f.txnMaxTimeout <= 0:
		return nil, fmt.Errorf("--transaction-max-timeout must be positive, got %v", f.txnMaxTimeout)
	case f.offsetsRetention < 0:
		return nil, fmt.Errorf("--offsets-retention must not be negative, got %v", f.offsetsRetention)
	case f.expiryInterval <= 0:
		return nil, fmt.Errorf("--expiry-interval must be positive, got %v", f.expiryInterval)
	case f.maxFrameBytes < 1024 || f.maxFrameBytes > 1<<30:
		return nil, fmt.Errorf("--max-frame-bytes must be between 1024 and %d, got %d", 1<<30, f.maxFrameBytes)
	case f.dataDir == "":
		return nil, errors.New("--data-dir must not be empty")
	case f.maxInFlight < int64(f.maxFrameBytes):
		return nil, fmt.Errorf("--max-inflight-bytes (%d) must be at least --max-frame-bytes (%d)", f.maxInFlight, f.maxFrameBytes)
	case f.maxMemberMeta < 1 || f.maxGroupMeta < f.maxMemberMeta:
		return nil, fmt.Errorf("--max-member-metadata-bytes (%d) must be positive and at most --max-group-metadata-bytes (%d)", f.maxMemberMeta, f.maxGroupMeta)
	case f.maxConnections < 1:
		return nil, fmt.Errorf("--max-connections must be at least 1, got %d", f.maxConnections)
	case f.idleTimeout <= 0:
		return nil, fmt.Errorf("--idle-timeout must be positive, got %v", f.idleTimeout)
	case f.frameReadTimeout <= 0:
		return nil, fmt.Errorf("--frame-read-timeout must be positive, got %v", f.frameReadTimeout)
	case f.maxGroupSize < 1:
		return nil, fmt.Errorf("--max-group-size must be at least 1, got %d", f.maxGroupSize)
	case f.maxGroups < 1:
		return nil, fmt.Errorf("--max-groups must be at least 1, got %d", f.maxGroups)
	case f.maxMetadataBytes < 1 || f.maxMetadataBytes > offsets.MaxMetadataBytes:
		return nil, fmt.Errorf("--max-metadata-bytes must be between 1 and %d, got %d", offsets.MaxMetadataBytes, f.maxMetadataBytes)
	case f.maxIDBytes < 1 || f.maxIDBytes > coordinator.MaxIDBytesLimit:
		return nil, fmt.Errorf("--max-id-bytes must be between 1 and %d, got %d", coordinator.MaxIDBytesLimit, f.maxIDBytes)
	case f.segmentBytes < records.MinSegmentBytes || f.segmentBytes > math.MaxInt32:
		return nil, fmt.Errorf("--segment-bytes must be between %d and %d, got %d", records.MinSegmentBytes, math.MaxInt32, f.segmentBytes)
	case f.retentionBytes < 0:
		return nil, fmt.Errorf("--retention-bytes must not be negative (0: unlimited), got %d", f.retentionBytes)
	case f.maxMessageBytes < records.MinMaxMessageBytes || f.maxMessageBytes > math.MaxInt32:
		return nil, fmt.Errorf("--max-message-bytes must be between %d and %d, got %d", records.MinMaxMessageBytes, math.MaxInt32, f.maxMessageBytes)
	case f.defaultPartitions < 1 || f.defaultPartitions > catalog.MaxPartitions:
		return nil, fmt.Errorf("--default-partitions must be between 1 and %d, got %d", catalog.MaxPartitions, f.defaultPartitions)
	case f.maxFetchBytes < 1 || f.maxFetchBytes > math.MaxInt32:
		return nil, fmt.Errorf("--max-fetch-bytes must be between 1 and %d, got %d", math.MaxInt32, f.maxFetchBytes)
	case f.maxFetchWait <= 0:
		return nil, fmt.Errorf("--max-fetch-wait must be positive, got %v", f.maxFetchWait)
	}
	tlsCfg, err := loadTLS(f.tlsCert, f.tlsKey, f.tlsClientCA)
	if err != nil {
		return nil, err
	}
	f.tls = tlsCfg
	if f.advertise != "" {
		if _, port, err := net.SplitHostPort(f.advertise); err != nil || port == "" {
			return nil, fmt.Errorf("--advertise must be HOST:PORT, got %q", f.advertise)
		}
	}
	if f.admin != "" {
		if _, port, err := net.SplitHostPort(f.admin); err != nil || port == "" {
			return nil, fmt.Errorf("--admin must be HOST:PORT, got %q", f.admin)
		}
	}
	return f, nil
}

// loadTLS builds the listener's TLS configuration from the --tls-* files:
// nil when none is given. A certificate needs its key and the other way
// round; a client CA needs both, and then every client must present a
// certificate that CA signed (Kafka's ssl.client.auth=required).
func loadTLS(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	switch {
	case certFile == "" && keyFile == "" && clientCAFile == "":
		return nil, nil
	case certFile == "" || keyFile == "":
		return nil, errors.New("--tls-cert and --tls-key must be given together")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s / --tls-key %s: %w", certFile, keyFile, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCAFile != "" {
		pem, err := os.ReadFile(clientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-client-ca %s holds no PEM certificate", clientCAFile)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

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
	// What the flags say is checked before anything is created on disk: a
	// bad value is a usage error.
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "minibroker serve: %v (minibroker serve -h lists the flags)\n", err)
		return 2
	}
	prof, err := startProfile(f.profileDir)
	if err != nil {
		fmt.Fprintf(stderr, "minibroker serve: %v\n", err)
		return 1
	}
	err = errors.Join(runServe(ctx, cfg), prof.stop())
	if err != nil {
		fmt.Fprintf(stderr, "minibroker serve: %v\n", err)
		return 1
	}
	return 0
}

// config is the broker configuration the flags describe.
func (f *serveFlags) config(logger *slog.Logger) broker.Config {
	return broker.Config{
		Listen: f.listen, Advertise: f.advertise, TLS: f.tls, SASLUsers: f.saslUsers,
		DataDir: f.dataDir, Topics: f.topics,
		ManualClock: f.clock == "manual", ExpiryInterval: f.expiryInterval,
		MinSessionTimeout: f.minSession, MaxSessionTimeout: f.maxSession,
		ConsumerSessionTimeout: f.consumerSession, ConsumerHeartbeatInterval: f.consumerInterval,
		OffsetsRetention: f.offsetsRetention, TransactionMaxTimeout: f.txnMaxTimeout,
		MaxGroupSize: f.maxGroupSize, MaxGroups: f.maxGroups, MaxMetadataBytes: f.maxMetadataBytes, MaxIDBytes: f.maxIDBytes,
		MaxFrameBytes: int32(f.maxFrameBytes), MaxInFlightBytes: f.maxInFlight, MaxConnections: f.maxConnections,
		MaxMemberMetadataBytes: f.maxMemberMeta, MaxGroupMetadataBytes: f.maxGroupMeta,
		IdleTimeout: f.idleTimeout, FrameReadTimeout: f.frameReadTimeout,
		SegmentBytes: f.segmentBytes, RetentionBytes: f.retentionBytes, MaxMessageBytes: int32(f.maxMessageBytes),
		AcceptDataLoss:     f.acceptDataLoss,
		NoAutoCreateTopics: !f.autoCreateTopics, DefaultPartitions: int32(f.defaultPartitions),
		MaxFetchBytes: int32(f.maxFetchBytes), MaxFetchWait: f.maxFetchWait,
		Admin: f.admin, AdminToken: f.adminToken, Logger: logger,
	}
}

// runServe starts a broker from cfg, serves until ctx is done, then stops
// it, which flushes every acknowledged commit to disk.
func runServe(ctx context.Context, cfg broker.Config) error {
	b, err := broker.Start(ctx, cfg)
	if err != nil {
		return err
	}
	return b.Wait()
}
