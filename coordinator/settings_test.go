package coordinator

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/settings"
)

// TestSettingsDefaults: WithDefaults fills every zero field with the
// default its doc names; OffsetsRetention stays off.
func TestSettingsDefaults(t *testing.T) {
	t.Parallel()
	require.Equal(t, Settings{
		MinSessionTimeout: 10 * time.Millisecond, MaxSessionTimeout: 30 * time.Minute,
		ConsumerSessionTimeout: 45 * time.Second, ConsumerHeartbeatInterval: 5 * time.Second,
		MaxGroupSize: 1000, MaxGroups: 100_000, MaxMetadataBytes: 4096,
		MaxMemberMetadataBytes: 1 << 20, MaxGroupMetadataBytes: 8 << 20, MaxIDBytes: 255,
	}, Settings{}.WithDefaults())
	require.NoError(t, Settings{}.Validate())
}

// TestSettingsMetadataRelation: the member bound may not pass the group
// bound when both are set; a group bound alone below the member default
// is allowed (the group bound bites first).
func TestSettingsMetadataRelation(t *testing.T) {
	t.Parallel()
	err := Settings{MaxMemberMetadataBytes: 2000, MaxGroupMetadataBytes: 1000}.Validate()
	var se *settings.Error
	require.True(t, errors.As(err, &se))
	require.Equal(t, settings.Error{Scope: "coordinator", Field: "MaxMemberMetadataBytes",
		Problem: "(2000) must be positive and at most MaxGroupMetadataBytes (1000)"}, *se)
	require.NoError(t, Settings{MaxGroupMetadataBytes: 2500}.Validate())
	require.EqualError(t, Settings{MaxGroupMetadataBytes: -1}.Validate(),
		"coordinator: MaxMemberMetadataBytes (1048576) must be positive and at most MaxGroupMetadataBytes (-1)")
}
