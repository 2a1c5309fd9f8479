package broker

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/internal/atomicfile"
	"github.com/minibroker/minibroker/internal/hostport"
	"github.com/minibroker/minibroker/internal/settings"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/server"
	"github.com/minibroker/minibroker/txn"
)

// The settings of the packages a broker is made of. Config embeds each,
// so that every setting is a field of Config (cfg.MaxFetchWait), and
// Start hands each to its package whole.
type (
	// ServerSettings: connections, frames, the memory budget, Fetch.
	ServerSettings = server.Settings
	// GroupSettings: sessions, group limits, offsets retention.
	GroupSettings = coordinator.Settings
	// RecordSettings: segments, retention, batch size, data loss.
	RecordSettings = records.Settings
	// TransactionSettings: transaction timeouts.
	TransactionSettings = txn.Settings
)

// Config configures a broker. Zero fields mean the default. Every
// setting with a `flag` tag, here or in an embedded Settings, is the
// `minibroker serve` flag of that name (docs/design.md, "Adding a
// setting"); TLS, SASLUsers, Topics and ManualClock have flags of their
// own (--tls-*, --sasl-user, --topic, --clock).
type Config struct {
	// Listen is the Kafka listener's address. Default DefaultListen,
	// 127.0.0.1 on a free port (the command's default is 127.0.0.1:9092).
	// A broker bound to every interface (0.0.0.0:PORT, :PORT) logs a
	// warning, and Addr and, without Advertise, Metadata name it
	// 127.0.0.1:PORT.
	Listen string `flag:"listen" arg:"ADDR" help:"ADDR to listen on"`
	// Advertise is the host:port that Metadata and FindCoordinator
	// return. Default: the bound address.
	Advertise string `flag:"advertise" arg:"HOST:PORT" help:"HOST:PORT that Metadata and FindCoordinator return (default: the bound address)"`
	// TLS, when set, serves TLS only (Kafka's SSL listener). Default:
	// plaintext.
	TLS *tls.Config
	// SASLUsers, when not empty, makes every connection authenticate
	// with SASL PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 as one of these
	// users (name to password; flag --sasl-user NAME:PASSWORD, repeated),
	// as server.Config.SASLUsers documents. Default: SASL off.
	SASLUsers map[string]string

	// DataDir holds the offsets, the topic catalog, the partition logs
	// and the transaction log, behind an exclusive lock. Empty keeps
	// everything in memory: nothing survives Close (the command's default
	// is ./minibroker-data, and it refuses an empty one).
	DataDir string `flag:"data-dir" arg:"DIR" help:"DIR holding, behind a lock (.lock), the committed offsets (offsets.json and its journal), the topic catalog (topics.json and its journal), the partition logs with the producer ids and the log checkpoint (logs/) and the transaction log (transactions.log)"`
	// Topics are created at start unless they exist; an existing topic
	// keeps its partition count (logged at Warn when it differs).
	Topics map[string]int32
	// TopicConfigs are configs of topics Topics names, by Kafka's names
	// (retention.bytes, segment.bytes, max.message.bytes), given to them
	// when Start creates them, as CreateTopics's configs: "orders" ->
	// {"retention.bytes": "1048576"}. An existing topic keeps its own
	// (logged at Warn when they differ). Validate refuses a config a topic
	// cannot have, or a value it cannot take (topics.ErrInvalidConfig).
	TopicConfigs map[string]map[string]string

	// ManualClock runs the coordinator on a manual clock that reads Unix
	// time 0 and moves only by Advance; members then expire only when
	// Expire runs. Default: the system clock, with the expiry step on a
	// ticker.
	ManualClock bool
	// ExpiryInterval is how often the expiry step runs on the system
	// clock. Default DefaultExpiryInterval.
	ExpiryInterval time.Duration `flag:"expiry-interval" help:"real clock: how often the expiry step runs"`

	ServerSettings
	GroupSettings
	RecordSettings
	TransactionSettings

	// NoAutoCreateTopics turns off Kafka's auto.create.topics.enable: by
	// default a Metadata request that allows it creates the topics it
	// names that do not exist, with DefaultPartitions partitions (default
	// 1, Kafka's num.partitions). Its flag says it the other way round.
	NoAutoCreateTopics bool `flag:"auto-create-topics" invert:"true" help:"create a topic a Metadata request names and allows to be created (Kafka's auto.create.topics.enable)"`

	// Admin is the address of the admin HTTP API, /metrics and the live
	// page, which AdminAPI serves. Default: off.
	Admin string `flag:"admin" arg:"ADDR" help:"ADDR to serve the admin HTTP API, /metrics and the live page on (default: off)"`
	// AdminAPI serves Admin: adminapi.New, of package
	// github.com/minibroker/minibroker/broker/adminapi. Package broker
	// does not link the admin API itself, so that a program that serves
	// none links no Prometheus; Validate refuses Admin without it.
	AdminAPI AdminAPI
	// AdminToken, when set, is the bearer token every admin API request
	// must carry. Required when Admin is not a loopback address.
	AdminToken string `flag:"admin-token" arg:"TOKEN" help:"TOKEN every admin API request must carry as \"Authorization: Bearer TOKEN\"; required when --admin is not a loopback address (default: none)"`

	// Logger receives the broker's events. Default: discard.
	Logger *slog.Logger

	// OffsetsFS replaces the file system the offsets store writes
	// through, for minibroker's own disk-fault tests. Default: the real
	// one.
	OffsetsFS atomicfile.FS
}

