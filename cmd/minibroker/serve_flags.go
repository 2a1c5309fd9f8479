package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/broker/adminapi"
	"github.com/minibroker/minibroker/catalog"
)

// serveFlags are the flags of "minibroker serve" (docs/design.md section
// 5). Every setting is a field of cfg with a flag tag, bound by
// bindFields; the fields below are the flags that are no setting of their
// own.
type serveFlags struct {
	cfg   broker.Config
	bound *boundFlags

	topics   topicFlags
	clock    string
	logLevel slog.Level

	// TLS: the file names as given, and the configuration built from them
	// (nil: plaintext).
	tlsCert, tlsKey, tlsClientCA string
	tls                          *tls.Config

	// SASL users, from repeated --sasl-user NAME:PASSWORD (none: SASL off).
	saslUsers saslUserFlags

	// pprof profiles and the execution trace of the run (profile.go);
	// not broker settings.
	profileDir, traceFile string
}

// The command's defaults where they differ from an embedded broker's:
// a fixed port, and a data directory rather than memory.
const (
	defaultListen  = "127.0.0.1:9092"
	defaultDataDir = "./minibroker-data"
)

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

// logLevelFlag is --log-level: one of slog's level names, in any case
// (slog's "info+2" forms are taken too). A mistake lists the names, not
// slog's parse error.
type logLevelFlag struct{ level *slog.Level }

func (l logLevelFlag) String() string {
	if l.level == nil { // the flag package's zero value: -h then shows the default
		return ""
	}
	return strings.ToLower(l.level.String())
}

func (l logLevelFlag) Set(v string) error {
	if err := l.level.UnmarshalText([]byte(v)); err != nil {
		return errors.New("want debug, info, warn or error")
	}
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

// newServeFlags returns serve's flags, holding their defaults, and the
// flag set that parses into them.
func newServeFlags() (*serveFlags, *flag.FlagSet) {
	f := &serveFlags{topics: topicFlags{}, saslUsers: saslUserFlags{}}
	f.cfg = broker.Config{Listen: defaultListen, DataDir: defaultDataDir}.WithDefaults()
	fs := flag.NewFlagSet("minibroker serve", flag.ContinueOnError)
	// A mistake gets one line (serve prints it); only -h prints the list.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	f.bound = bindFields(fs, &f.cfg)
	fs.Var(f.topics, "topic", "`NAME:PARTITIONS` to create if absent; repeatable")
	fs.StringVar(&f.clock, "clock", "real", "real|manual; with manual, time and expiry move only on request")
	f.logLevel = slog.LevelInfo
	fs.Var(logLevelFlag{&f.logLevel}, "log-level", "`LEVEL` of the least severe line logged: debug, info, warn or error")
	fs.StringVar(&f.profileDir, "profile-dir", "", "`DIR` to write pprof profiles of the run to when it stops: cpu, allocs, mutex, heap (default: off)")
	fs.StringVar(&f.traceFile, "trace-file", "", "`FILE` to write the Go execution trace of the run to, for go tool trace (default: off)")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "`FILE` with the PEM server certificate chain; with --tls-key, serve TLS only (default: plaintext)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "`FILE` with the PEM private key of --tls-cert")
	fs.StringVar(&f.tlsClientCA, "tls-client-ca", "", "`FILE` with PEM CA certificates; clients must present a certificate they signed (needs --tls-cert)")
	fs.Var(f.saslUsers, "sasl-user", "`NAME:PASSWORD` of a user clients authenticate as with SASL PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (repeatable); with any, every connection must authenticate (Kafka's SASL_PLAINTEXT, or SASL_SSL with --tls-cert; default: SASL off)")
	explainDurations(fs)
	return f, fs
}

func parseServeFlags(args []string, stderr io.Writer) (*serveFlags, error) {
	f, fs := newServeFlags()
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
	if err := f.bound.finish(fs); err != nil {
		return nil, err
	}
	switch {
	case f.clock != "real" && f.clock != "manual":
		return nil, fmt.Errorf("--clock must be real or manual, got %q", f.clock)
	case f.cfg.DataDir == "":
		return nil, errors.New("--data-dir must not be empty")
	}
	tlsCfg, err := loadTLS(f.tlsCert, f.tlsKey, f.tlsClientCA)
	if err != nil {
		return nil, err
	}
	f.tls = tlsCfg
	// What the flags say is checked before anything is created on disk,
	// by the checks the broker and its packages make: a bad value is a
	// usage error, named by its flag.
	cfg := f.config(nil)
	if err := cfg.Validate(); err != nil {
		return nil, f.bound.explain(err)
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

// config is the broker configuration the flags describe.
func (f *serveFlags) config(logger *slog.Logger) broker.Config {
	cfg := f.cfg
	cfg.TLS, cfg.SASLUsers, cfg.Topics = f.tls, f.saslUsers, f.topics
	cfg.ManualClock = f.clock == "manual"
	cfg.Logger = logger
	cfg.AdminAPI = adminapi.New // served when --admin is given
	return cfg
}
