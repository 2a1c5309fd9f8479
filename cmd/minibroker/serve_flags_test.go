package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"flag"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/wireclient"
)

func TestServeFlagErrorsExitTwo(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--nope"}, "flag provided but not defined: -nope"},
		{"topic without partitions", []string{"--topic", "orders"}, "want NAME:PARTITIONS"},
		{"zero partitions", []string{"--topic", "orders:0"}, "at least 1"},
		{"bad topic name", []string{"--topic", "a b:1"}, "invalid topic name"},
		{"bad clock", []string{"--clock", "fast"}, "--clock must be real or manual"},
		{"min above max", []string{"--min-session-timeout", "2m", "--max-session-timeout", "1m"}, "--min-session-timeout"},
		{"zero expiry", []string{"--expiry-interval", "0s"}, "--expiry-interval must not be 0: leave it out for its default, 100ms"},
		{"negative expiry", []string{"--expiry-interval", "-1s"}, "--expiry-interval must be positive, got -1s"},
		{"consumer heartbeat as long as the session", []string{"--consumer-session-timeout", "5s"}, "--consumer-heartbeat-interval (5s) must be positive and below --consumer-session-timeout (5s)"},
		{"zero consumer heartbeat", []string{"--consumer-heartbeat-interval", "0s"}, "--consumer-heartbeat-interval must not be 0: leave it out for its default, 5s"},
		{"negative consumer heartbeat", []string{"--consumer-heartbeat-interval", "-1s"}, "--consumer-heartbeat-interval (-1s) must be positive and below --consumer-session-timeout (45s)"},
		{"bad duration", []string{"--expiry-interval", "soon"}, `invalid value "soon" for flag -expiry-interval: want a duration with a unit: 10ms, 2s, 5m`},
		{"negative retention", []string{"--offsets-retention", "-1h"}, "--offsets-retention must not be negative, got -1h0m0s"},
		{"tiny frames", []string{"--max-frame-bytes", "10"}, "--max-frame-bytes"},
		{"bad log level", []string{"--log-level", "loud"}, `invalid value "loud" for flag -log-level: want debug, info, warn or error`},
		{"bad advertise", []string{"--advertise", "nohost"}, "--advertise must be HOST:PORT"},
		{"stray argument", []string{"extra"}, `unexpected argument "extra"`},
		{"empty data dir", []string{"--data-dir", ""}, "--data-dir must not be empty"},
		{"too many partitions", []string{"--topic", "orders:100001"}, "at most 100000"},
		{"zero connections", []string{"--max-connections", "0"}, "--max-connections must not be 0: leave it out for its default, 10000"},
		{"negative connections", []string{"--max-connections", "-1"}, "--max-connections must be at least 1, got -1"},
		{"zero idle timeout", []string{"--idle-timeout", "0s"}, "--idle-timeout must not be 0: leave it out for its default, 10m0s"},
		{"negative idle timeout", []string{"--idle-timeout", "-1m"}, "--idle-timeout must be positive, got -1m0s"},
		{"negative frame timeout", []string{"--frame-read-timeout", "-1s"}, "--frame-read-timeout must be positive"},
		{"auth delay past the frame timeout", []string{"--connection-failed-authentication-delay", "30s"}, "--connection-failed-authentication-delay (30s) must be below --frame-read-timeout (30s), within which a connection must authenticate"},
		{"zero group size", []string{"--max-group-size", "0"}, "--max-group-size must not be 0: leave it out for its default, 1000"},
		{"negative group size", []string{"--max-group-size", "-1"}, "--max-group-size must be at least 1, got -1"},
		{"zero groups", []string{"--max-groups", "0"}, "--max-groups must not be 0: leave it out for its default, 100000"},
		{"negative groups", []string{"--max-groups", "-5"}, "--max-groups must be at least 1, got -5"},
		{"zero metadata", []string{"--max-metadata-bytes", "0"}, "--max-metadata-bytes must not be 0: leave it out for its default, 4096"},
		{"metadata above Kafka's", []string{"--max-metadata-bytes", "4097"}, "--max-metadata-bytes must be between 1 and 4096"},
		{"zero id bytes", []string{"--max-id-bytes", "0"}, "--max-id-bytes must not be 0: leave it out for its default, 255"},
		{"negative id bytes", []string{"--max-id-bytes", "-1"}, "--max-id-bytes must be between 1 and 32735, got -1"},
		{"id bytes beyond the protocol", []string{"--max-id-bytes", "40000"}, "--max-id-bytes must be between 1 and 32735"},
		{"tiny segments", []string{"--segment-bytes", "100"}, "--segment-bytes must be between 1024"},
		{"negative retention", []string{"--retention-bytes", "-1"}, "--retention-bytes must not be negative"},
		{"batch smaller than its header", []string{"--max-message-bytes", "60"}, "--max-message-bytes must be between 61"},
		{"zero default partitions", []string{"--default-partitions", "0"}, "--default-partitions must not be 0: leave it out for its default, 1"},
		{"too many default partitions", []string{"--default-partitions", "100001"}, "--default-partitions must be between 1 and 100000, got 100001"},
		{"zero fetch bytes", []string{"--max-fetch-bytes", "0"}, "--max-fetch-bytes must not be 0: leave it out for its default, 57671680"},
		{"negative fetch bytes", []string{"--max-fetch-bytes", "-1"}, "--max-fetch-bytes must be between 1 and 2147483647, got -1"},
		{"fetch bytes past 32 bits", []string{"--max-fetch-bytes", "2147483648"}, `invalid value "2147483648" for flag -max-fetch-bytes: value out of range`},
		{"zero fetch wait", []string{"--max-fetch-wait", "0s"}, "--max-fetch-wait must not be 0: leave it out for its default, 5s"},
		{"negative fetch wait", []string{"--max-fetch-wait", "-1s"}, "--max-fetch-wait must be positive, got -1s"},
		{"budget below the frame cap", []string{"--max-frame-bytes", "2048", "--max-inflight-bytes", "2047"}, "--max-inflight-bytes (2047) must be at least --max-frame-bytes (2048)"},
		{"member metadata past the group's", []string{"--max-member-metadata-bytes", "2000", "--max-group-metadata-bytes", "1000"}, "--max-member-metadata-bytes (2000) must be positive and at most --max-group-metadata-bytes (1000)"},
		{"negative transaction timeout", []string{"--transaction-max-timeout", "-1m"}, "--transaction-max-timeout must be positive, got -1m0s"},
		{"zero transaction timeout", []string{"--transaction-max-timeout", "0s"}, "--transaction-max-timeout must not be 0: leave it out for its default, 15m0s"},
		{"negative id expiration", []string{"--transactional-id-expiration", "-1h"}, "--transactional-id-expiration must be positive, got -1h0m0s"},
		{"cert without key", []string{"--tls-cert", "server.pem"}, "--tls-cert and --tls-key must be given together"},
		{"key without cert", []string{"--tls-key", "server.key"}, "--tls-cert and --tls-key must be given together"},
		{"client CA alone", []string{"--tls-client-ca", "ca.pem"}, "--tls-cert and --tls-key must be given together"},
		{"missing cert file", []string{"--tls-cert", "/nonexistent/server.pem", "--tls-key", "/nonexistent/server.key"}, "--tls-cert /nonexistent/server.pem"},
		{"sasl user without a colon", []string{"--sasl-user", "alice"}, `invalid value "alice" for flag -sasl-user: want NAME:PASSWORD, got no ':'`},
		{"sasl user without a name", []string{"--sasl-user", ":secret"}, "want NAME:PASSWORD, got an empty name"},
		{"sasl user without a password", []string{"--sasl-user", "alice:"}, `want NAME:PASSWORD, got an empty password for "alice"`},
		{"sasl user twice", []string{"--sasl-user", "alice:a", "--sasl-user", "alice:b"}, `user "alice" given twice`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"serve"}, tc.args...), &stdout, &stderr)
			require.Equal(t, 2, code)
			require.Contains(t, stderr.String(), tc.want)
		})
	}
}

