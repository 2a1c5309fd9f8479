package broker

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/minibroker/minibroker/admin"
	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/internal/atomicfile"
	"github.com/minibroker/minibroker/server"
)

// Config configures a broker. Zero fields mean the default; every field
// has a `minibroker serve` flag of the same name (docs/design.md).
type Config struct {
	// Listen is the Kafka listener's address. Default DefaultListen,
	// 127.0.0.1 on a free port (the command's default is 127.0.0.1:9092).
	Listen string
	// Advertise is the host:port that Metadata and FindCoordinator
	// return. Default: the bound address.
	Advertise string
	// TLS, when set, serves TLS only (Kafka's SSL listener). Default:
	// plaintext.
	TLS *tls.Config
	// SASLUsers, when not empty, makes every connection authenticate
	// with SASL PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 as one of these
	// users (name to password; flag --sasl-user NAME:PASSWORD, repeated),
	// as server.Config.SASLUsers documents. Default: SASL off.
	SASLUsers map[string]string

	// DataDir holds the offsets, the topic catalog and, later, the
	// partition logs, behind an exclusive lock. Empty keeps everything in
	// memory: nothing survives Close.
	DataDir string
	// Topics are created at start unless they exist; an existing topic
	// keeps its partition count (logged at Warn when it differs).
	Topics map[string]int32

	// ManualClock runs the coordinator on a manual clock that reads Unix
	// time 0 and moves only by Advance; members then expire only when
	// Expire runs. Default: the system clock, with the expiry step on a
	// ticker.
	ManualClock bool
	// ExpiryInterval is how often the expiry step runs on the system
	// clock. Default DefaultExpiryInterval.
	ExpiryInterval time.Duration

	// Group limits, as coordinator.Config documents them.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	MaxGroupSize      int
	MaxGroups         int
	MaxMetadataBytes  int
	MaxIDBytes        int

	// ConsumerSessionTimeout is the session of every KIP-848 consumer
	// group member (Kafka's group.consumer.session.timeout.ms), and
	// ConsumerHeartbeatInterval the interval its heartbeats are told to
	// keep (group.consumer.heartbeat.interval.ms); it must be below the
	// session. Defaults coordinator.DefaultConsumerSessionTimeout (45 s)
	// and coordinator.DefaultConsumerHeartbeatInterval (5 s), as Kafka's.
	// Flags --consumer-session-timeout and --consumer-heartbeat-interval.
	ConsumerSessionTimeout    time.Duration
	ConsumerHeartbeatInterval time.Duration

	// OffsetsRetention is how long the committed offsets of a group
	// without members are kept before the expiry step removes them and
	// deletes the group they leave empty (Kafka's
	// offsets.retention.minutes, 7 days there; the rules are
	// coordinator.Config.OffsetsRetention's). Zero, the default, keeps
	// them for ever, as the chapter does. Flag --offsets-retention.
	OffsetsRetention time.Duration

	// TransactionMaxTimeout caps the transaction timeout a producer may
	// ask for (Kafka's transaction.max.timeout.ms); larger gets
	// INVALID_TRANSACTION_TIMEOUT. Default txn.DefaultMaxTimeout (15
	// min). Flag --transaction-max-timeout.
	TransactionMaxTimeout time.Duration

	// Per-member and per-group metadata limits, as coordinator.Config
	// documents them.
	MaxMemberMetadataBytes int
	MaxGroupMetadataBytes  int

	// Connection limits and the memory budget, as server.Config
	// documents them.
	MaxFrameBytes    int32
	MaxInFlightBytes int64
	MaxConnections   int
	IdleTimeout      time.Duration
	FrameReadTimeout time.Duration
	MaxFetchWait     time.Duration

	// Records, as records.Config documents them: the segment size, the
	// bytes each partition retains (0: unlimited, the default), the
	// largest batch a producer may send.
	SegmentBytes    int64
	RetentionBytes  int64
	MaxMessageBytes int32
	// AcceptDataLoss starts although the data dir lost acknowledged
	// records while the broker was down (records.ErrDataLoss, and the
	// catalog and the partition logs disagreeing): each loss is logged at
	// Error, partitions the catalog lacks are created empty, and records
	// no topic owns are set aside as <logs>/<topic>-<n>.<k>-orphaned.
	// Default false: start-up refuses and says what is missing.
	AcceptDataLoss bool
	// NoAutoCreateTopics turns off Kafka's auto.create.topics.enable: by
	// default a Metadata request that allows it creates the topics it
	// names that do not exist, with DefaultPartitions partitions (default
	// 1, Kafka's num.partitions).
	NoAutoCreateTopics bool
	DefaultPartitions  int32
	// MaxFetchBytes caps one Fetch answer, whatever it asks for (Kafka's
	// fetch.max.bytes, 55 MiB there). Default server.DefaultMaxFetchBytes.
	MaxFetchBytes int32

	// Admin is the address of the admin HTTP API, /metrics and the live
	// page. Default: off.
	Admin string
	// AdminToken, when set, is the bearer token every admin API request
	// must carry. Required when Admin is not a loopback address.
	AdminToken string

	// Logger receives the broker's events. Default: discard.
	Logger *slog.Logger

	// OffsetsFS replaces the file system the offsets store writes
	// through, for minibroker's own disk-fault tests. Default: the real
	// one.
	OffsetsFS atomicfile.FS
}

