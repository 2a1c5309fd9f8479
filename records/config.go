package records

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"
)

// Defaults for the Config fields whose zero value means "default".
const (
	// DefaultSegmentBytes is Config.SegmentBytes's default, 64 MiB.
	// Kafka's log.segment.bytes is 1 GiB; a teaching broker holds less.
	DefaultSegmentBytes = 64 << 20
	// DefaultMaxMessageBytes is Config.MaxMessageBytes's default, Kafka's
	// message.max.bytes (1 MiB plus the 12 bytes of batch log overhead).
	DefaultMaxMessageBytes = 1048588
	// DefaultUncompressedFactor times MaxMessageBytes is
	// Config.MaxUncompressedBytes's default: 64 MiB at the default
	// MaxMessageBytes.
	DefaultUncompressedFactor = 64
	// DefaultTimestampAfterMax is Config.MessageTimestampAfterMax's
	// default: Kafka 4's log.message.timestamp.after.max.ms, one hour
	// (KIP-1030; before Kafka 4 it was unlimited).
	DefaultTimestampAfterMax = time.Hour
	// DefaultMaxProducers is Config.MaxProducers's default.
	DefaultMaxProducers = 1000
	// DefaultCheckpointInterval is Config.CheckpointInterval's default.
	DefaultCheckpointInterval = 10 * time.Second
	// MinSegmentBytes is the smallest Config.SegmentBytes accepted.
	MinSegmentBytes = 1024
	// MinMaxMessageBytes is the smallest Config.MaxMessageBytes accepted:
	// the header of a record batch.
	MinMaxMessageBytes = batchHeaderBytes
)

// Config configures a Log. Zero fields mean the default.
type Config struct {
	// Dir holds one directory per partition, <Dir>/<topic>-<partition>/,
	// and the producer id block file. The broker passes <data-dir>/logs.
	// Empty: everything is kept in memory, with the same semantics and
	// nothing persisted (for brokers embedded in Go tests).
	Dir string
	// Settings are the user settings (settings.go).
	Settings
	// MaxUncompressedBytes bounds the records of one compressed batch
	// once decompressed; a batch past it is refused with
	// ErrMessageTooLarge. It caps the work one hostile batch can cause
	// (a few KiB of zstd can expand to gigabytes). Validation streams
	// decompressed data through a fixed window, so memory does not grow
	// with it. Bytes; default DefaultUncompressedFactor x MaxMessageBytes
	// (64 MiB). Kafka has no such limit.
	MaxUncompressedBytes int64
	// MessageTimestampBeforeMax is how far in the past a record's
	// timestamp may lie, measured against Now. Zero or negative: no limit,
	// as Kafka's log.message.timestamp.before.max.ms default
	// (Long.MAX_VALUE). Millisecond precision.
	MessageTimestampBeforeMax time.Duration
	// MessageTimestampAfterMax is how far in the future a record's
	// timestamp may lie. Zero: DefaultTimestampAfterMax (one hour, Kafka
	// 4's log.message.timestamp.after.max.ms); negative: no limit.
	// Millisecond precision.
	MessageTimestampAfterMax time.Duration
	// MaxProducers bounds the idempotent producers remembered per
	// partition: past it, the least recently used producer is forgotten,
	// and its next batch is accepted with any sequence, as for a producer
	// never seen (KIP-360). Each costs about 250 bytes. Kafka bounds the
	// same state by time instead (producer.id.expiration.ms, one day).
	// Default DefaultMaxProducers (1000).
	MaxProducers int
	// Now is the clock record timestamps are checked against. Default
	// time.Now.
	Now func() time.Time
	// Logger receives recovery and storage-failure events. Default: a
	// logger that discards.
	Logger *slog.Logger
	// ObserveSync, if set, is called after each file sync of a flush round
	// with the time the sync took. It may be called from several
	// goroutines at once and must not block or call the Log.
	ObserveSync func(time.Duration)
	// CheckpointInterval is how often the checkpoint of every
	// partition's log start and high watermark (checkpoint.go) is
	// rewritten while something changed; it is also written at Close and
	// before retention deletes a segment. Default
	// DefaultCheckpointInterval; Kafka
	// log.flush.offset.checkpoint.interval.ms (one minute).
	CheckpointInterval time.Duration

	// fs replaces the file system; tests inject failures through it.
	fs fileSystem
	// preallocBytes is the chunk the active segment is allocated ahead by
	// (partition.allocate): 0 is preallocChunkBytes, negative none.
	// Tests and benchmarks set it; Kafka's log.preallocate is a switch.
	preallocBytes int64
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	c.Settings = c.Settings.WithDefaults()
	if c.RetentionBytes == 0 {
		c.RetentionBytes = -1 // unlimited, as retain reads it
	}
	if c.MaxUncompressedBytes == 0 {
		c.MaxUncompressedBytes = DefaultUncompressedFactor * int64(c.MaxMessageBytes)
	}
	if c.MessageTimestampAfterMax == 0 {
		c.MessageTimestampAfterMax = DefaultTimestampAfterMax
	}
	if c.MaxProducers == 0 {
		c.MaxProducers = DefaultMaxProducers
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.CheckpointInterval <= 0 {
		c.CheckpointInterval = DefaultCheckpointInterval
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.preallocBytes == 0 {
		c.preallocBytes = preallocChunkBytes
	}
	if c.fs == nil {
		if c.Dir == "" {
			c.fs = newMemFS()
		} else {
			c.fs = osFS{}
		}
	}
	return c
}

// Validate checks the ranges of c's fields; zero fields are valid (they
// mean the default).
func (c Config) Validate() error {
	if err := c.Settings.Validate(); err != nil {
		return err
	}
	var errs []error
	if c.MaxUncompressedBytes < 0 {
		errs = append(errs, fmt.Errorf("MaxUncompressedBytes %d is negative", c.MaxUncompressedBytes))
	}
	if c.MaxProducers < 0 {
		errs = append(errs, fmt.Errorf("MaxProducers %d is negative", c.MaxProducers))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("records: invalid config: %w", err)
	}
	return nil
}

// timestampBounds returns the oldest and newest record timestamps (Unix
// milliseconds) accepted at now, with math.MinInt64 and math.MaxInt64 for
// "no limit". LogValidator.recordHasInvalidTimestamp compares the same
// differences.
func (c Config) timestampBounds(now int64) (lo, hi int64) {
	lo, hi = math.MinInt64, math.MaxInt64
	if before := c.MessageTimestampBeforeMax.Milliseconds(); before > 0 {
		lo = now - before // now >= 0 on any real clock; no overflow
	}
	if after := c.MessageTimestampAfterMax.Milliseconds(); c.MessageTimestampAfterMax >= 0 && after <= math.MaxInt64-now {
		hi = now + after
	}
	return lo, hi
}
