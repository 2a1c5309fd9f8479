package settings

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSplitHostPort(t *testing.T) {
	t.Parallel()
	host, port, err := SplitHostPort("kafka.example:9092")
	require.NoError(t, err)
	require.Equal(t, "kafka.example", host)
	require.Equal(t, uint16(9092), port)
	host, port, err = SplitHostPort(":0")
	require.NoError(t, err)
	require.Equal(t, "", host)
	require.Zero(t, port)
	_, port, err = SplitHostPort("[::1]:65535")
	require.NoError(t, err)
	require.Equal(t, uint16(65535), port)
	for addr, want := range map[string]error{
		"nohost": ErrNotHostPort, "kafka.example:": ErrNotHostPort, "": ErrNotHostPort,
		"h:65536": ErrPort, "h:kafka": ErrPort, "h:-1": ErrPort,
	} {
		_, _, err := SplitHostPort(addr)
		require.ErrorIs(t, err, want, addr)
	}
}

func TestCheckHostPort(t *testing.T) {
	t.Parallel()
	require.NoError(t, CheckHostPort("broker", "Listen", ""))
	require.NoError(t, CheckHostPort("broker", "Listen", "127.0.0.1:0"))
	err := CheckHostPort("broker", "Advertise", "nohost")
	require.EqualError(t, err, `broker: Advertise must be HOST:PORT, got "nohost"`)
	var se *Error
	require.True(t, errors.As(err, &se))
	require.Equal(t, Error{Scope: "broker", Field: "Advertise", Problem: `must be HOST:PORT, got "nohost"`}, *se)
	require.EqualError(t, CheckHostPort("broker", "Listen", "127.0.0.1:99999"),
		`broker: Listen "127.0.0.1:99999": the port must be a number from 0 to 65535`)
}