// TestServeBadFlagValuesCreateNothing: a flag value the broker would
// refuse only at start (a port past 65535, an admin API off loopback
// without a token, a duration without a unit) is a usage error too: one
// line, status 2, and the data directory is not created.
func TestServeBadFlagValuesCreateNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"listen port out of range", []string{"--listen", "127.0.0.1:99999"}, `minibroker serve: --listen "127.0.0.1:99999": the port must be a number from 0 to 65535 (minibroker serve -h lists the flags)`},
		{"admin off loopback without a token", []string{"--admin", "0.0.0.0:9644"}, "minibroker serve: broker: the admin API on 0.0.0.0:9644, not a loopback address, needs an AdminToken (--admin-token) (minibroker serve -h lists the flags)"},
		{"admin port not a number", []string{"--admin", "127.0.0.1:http"}, `minibroker serve: --admin "127.0.0.1:http": the port must be a number from 0 to 65535 (minibroker serve -h lists the flags)`},
		{"duration without a unit", []string{"--expiry-interval", "10"}, `minibroker serve: invalid value "10" for flag -expiry-interval: want a duration with a unit: 10ms, 2s, 5m (minibroker serve -h lists the flags)`},
		{"session timeout without a unit", []string{"--max-session-timeout", "30"}, `minibroker serve: invalid value "30" for flag -max-session-timeout: want a duration with a unit: 10ms, 2s, 5m (minibroker serve -h lists the flags)`},
		{"log level not a level", []string{"--log-level", "loud"}, `minibroker serve: invalid value "loud" for flag -log-level: want debug, info, warn or error (minibroker serve -h lists the flags)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data")
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"serve", "--data-dir", dir}, tc.args...), &stdout, &stderr)
			require.Equal(t, 2, code)
			require.Equal(t, tc.want+"\n", stderr.String())
			require.NoDirExists(t, dir)
		})
	}
}

// TestServeHelpNamesDurations: -h still says which flags take a duration.
func TestServeHelpNamesDurations(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"serve", "-h"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "  -expiry-interval duration\n")
	require.Contains(t, stderr.String(), "(default 100ms)")
}

// TestServeLogLevelFlag: --log-level takes the four level names in any
// case, defaults to info, and -h lists the names and the default.
func TestServeLogLevelFlag(t *testing.T) {
	t.Parallel()
	for arg, want := range map[string]slog.Level{"debug": slog.LevelDebug, "INFO": slog.LevelInfo, "Warn": slog.LevelWarn, "error": slog.LevelError} {
		f, err := parseServeFlags([]string{"--log-level", arg}, io.Discard)
		require.NoError(t, err, arg)
		require.Equal(t, want, f.logLevel, arg)
	}
	f, err := parseServeFlags(nil, io.Discard)
	require.NoError(t, err)
	require.Equal(t, slog.LevelInfo, f.logLevel)
	var help bytes.Buffer
	_, err = parseServeFlags([]string{"-h"}, &help)
	require.ErrorIs(t, err, flag.ErrHelp)
	require.Contains(t, help.String(), "  -log-level LEVEL\n    \tLEVEL of the least severe line logged: debug, info, warn or error (default info)\n")
}

// TestServeSASLUserFlag: repeated --sasl-user flags make the users; the
// password is everything after the first ':'; none leaves SASL off.
func TestServeSASLUserFlag(t *testing.T) {
	t.Parallel()
	f, err := parseServeFlags(nil, io.Discard)
	require.NoError(t, err)
	require.Empty(t, f.saslUsers)
	f, err = parseServeFlags([]string{"--sasl-user", "alice:a:b:c", "--sasl-user", "bob:pw"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, saslUserFlags{"alice": "a:b:c", "bob": "pw"}, f.saslUsers)
}

// TestServeFailedAuthenticationDelayFlag:
// --connection-failed-authentication-delay is 100 ms unless given, and 0
// turns it off (the field's -1), as Kafka's 0 does.
func TestServeFailedAuthenticationDelayFlag(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]time.Duration{"": 100 * time.Millisecond, "0": -1, "0s": -1, "250ms": 250 * time.Millisecond} {
		var given []string
		if args != "" {
			given = []string{"--connection-failed-authentication-delay", args}
		}
		f, err := parseServeFlags(given, io.Discard)
		require.NoError(t, err, args)
		cfg := f.config(nil)
		require.Equal(t, want, cfg.FailedAuthenticationDelay, args)
		require.NoError(t, cfg.Validate(), args)
	}
}

// TestServeOffsetsRetentionFlag: --offsets-retention is off (0) unless
// given, and -h documents it.
func TestServeOffsetsRetentionFlag(t *testing.T) {
	t.Parallel()
	f, err := parseServeFlags(nil, io.Discard)
	require.NoError(t, err)
	require.Zero(t, f.cfg.OffsetsRetention)
	f, err = parseServeFlags([]string{"--offsets-retention", "168h"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 7*24*time.Hour, f.cfg.OffsetsRetention)
	var help bytes.Buffer
	_, err = parseServeFlags([]string{"-h"}, &help)
	require.ErrorIs(t, err, flag.ErrHelp)
	require.Contains(t, help.String(), "-offsets-retention duration")
	require.Contains(t, help.String(), "offsets.retention.minutes); 0 keeps them for ever")
}

func TestLoadTLS(t *testing.T) {
	t.Parallel()
	p := testutil.NewPKI(t)
	notPEM := filepath.Join(t.TempDir(), "ca.txt")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o600))

	cfg, err := loadTLS("", "", "")
	require.NoError(t, err)
	require.Nil(t, cfg, "no flags: plaintext")

	cfg, err = loadTLS(p.ServerCertFile, p.ServerKeyFile, "")
	require.NoError(t, err)
	require.Len(t, cfg.Certificates, 1)
	require.Equal(t, tls.NoClientCert, cfg.ClientAuth)
	require.Equal(t, uint16(tls.VersionTLS12), cfg.MinVersion)

	cfg, err = loadTLS(p.ServerCertFile, p.ServerKeyFile, p.CAFile)
	require.NoError(t, err)
	require.Equal(t, tls.RequireAndVerifyClientCert, cfg.ClientAuth)
	require.NotNil(t, cfg.ClientCAs)

	_, err = loadTLS(p.ServerCertFile, p.CAFile, "")
	require.ErrorContains(t, err, "--tls-cert "+p.ServerCertFile, "a key that is not a key")
	_, err = loadTLS(p.ServerCertFile, p.ServerKeyFile, notPEM)
	require.ErrorContains(t, err, "holds no PEM certificate")
	_, err = loadTLS(p.ServerCertFile, p.ServerKeyFile, notPEM+".missing")
	require.ErrorContains(t, err, "--tls-client-ca")

	for _, args := range [][]string{
		{"--tls-cert", p.ServerCertFile, "--tls-key", p.CAFile},
		{"--tls-cert", p.ServerCertFile, "--tls-key", p.ServerKeyFile, "--tls-client-ca", notPEM},
	} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 2, run(context.Background(), append([]string{"serve"}, args...), &stdout, &stderr), "%v", args)
		require.Contains(t, stderr.String(), "minibroker serve: --tls-")
	}
}

// TestReadmeServeFlagDefaults: each row of the README's serve-flags table
// gives the default serve -h gives: the same value where the cell quotes
// one (a duration as a duration: 30m is 30m0s), and a zero default where
// it says in words what zero means (off, none, plaintext).
// integration's TestReadmeServeFlagsTable checks that the rows are
// exactly the flags.
func TestReadmeServeFlagDefaults(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(data), "## `minibroker serve` flags")
	require.True(t, ok)
	table, _, _ = strings.Cut(table, "\n## ")
	_, fs := newServeFlags()
	defaults := map[string]string{}
	fs.VisitAll(func(fl *flag.Flag) { defaults[fl.Name] = fl.DefValue })
	flagName := regexp.MustCompile("`--([a-z-]+)")
	quoted := regexp.MustCompile("^`([^`]*)`")
	rows := 0
	for _, row := range strings.Split(table, "\n") {
		cells := strings.Split(strings.ReplaceAll(row, `\|`, "/"), "|") // `real\|manual`
		if len(cells) < 4 || !strings.Contains(cells[1], "`--") {
			continue
		}
		want := strings.TrimSpace(cells[2])
		for _, m := range flagName.FindAllStringSubmatch(cells[1], -1) {
			rows++
			have, ok := defaults[m[1]]
			require.True(t, ok, "README names --%s, which serve does not have", m[1])
			q := quoted.FindStringSubmatch(want)
			if q == nil {
				require.Contains(t, []string{"", "0", "0s", "false"}, have, "--%s: README says %q", m[1], want)
				continue
			}
			if hd, err := time.ParseDuration(have); err == nil && strings.HasSuffix(have, "s") {
				d, err := time.ParseDuration(q[1])
				require.NoError(t, err, "--%s: README default %q", m[1], q[1])
				require.Equal(t, hd, d, "--%s", m[1])
				continue
			}
			require.True(t, strings.EqualFold(have, q[1]), "--%s: README default %q, serve -h %q", m[1], q[1], have)
		}
	}
	require.Equal(t, len(defaults), rows, "every flag has its row")
}

