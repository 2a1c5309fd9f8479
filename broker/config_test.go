package broker

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/testutil"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	pki := testutil.NewPKI(t)
	cases := []struct {
		name string
		cfg  Config
		want string // "" for a valid config
	}{
		{"zero config", Config{}, ""},
		{"every address and TLS", Config{
			Listen: "127.0.0.1:0", Advertise: "kafka.example:9092", Admin: "127.0.0.1:0",
			ExpiryInterval: time.Second, Topics: map[string]int32{"orders": 4}, TLS: pki.ServerConfig(true),
		}, ""},
		{"advertise without port", Config{Advertise: "nohost"}, "Advertise must be HOST:PORT"},
		{"advertise with an empty port", Config{Advertise: "kafka.example:"}, "Advertise must be HOST:PORT"},
		{"admin without port", Config{Admin: "nope"}, "Admin must be HOST:PORT"},
		{"listen port out of range", Config{Listen: "127.0.0.1:99999"}, `Listen "127.0.0.1:99999": the port must be a number from 0 to 65535`},
		{"listen without port", Config{Listen: "127.0.0.1"}, "Listen must be HOST:PORT"},
		{"advertise port by name", Config{Advertise: "kafka.example:kafka"}, "the port must be a number"},
		{"admin off loopback without a token", Config{Admin: "0.0.0.0:0"}, "needs an AdminToken"},
		{"admin on all interfaces without a token", Config{Admin: ":0"}, "needs an AdminToken"},
		{"admin off loopback with a token", Config{Admin: "0.0.0.0:0", AdminToken: "t"}, ""},
		{"admin on localhost", Config{Admin: "localhost:0"}, ""},
		{"negative expiry", Config{ExpiryInterval: -time.Second}, "must not be negative"},
		{"consumer heartbeat above the session", Config{ConsumerSessionTimeout: time.Second, ConsumerHeartbeatInterval: 2 * time.Second}, "must be below"},
		{"zero partitions", Config{Topics: map[string]int32{"t": 0}}, "want at least 1"},
		{"negative offsets retention", Config{OffsetsRetention: -time.Hour}, "OffsetsRetention -1h0m0s must not be negative"},
		{"offsets retention", Config{OffsetsRetention: 7 * 24 * time.Hour}, ""},
		{"TLS without a certificate", Config{TLS: &tls.Config{}}, "holds no certificate"},
		{"SASL users", Config{SASLUsers: map[string]string{"alice": "a:b"}}, ""},
		{"SASL user without a password", Config{SASLUsers: map[string]string{"alice": ""}}, `broker: server: SASL user "alice" has an empty password`},
		{"SASL user without a name", Config{SASLUsers: map[string]string{"": "x"}}, "broker: server: a SASL user has an empty name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.cfg.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}
