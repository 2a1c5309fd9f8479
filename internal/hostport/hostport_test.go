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

// TestReachable: a listener bound to every interface is reached on the
// loopback address; any other bound address is itself.
func TestReachable(t *testing.T) {
	t.Parallel()
	for bound, want := range map[string]struct {
		addr string
		all  bool
	}{
		"0.0.0.0:9092":       {"127.0.0.1:9092", true},
		"[::]:9092":          {"127.0.0.1:9092", true},
		":9092":              {"127.0.0.1:9092", true},
		"127.0.0.1:9092":     {"127.0.0.1:9092", false},
		"[::1]:9092":         {"[::1]:9092", false},
		"192.0.2.7:9092":     {"192.0.2.7:9092", false},
		"kafka.example:9092": {"kafka.example:9092", false},
		"nohost":             {"nohost", false},
	} {
		addr, all := Reachable(bound)
		require.Equal(t, want.addr, addr, bound)
		require.Equal(t, want.all, all, bound)
	}
}

// TestIsLoopbackHost: names and addresses that can only mean this
// machine.
func TestIsLoopbackHost(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST": true, "api.localhost": true, "127.0.0.1": true, "127.1.2.3": true, "::1": true,
		"0.0.0.0": false, "::": false, "": false, "kafka.example": false, "192.0.2.7": false, "localhost.example": false,
	} {
		require.Equal(t, want, IsLoopbackHost(host), host)
	}
}
