package records

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/settings"
)

// TestSettingsDefaults: WithDefaults fills the segment size and the batch
// limit and leaves retention unlimited (0).
func TestSettingsDefaults(t *testing.T) {
	t.Parallel()
	require.Equal(t, Settings{SegmentBytes: 64 << 20, MaxMessageBytes: 1048588}, Settings{}.WithDefaults())
	require.NoError(t, Settings{}.Validate())
}

// TestSettingsErrors: each bad value is the Error of its field.
func TestSettingsErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    Settings
		want settings.Error
	}{
		{Settings{SegmentBytes: 1023}, settings.Error{Scope: "records", Field: "SegmentBytes", Problem: "must be between 1024 and 2147483647, got 1023"}},
		{Settings{SegmentBytes: 1 << 31}, settings.Error{Scope: "records", Field: "SegmentBytes", Problem: "must be between 1024 and 2147483647, got 2147483648"}},
		{Settings{RetentionBytes: -1}, settings.Error{Scope: "records", Field: "RetentionBytes", Problem: "must not be negative (0: unlimited), got -1"}},
		{Settings{MaxMessageBytes: 60}, settings.Error{Scope: "records", Field: "MaxMessageBytes", Problem: "must be between 61 and 2147483647, got 60"}},
	} {
		var se *settings.Error
		err := Config{Settings: tc.s}.Validate()
		require.True(t, errors.As(err, &se), "%v", err)
		require.Equal(t, tc.want, *se)
	}
}