// SettingsError is an invalid value of one setting, as Validate and
// Start return it: Scope is the package that checked it ("server"),
// Field the Go field's name ("MaxFetchWait"), Problem what is wrong. A
// caller matches it with errors.As and a *SettingsError.
type SettingsError = settings.Error

// Defaults for Config's zero fields.
const (
	DefaultListen         = "127.0.0.1:0"
	DefaultExpiryInterval = 100 * time.Millisecond
)

// WithDefaults returns cfg with every setting whose zero value stands for
// a default set to that default (what the command shows in -h). Listen
// and the settings whose default is zero stay as they are.
func (cfg Config) WithDefaults() Config {
	if cfg.ExpiryInterval == 0 {
		cfg.ExpiryInterval = DefaultExpiryInterval
	}
	cfg.ServerSettings = cfg.ServerSettings.WithDefaults()
	cfg.GroupSettings = cfg.GroupSettings.WithDefaults()
	cfg.RecordSettings = cfg.RecordSettings.WithDefaults()
	cfg.TransactionSettings = cfg.TransactionSettings.WithDefaults()
	return cfg
}

// Validate checks what can be checked before anything is opened: each
// package's settings by that package's Validate, and the broker's own.
// An invalid setting is a *settings.Error naming its field.
func (cfg *Config) Validate() error {
	if cfg.ExpiryInterval < 0 {
		return settings.Errorf("broker", "ExpiryInterval", "must be positive, got %v", cfg.ExpiryInterval)
	}
	for _, s := range []interface{ Validate() error }{cfg.ServerSettings, cfg.GroupSettings, cfg.RecordSettings, cfg.TransactionSettings} {
		if err := s.Validate(); err != nil {
			return fmt.Errorf("broker: %w", err)
		}
	}
	for _, addr := range []struct{ name, value string }{{"Listen", cfg.Listen}, {"Advertise", cfg.Advertise}, {"Admin", cfg.Admin}} {
		if err := hostport.Check("broker", addr.name, addr.value); err != nil {
			return err
		}
	}
	if cfg.Admin != "" && cfg.AdminAPI == nil {
		return settings.Errorf("broker", "AdminAPI", "must be set to serve Admin %q: adminapi.New, of package github.com/minibroker/minibroker/broker/adminapi", cfg.Admin)
	}
	if cfg.Admin != "" && cfg.AdminToken == "" {
		if host, _, _ := hostport.Split(cfg.Admin); !hostport.IsLoopbackHost(host) {
			return fmt.Errorf("broker: the admin API on %s, not a loopback address, needs an AdminToken (--admin-token)", cfg.Admin)
		}
	}
	if err := validateTopics(cfg); err != nil {
		return err
	}
	if cfg.TLS != nil && len(cfg.TLS.Certificates) == 0 && cfg.TLS.GetCertificate == nil && cfg.TLS.GetConfigForClient == nil {
		return errors.New("broker: Config.TLS holds no certificate")
	}
	if err := server.ValidateSASLUsers(cfg.SASLUsers); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	return nil
}