// TestServeHelpNamesWhatTheDataDirHolds: a broker that has created a
// topic, taken a commit, an idempotent produce and a transaction leaves
// in its data dir only files that --data-dir's help names, each by the
// store it belongs to; the help names every store that was there.
func TestServeHelpNamesWhatTheDataDirHolds(t *testing.T) {
	t.Parallel()
	var help bytes.Buffer
	_, err := parseServeFlags([]string{"-h"}, &help)
	require.ErrorIs(t, err, flag.ErrHelp)
	_, text, ok := strings.Cut(help.String(), "  -data-dir DIR\n")
	require.True(t, ok, help.String())
	text, _, _ = strings.Cut(text, "\n  -")
	text = strings.Join(strings.Fields(text), " ")

	dir := t.TempDir()
	b, err := broker.Start(t.Context(), broker.Config{DataDir: dir, Topics: map[string]int32{"orders": 1}})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := wireclient.Dial(ctx, b.Addr(), "help-test")
	require.NoError(t, err)
	defer c.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "audit", NumPartitions: 1, ReplicationFactor: 1}}
	resp, err := c.Request(ctx, create)
	require.NoError(t, err)
	require.Zero(t, resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 8, "g", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}}}
	resp, err = c.Request(ctx, commit)
	require.NoError(t, err)
	require.Zero(t, resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.TransactionalID("help-test"), kgo.DefaultProduceTopic("orders"))
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, cl.BeginTransaction())
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr())
	require.NoError(t, cl.EndTransaction(ctx, kgo.TryCommit))

	// Each file or directory a data dir holds, by the words the help
	// uses for its store. A name missing here is a store the help does
	// not name yet.
	store := func(rel string) string {
		switch base := filepath.Base(rel); {
		case rel == ".lock":
			return "a lock (.lock)"
		case rel == "offsets.json", strings.HasPrefix(rel, "offsets.journal."):
			return "the committed offsets (offsets.json and its journal)"
		case rel == "topics.json", rel == "topics.journal":
			return "the topic catalog (topics.json and its journal)"
		case rel == "logs", regexp.MustCompile(`^logs/[a-z]+-\d+(/\d{20}\.(log|index|timeindex))?$`).MatchString(rel):
			return "the partition logs"
		case rel == "logs/producer_ids.json":
			return "the producer ids"
		case rel == "logs/checkpoint":
			return "the log checkpoint (logs/)"
		case rel == "transactions.log":
			return "the transaction log (transactions.log)"
		default:
			return "unknown: " + base
		}
	}
	seen := map[string]bool{}
	list := func() {
		require.NoError(t, filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
			require.NoError(t, err)
			if rel, _ := filepath.Rel(dir, path); rel != "." {
				seen[store(rel)] = true
			}
			return nil
		}))
	}
	list() // running: the journals
	require.NoError(t, c.Close())
	cl.Close()
	require.NoError(t, b.Close())
	list() // stopped: what they were folded into
	stores := slices.Sorted(maps.Keys(seen))
	require.Equal(t, []string{
		"a lock (.lock)",
		"the committed offsets (offsets.json and its journal)",
		"the log checkpoint (logs/)",
		"the partition logs",
		"the producer ids",
		"the topic catalog (topics.json and its journal)",
		"the transaction log (transactions.log)",
	}, stores, "every file the data dir held belongs to a store the help names")
	for _, s := range stores {
		require.Contains(t, text, s, "--data-dir's help")
	}
}
