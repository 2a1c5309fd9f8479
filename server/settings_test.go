package server

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/settings"
	"github.com/minibroker/minibroker/protocol"
)

// TestSettingsDefaults: WithDefaults fills every zero field with the
// default its doc names, and keeps what is set.
func TestSettingsDefaults(t *testing.T) {
	t.Parallel()
	require.Equal(t, Settings{
		DefaultPartitions: 1, MaxFetchBytes: 55 << 20, MaxFetchWait: 5 * time.Second,
		MaxFrameBytes: protocol.DefaultMaxFrameBytes, MaxInFlightBytes: 128 << 20,
		MaxConnections: 10_000, IdleTimeout: 10 * time.Minute, FrameReadTimeout: 30 * time.Second,
		FailedAuthenticationDelay: 100 * time.Millisecond,
	}, Settings{}.WithDefaults())
	require.Equal(t, 3*time.Second, Settings{MaxFetchWait: 3 * time.Second}.WithDefaults().MaxFetchWait)
	require.NoError(t, Settings{}.Validate())
}

// TestSettingsErrorNamesTheField: Validate's error says which field is
// wrong, for the command to name its flag.
func TestSettingsErrorNamesTheField(t *testing.T) {
	t.Parallel()
	var se *settings.Error
	err := Settings{MaxFetchWait: -time.Second}.Validate()
	require.True(t, errors.As(err, &se))
	require.Equal(t, settings.Error{Scope: "server", Field: "MaxFetchWait", Problem: "must be positive, got -1s"}, *se)
	// The budget is checked against the frame cap's default too.
	err = Settings{MaxInFlightBytes: 1 << 20}.Validate()
	require.EqualError(t, err, "server: MaxInFlightBytes (1048576) must be at least MaxFrameBytes (16777216): a largest request could never be read")
}

// TestFailedAuthenticationDelaySetting: 100 ms by default, or half
// FrameReadTimeout when that is shorter; a negative delay is off; a
// delay given must be below FrameReadTimeout.
func TestFailedAuthenticationDelaySetting(t *testing.T) {
	t.Parallel()
	require.Equal(t, 100*time.Millisecond, Settings{}.WithDefaults().FailedAuthenticationDelay)
	require.Equal(t, 40*time.Millisecond, Settings{FrameReadTimeout: 80 * time.Millisecond}.WithDefaults().FailedAuthenticationDelay)
	require.NoError(t, Settings{FrameReadTimeout: 80 * time.Millisecond}.Validate())
	require.Equal(t, -time.Nanosecond, Settings{FailedAuthenticationDelay: -1}.WithDefaults().FailedAuthenticationDelay)
	require.NoError(t, Settings{FailedAuthenticationDelay: -1}.Validate())
	require.NoError(t, Settings{FailedAuthenticationDelay: 29 * time.Second}.Validate())
	require.EqualError(t, Settings{FailedAuthenticationDelay: time.Second, FrameReadTimeout: time.Second}.Validate(),
		"server: FailedAuthenticationDelay (1s) must be below FrameReadTimeout (1s), within which a connection must authenticate")
}