// Defaults for Config's zero fields.
const (
	DefaultListen         = "127.0.0.1:0"
	DefaultExpiryInterval = 100 * time.Millisecond
)

// Validate checks what can be checked before anything is opened; the
// packages the broker is made of check the rest.
func (cfg *Config) Validate() error {
	if cfg.ExpiryInterval < 0 {
		return fmt.Errorf("broker: ExpiryInterval %v must not be negative", cfg.ExpiryInterval)
	}
	if cfg.TransactionMaxTimeout < 0 {
		return fmt.Errorf("broker: TransactionMaxTimeout %v must not be negative", cfg.TransactionMaxTimeout)
	}
	coordCfg := coordinator.Config{Clock: clock.System{}, ConsumerSessionTimeout: cfg.ConsumerSessionTimeout,
		ConsumerHeartbeatInterval: cfg.ConsumerHeartbeatInterval, OffsetsRetention: cfg.OffsetsRetention}
	if err := coordCfg.Validate(); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	for _, addr := range []struct{ name, value string }{{"Listen", cfg.Listen}, {"Advertise", cfg.Advertise}, {"Admin", cfg.Admin}} {
		if addr.value == "" {
			continue
		}
		_, port, err := net.SplitHostPort(addr.value)
		if err != nil || port == "" {
			return fmt.Errorf("broker: %s must be HOST:PORT, got %q", addr.name, addr.value)
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return fmt.Errorf("broker: %s %q: the port must be a number from 0 to 65535", addr.name, addr.value)
		}
	}
	if cfg.Admin != "" && cfg.AdminToken == "" {
		if host, _, _ := net.SplitHostPort(cfg.Admin); !admin.IsLoopbackHost(host) {
			return fmt.Errorf("broker: the admin API on %s, not a loopback address, needs an AdminToken (--admin-token)", cfg.Admin)
		}
	}
	if cfg.DefaultPartitions < 0 || cfg.DefaultPartitions > catalog.MaxPartitions {
		return fmt.Errorf("broker: DefaultPartitions %d is outside [1, %d]", cfg.DefaultPartitions, catalog.MaxPartitions)
	}
	if cfg.RetentionBytes < 0 {
		return fmt.Errorf("broker: RetentionBytes %d must not be negative (0 is unlimited)", cfg.RetentionBytes)
	}
	for name, n := range cfg.Topics {
		if n < 1 {
			return fmt.Errorf("broker: topic %q: %d partitions; want at least 1", name, n)
		}
	}
	if cfg.TLS != nil && len(cfg.TLS.Certificates) == 0 && cfg.TLS.GetCertificate == nil && cfg.TLS.GetConfigForClient == nil {
		return errors.New("broker: Config.TLS holds no certificate")
	}
	if err := server.ValidateSASLUsers(cfg.SASLUsers); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	return nil
}
