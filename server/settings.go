package server

import (
	"time"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/internal/settings"
	"github.com/minibroker/minibroker/protocol"
)

// Settings are the server's user settings, each a `minibroker serve`
// flag (its tags). Zero fields mean the default; Validate is their one
// check.
type Settings struct {
	// DefaultPartitions is the partition count of a topic Metadata
	// creates (Config.AutoCreateTopics): Kafka's num.partitions. Default
	// 1; at most catalog.MaxPartitions.
	DefaultPartitions int32 `flag:"default-partitions" help:"partitions of an auto-created topic (Kafka's num.partitions)"`
	// MaxFetchBytes caps one Fetch answer's records, whatever it asks for
	// (Kafka's fetch.max.bytes). Bytes; default DefaultMaxFetchBytes.
	MaxFetchBytes int32 `flag:"max-fetch-bytes" help:"largest Fetch answer, whatever it asks for, in bytes (Kafka's fetch.max.bytes)"`
	// MaxFetchWait caps how long a Fetch waits before its empty answer; a
	// Fetch never waits longer than its own MaxWaitMillis (Kafka has no
	// such cap: fetch.max.wait.ms is the client's). Default
	// DefaultMaxFetchWait (5 s).
	MaxFetchWait time.Duration `flag:"max-fetch-wait" help:"longest a Fetch waits for records, whatever it asks for"`
	// MaxFrameBytes caps a request frame (Kafka's socket.request.max.bytes,
	// 100 MiB there). Bytes, from MinFrameBytes to MaxFrameBytesLimit;
	// default protocol.DefaultMaxFrameBytes (16 MiB).
	MaxFrameBytes int32 `flag:"max-frame-bytes" help:"largest request frame accepted, in bytes"`
	// MaxInFlightBytes caps the request bytes held at once over every
	// connection (Kafka's queued.max.request.bytes), and as much again the
	// answers, records read and decompressors their handlers hold (the
	// two lanes of memory.go). It must be at least MaxFrameBytes. Default
	// DefaultMaxInFlightBytes (128 MiB).
	MaxInFlightBytes int64 `flag:"max-inflight-bytes" help:"request frame bytes held at once over every connection, and as much again for what handlers build; past it a request waits, unread (Kafka's queued.max.request.bytes); at least --max-frame-bytes"`
	// MaxConnections caps the connections served at once. A connection
	// accepted beyond it is closed at once and logged (at most one Warn a
	// second, with the count). Kafka's max.connections defaults to
	// unbounded and makes the acceptor wait for a free slot; its
	// max.connections.per.ip closes new connections as we do. Default
	// DefaultMaxConnections (10,000): a connection costs a goroutine and
	// a 4 KiB read buffer, about 15 KiB in all while it stalls inside a
	// frame (TestHostileConnectionFlood), so the default bounds that at
	// about 150 MiB. With a soft open-file limit of 1024 (a common
	// ulimit -n), accept fails first: that is logged and retried with a
	// backoff (Serve).
	MaxConnections int `flag:"max-connections" help:"connections served at once; more are closed at once and logged"`
	// IdleTimeout closes a connection that has not started a request for
	// this long (Kafka's connections.max.idle.ms, 10 min). Time spent
	// answering, such as a Fetch's wait, is not idle. Default
	// DefaultIdleTimeout.
	IdleTimeout time.Duration `flag:"idle-timeout" help:"close a connection that starts no request for this long (Kafka's connections.max.idle.ms)"`
	// FrameReadTimeout bounds the rest of a request once its first byte
	// has arrived, each response write, and the TLS handshake. A peer
	// that sends part of a frame and stalls, or stops reading our
	// answers, is closed after it, so a slow or partial frame cannot hold
	// a goroutine or memory for ever. Kafka has no direct equivalent: its
	// idle timer restarts on any byte, which a slowloris can feed for
	// ever. Default DefaultFrameReadTimeout (30 s, Kafka's default
	// request.timeout.ms on the client side).
	FrameReadTimeout time.Duration `flag:"frame-read-timeout" help:"close a connection whose request frame, TLS handshake or answer write takes longer"`
	// FailedAuthenticationDelay holds back the answer to a failed SASL
	// authentication and the close that follows it, so that a password
	// guesser gets one guess per connection per delay (Kafka's
	// connection.failed.authentication.delay.ms, 100 ms; sasl.go). A
	// negative value turns it off; on the command line, 0 does. It must
	// be below FrameReadTimeout, within which a connection must
	// authenticate. Default DefaultFailedAuthenticationDelay (100 ms), or
	// half FrameReadTimeout when that is shorter.
	FailedAuthenticationDelay time.Duration `flag:"connection-failed-authentication-delay" zero:"off" help:"hold back the answer to a failed SASL authentication and the close after it this long; 0 turns it off (Kafka's connection.failed.authentication.delay.ms)"`
}

