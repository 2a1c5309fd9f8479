package coordinator

import (
	"time"

	"github.com/minibroker/minibroker/internal/settings"
	"github.com/minibroker/minibroker/offsets"
)

// Settings are the coordinator's user settings, each a `minibroker
// serve` flag (its tags). Zero fields mean the default; Validate is their
// one check.
type Settings struct {
	// MinSessionTimeout and MaxSessionTimeout bound a member's session
	// timeout (Kafka's group.min.session.timeout.ms, default 6 s there;
	// 10 ms here so labs and tests can use short sessions) and
	// group.max.session.timeout.ms (default 30 min, as Kafka).
	MinSessionTimeout time.Duration `flag:"min-session-timeout" help:"smallest session timeout a member may ask for"`
	MaxSessionTimeout time.Duration `flag:"max-session-timeout" help:"largest session timeout a member may ask for"`
	// ConsumerSessionTimeout is the session of every consumer-group
	// (KIP-848) member: a heartbeat renews the lease for this long, and
	// only Expire ends it (Kafka's group.consumer.session.timeout.ms,
	// default 45 s there and here). The client does not choose it.
	ConsumerSessionTimeout time.Duration `flag:"consumer-session-timeout" help:"session of every KIP-848 consumer group member (Kafka's group.consumer.session.timeout.ms)"`
	// ConsumerHeartbeatInterval is the interval each ConsumerGroupHeartbeat
	// response tells the member to heartbeat at (Kafka's
	// group.consumer.heartbeat.interval.ms, default 5 s there and here).
	// It must be below ConsumerSessionTimeout.
	ConsumerHeartbeatInterval time.Duration `flag:"consumer-heartbeat-interval" help:"heartbeat interval KIP-848 members are told to keep; below --consumer-session-timeout (Kafka's group.consumer.heartbeat.interval.ms)"`
	// OffsetsRetention is how long the committed offsets of a group
	// without members are kept (Kafka's offsets.retention.minutes, 7 days
	// there); the expiry step removes them and deletes the group they
	// leave with neither members nor offsets (retention.go). Zero, the
	// default, keeps offsets and groups for ever, as the chapter does.
	OffsetsRetention time.Duration `flag:"offsets-retention" help:"how long an Empty group's committed offsets are kept before the expiry step removes them and deletes the group (Kafka's offsets.retention.minutes); 0 keeps them for ever"`
	// MaxGroupSize caps the members of one group, pending member ids
	// (KIP-394) included: a join that would add one more gets
	// ErrGroupMaxSizeReached (Kafka's group.max.size, default 2147483647
	// there). Default DefaultMaxGroupSize (1000).
	MaxGroupSize int `flag:"max-group-size" help:"members (and pending member ids) per group; more get GROUP_MAX_SIZE_REACHED (Kafka's group.max.size)"`
	// MaxGroups caps the number of groups: those joined and those known
	// only by committed offsets. A join or direct commit that would create
	// one more gets ErrTooManyGroups. Kafka has no such setting. A group
	// deleted (DeleteGroups, or by OffsetsRetention) frees its place.
	// Default DefaultMaxGroups (100,000).
	MaxGroups int `flag:"max-groups" help:"groups in all; a join or commit that would make another gets POLICY_VIOLATION"`
	// MaxMetadataBytes caps the metadata of each committed offset, in
	// bytes (Kafka's offset.metadata.max.bytes, 4096 there): larger gets
	// offsets.ErrMetadataTooLarge. Default, and largest allowed,
	// offsets.MaxMetadataBytes (4096), which the store itself enforces.
	MaxMetadataBytes int `flag:"max-metadata-bytes" help:"largest commit metadata, 1 to 4096 bytes; more gets OFFSET_METADATA_TOO_LARGE (Kafka's offset.metadata.max.bytes)"`
	// MaxMemberMetadataBytes bounds one member's protocol metadata and
	// subscribed topic names, in bytes (ErrMemberMetadataTooLarge);
	// MaxGroupMetadataBytes bounds a group's members' together
	// (ErrGroupMaxSizeReached), and may not be below it when both are
	// set. Kafka has
	// neither. Defaults DefaultMaxMemberMetadataBytes (1 MiB) and
	// DefaultMaxGroupMetadataBytes (8 MiB).
	MaxMemberMetadataBytes int `flag:"max-member-metadata-bytes" help:"one member's protocol metadata and subscribed topic names, in bytes; more gets INVALID_REQUEST"`
	MaxGroupMetadataBytes  int `flag:"max-group-metadata-bytes" help:"a group's members' protocol metadata and subscriptions together, in bytes; a join past it gets GROUP_MAX_SIZE_REACHED"`
	// MaxIDBytes bounds group ids and client ids, in bytes; member ids may
	// be MemberIDSlackBytes longer. Longer ids get ErrInvalidGroupID,
	// ErrInvalidClientID or ErrInvalidMemberID. Kafka bounds them only by
	// the protocol's 32767 bytes. Default DefaultMaxIDBytes (255); at most
	// MaxIDBytesLimit.
	MaxIDBytes int `flag:"max-id-bytes" help:"longest group id and client id, in bytes (member ids: 32 more); longer get INVALID_GROUP_ID or INVALID_REQUEST"`
}

