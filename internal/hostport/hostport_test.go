package hostport

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/settings"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	host, port, err := Split("kafka.example:9092")
	require.NoError(t, err)
	require.Equal(t, "kafka.example", host)
	require.Equal(t, uint16(9092), port)
	host, port, err = Split(":0")
	require.NoError(t, err)
	require.Equal(t, "", host)
	require.Zero(t, port)
	_, port, err = Split("[::1]:65535")
	require.NoError(t, err)
	require.Equal(t, uint16(65535), port)
	for addr, want := range map[string]error{
		"nohost": ErrNotHostPort, "kafka.example:": ErrNotHostPort, "": ErrNotHostPort,
		"h:65536": ErrPort, "h:kafka": ErrPort, "h:-1": ErrPort,
	} {
		_, _, err := Split(addr)
		require.ErrorIs(t, err, want, addr)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	require.NoError(t, Check("broker", "Listen", ""))
	require.NoError(t, Check("broker", "Listen", "127.0.0.1:0"))
	err := Check("broker", "Advertise", "nohost")
	require.EqualError(t, err, `broker: Advertise must be HOST:PORT, got "nohost"`)
	var se *settings.Error
	require.True(t, errors.As(err, &se))
	require.Equal(t, settings.Error{Scope: "broker", Field: "Advertise", Problem: `must be HOST:PORT, got "nohost"`}, *se)
	require.EqualError(t, Check("broker", "Listen", "127.0.0.1:99999"),
		`broker: Listen "127.0.0.1:99999": the port must be a number from 0 to 65535`)
}