// DefaultFailedAuthenticationDelay is Settings.FailedAuthenticationDelay's
// default: Kafka's connection.failed.authentication.delay.ms.
const DefaultFailedAuthenticationDelay = 100 * time.Millisecond

// Bounds of Settings.MaxFrameBytes.
const (
	MinFrameBytes      = 1024
	MaxFrameBytesLimit = 1 << 30
)

// WithDefaults returns s with every zero field set to its default.
func (s Settings) WithDefaults() Settings {
	if s.DefaultPartitions == 0 {
		s.DefaultPartitions = 1
	}
	if s.MaxFetchBytes == 0 {
		s.MaxFetchBytes = DefaultMaxFetchBytes
	}
	if s.MaxFetchWait == 0 {
		s.MaxFetchWait = DefaultMaxFetchWait
	}
	if s.MaxFrameBytes == 0 {
		s.MaxFrameBytes = protocol.DefaultMaxFrameBytes
	}
	if s.MaxInFlightBytes == 0 {
		s.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	if s.MaxConnections == 0 {
		s.MaxConnections = DefaultMaxConnections
	}
	if s.IdleTimeout == 0 {
		s.IdleTimeout = DefaultIdleTimeout
	}
	if s.FrameReadTimeout == 0 {
		s.FrameReadTimeout = DefaultFrameReadTimeout
	}
	if s.FailedAuthenticationDelay == 0 {
		s.FailedAuthenticationDelay = min(DefaultFailedAuthenticationDelay, s.FrameReadTimeout/2)
	}
	return s
}

// Validate checks the settings' ranges and relations, a zero field
// standing for its default. Its errors are *settings.Error.
func (s Settings) Validate() error {
	d := s.WithDefaults()
	switch {
	case d.DefaultPartitions < 1 || d.DefaultPartitions > catalog.MaxPartitions:
		return settings.Errorf("server", "DefaultPartitions", "must be between 1 and %d, got %d", catalog.MaxPartitions, s.DefaultPartitions)
	case d.MaxFetchBytes < 1:
		return settings.Errorf("server", "MaxFetchBytes", "must be between 1 and %d, got %d", int32(1<<31-1), s.MaxFetchBytes)
	case d.MaxFetchWait <= 0:
		return settings.Errorf("server", "MaxFetchWait", "must be positive, got %v", s.MaxFetchWait)
	case d.MaxFrameBytes < MinFrameBytes || d.MaxFrameBytes > MaxFrameBytesLimit:
		return settings.Errorf("server", "MaxFrameBytes", "must be between %d and %d, got %d", MinFrameBytes, MaxFrameBytesLimit, s.MaxFrameBytes)
	case d.MaxInFlightBytes < int64(d.MaxFrameBytes):
		return settings.Errorf("server", "MaxInFlightBytes", "(%d) must be at least MaxFrameBytes (%d): a largest request could never be read", d.MaxInFlightBytes, d.MaxFrameBytes)
	case d.MaxConnections < 1:
		return settings.Errorf("server", "MaxConnections", "must be at least 1, got %d", s.MaxConnections)
	case d.IdleTimeout <= 0:
		return settings.Errorf("server", "IdleTimeout", "must be positive, got %v", s.IdleTimeout)
	case d.FrameReadTimeout <= 0:
		return settings.Errorf("server", "FrameReadTimeout", "must be positive, got %v", s.FrameReadTimeout)
	// As Kafka's KafkaConfig requires it below connections.max.idle.ms.
	case d.FailedAuthenticationDelay >= d.FrameReadTimeout:
		return settings.Errorf("server", "FailedAuthenticationDelay", "(%v) must be below FrameReadTimeout (%v), within which a connection must authenticate", d.FailedAuthenticationDelay, d.FrameReadTimeout)
	}
	return nil
}