// WithDefaults returns s with every zero field set to its default.
// OffsetsRetention's default is zero: kept for ever.
func (s Settings) WithDefaults() Settings {
	if s.MinSessionTimeout == 0 {
		s.MinSessionTimeout = DefaultMinSessionTimeout
	}
	if s.MaxSessionTimeout == 0 {
		s.MaxSessionTimeout = DefaultMaxSessionTimeout
	}
	if s.ConsumerSessionTimeout == 0 {
		s.ConsumerSessionTimeout = DefaultConsumerSessionTimeout
	}
	if s.ConsumerHeartbeatInterval == 0 {
		s.ConsumerHeartbeatInterval = DefaultConsumerHeartbeatInterval
	}
	if s.MaxGroupSize == 0 {
		s.MaxGroupSize = DefaultMaxGroupSize
	}
	if s.MaxGroups == 0 {
		s.MaxGroups = DefaultMaxGroups
	}
	if s.MaxMetadataBytes == 0 {
		s.MaxMetadataBytes = offsets.MaxMetadataBytes
	}
	if s.MaxMemberMetadataBytes == 0 {
		s.MaxMemberMetadataBytes = DefaultMaxMemberMetadataBytes
	}
	if s.MaxGroupMetadataBytes == 0 {
		s.MaxGroupMetadataBytes = DefaultMaxGroupMetadataBytes
	}
	if s.MaxIDBytes == 0 {
		s.MaxIDBytes = DefaultMaxIDBytes
	}
	return s
}

// Validate checks the settings' ranges and relations, a zero field
// standing for its default. Its errors are *settings.Error.
func (s Settings) Validate() error {
	d := s.WithDefaults()
	const scope = "coordinator"
	switch {
	case d.MinSessionTimeout <= 0 || d.MaxSessionTimeout < d.MinSessionTimeout:
		return settings.Errorf(scope, "MinSessionTimeout", "(%v) must be positive and at most MaxSessionTimeout (%v)", d.MinSessionTimeout, d.MaxSessionTimeout)
	// As Kafka's GroupCoordinatorConfig: a member told to heartbeat no
	// more often than its session lasts would expire between heartbeats.
	case d.ConsumerHeartbeatInterval <= 0 || d.ConsumerSessionTimeout <= d.ConsumerHeartbeatInterval:
		return settings.Errorf(scope, "ConsumerHeartbeatInterval", "(%v) must be positive and below ConsumerSessionTimeout (%v)", d.ConsumerHeartbeatInterval, d.ConsumerSessionTimeout)
	case d.OffsetsRetention < 0:
		return settings.Errorf(scope, "OffsetsRetention", "must not be negative, got %v", s.OffsetsRetention)
	case d.MaxGroupSize < 1:
		return settings.Errorf(scope, "MaxGroupSize", "must be at least 1, got %d", s.MaxGroupSize)
	case d.MaxGroups < 1:
		return settings.Errorf(scope, "MaxGroups", "must be at least 1, got %d", s.MaxGroups)
	case d.MaxMetadataBytes < 1 || d.MaxMetadataBytes > offsets.MaxMetadataBytes:
		return settings.Errorf(scope, "MaxMetadataBytes", "must be between 1 and %d, got %d", offsets.MaxMetadataBytes, s.MaxMetadataBytes)
	case d.MaxMemberMetadataBytes < 1 || d.MaxGroupMetadataBytes < 1 ||
		s.MaxMemberMetadataBytes != 0 && s.MaxGroupMetadataBytes != 0 && s.MaxGroupMetadataBytes < s.MaxMemberMetadataBytes:
		return settings.Errorf(scope, "MaxMemberMetadataBytes", "(%d) must be positive and at most MaxGroupMetadataBytes (%d)", d.MaxMemberMetadataBytes, d.MaxGroupMetadataBytes)
	case d.MaxIDBytes < 1 || d.MaxIDBytes > MaxIDBytesLimit:
		return settings.Errorf(scope, "MaxIDBytes", "must be between 1 and %d, got %d", MaxIDBytesLimit, s.MaxIDBytes)
	}
	return nil
}
