package records

import (
	"math"

	"github.com/minibroker/minibroker/internal/settings"
)

// Settings are the partition logs' user settings, each a `minibroker
// serve` flag (its tags). Zero fields mean the default; Validate is their
// one check.
type Settings struct {
	// SegmentBytes is the size at which the active segment rolls: a batch
	// that would take the segment past it starts a new segment (a batch
	// is never split, so a segment holding one batch may be larger).
	// Bytes; default DefaultSegmentBytes (64 MiB); Kafka log.segment.bytes
	// (default 1 GiB). At least MinSegmentBytes, at most 2^31-1.
	SegmentBytes int64 `flag:"segment-bytes" help:"size at which a partition's active segment file rolls, in bytes (Kafka's log.segment.bytes)"`
	// RetentionBytes bounds each partition's size: whole oldest segments,
	// never the active one, are deleted while the partition would still
	// hold at least RetentionBytes without them, and the log start offset
	// moves past them. Bytes per partition; 0, the default: unlimited
	// (Kafka log.retention.bytes, whose -1 is our 0).
	RetentionBytes int64 `flag:"retention-bytes" help:"bytes each partition keeps; older whole segments are deleted; 0: unlimited (Kafka's log.retention.bytes)"`
	// MaxMessageBytes is the largest batch accepted, header included.
	// Bytes; default DefaultMaxMessageBytes (1048588); Kafka
	// message.max.bytes. At least MinMaxMessageBytes.
	MaxMessageBytes int32 `flag:"max-message-bytes" help:"largest record batch a producer may send, in bytes; more gets MESSAGE_TOO_LARGE (Kafka's message.max.bytes)"`
	// AcceptDataLoss lets Open start although a partition holds less
	// than the checkpoint says was acknowledged (ErrDataLoss): each loss
	// is logged at Error and the log is taken as it is. The broker also
	// lets it start with the catalog and the logs disagreeing. Default
	// false: start-up refuses and says what is missing. Kafka has no such
	// switch (its unclean recovery truncates).
	AcceptDataLoss bool `flag:"accept-data-loss" help:"start even though acknowledged records are missing from the data dir (start-up refuses by default and names what is missing); each loss is logged at Error"`
}

// WithDefaults returns s with every zero field set to its default.
// RetentionBytes's default is zero: unlimited.
func (s Settings) WithDefaults() Settings {
	if s.SegmentBytes == 0 {
		s.SegmentBytes = DefaultSegmentBytes
	}
	if s.MaxMessageBytes == 0 {
		s.MaxMessageBytes = DefaultMaxMessageBytes
	}
	return s
}

// Validate checks the settings' ranges, a zero field standing for its
// default. Its errors are *settings.Error.
func (s Settings) Validate() error {
	d := s.WithDefaults()
	switch {
	case d.SegmentBytes < MinSegmentBytes || d.SegmentBytes > math.MaxInt32:
		return settings.Errorf("records", "SegmentBytes", "must be between %d and %d, got %d", MinSegmentBytes, math.MaxInt32, s.SegmentBytes)
	case d.RetentionBytes < 0:
		return settings.Errorf("records", "RetentionBytes", "must not be negative (0: unlimited), got %d", s.RetentionBytes)
	case d.MaxMessageBytes < MinMaxMessageBytes:
		return settings.Errorf("records", "MaxMessageBytes", "must be between %d and %d, got %d", MinMaxMessageBytes, math.MaxInt32, s.MaxMessageBytes)
	}
	return nil
}
