package broker

import (
	"crypto/tls"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/settings"
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
			Listen: "127.0.0.1:0", Advertise: "kafka.example:9092", Admin: "127.0.0.1:0", AdminAPI: stubAdmin,
			ExpiryInterval: time.Second, Topics: map[string]int32{"orders": 4}, TLS: pki.ServerConfig(true),
		}, ""},
		{"advertise without port", Config{Advertise: "nohost"}, `broker: Advertise must be HOST:PORT, got "nohost"`},
		{"advertise with an empty port", Config{Advertise: "kafka.example:"}, "Advertise must be HOST:PORT"},
		{"admin without port", Config{Admin: "nope", AdminAPI: stubAdmin}, "Admin must be HOST:PORT"},
		{"admin without the admin API", Config{Admin: "127.0.0.1:0"}, `broker: AdminAPI must be set to serve Admin "127.0.0.1:0": adminapi.New, of package github.com/minibroker/minibroker/broker/adminapi`},
		{"listen port out of range", Config{Listen: "127.0.0.1:99999"}, `Listen "127.0.0.1:99999": the port must be a number from 0 to 65535`},
		{"listen without port", Config{Listen: "127.0.0.1"}, "Listen must be HOST:PORT"},
		{"advertise port by name", Config{Advertise: "kafka.example:kafka"}, "the port must be a number"},
		{"admin off loopback without a token", Config{Admin: "0.0.0.0:0", AdminAPI: stubAdmin}, "needs an AdminToken"},
		{"admin on all interfaces without a token", Config{Admin: ":0", AdminAPI: stubAdmin}, "needs an AdminToken"},
		{"admin off loopback with a token", Config{Admin: "0.0.0.0:0", AdminToken: "t", AdminAPI: stubAdmin}, ""},
		{"admin on localhost", Config{Admin: "localhost:0", AdminAPI: stubAdmin}, ""},
		{"negative expiry", Config{ExpiryInterval: -time.Second}, "broker: ExpiryInterval must be positive, got -1s"},
		{"server settings", Config{ServerSettings: ServerSettings{MaxFetchWait: -time.Second}}, "broker: server: MaxFetchWait must be positive, got -1s"},
		{"records settings", Config{RecordSettings: RecordSettings{RetentionBytes: -1}}, "broker: records: RetentionBytes must not be negative (0: unlimited), got -1"},
		{"transaction settings", Config{TransactionSettings: TransactionSettings{TransactionMaxTimeout: -time.Minute}}, "broker: txn: TransactionMaxTimeout must be positive, got -1m0s"},
		{"default partitions past the catalog's", Config{ServerSettings: ServerSettings{DefaultPartitions: 100_001}}, "broker: server: DefaultPartitions must be between 1 and 100000, got 100001"},
		{"consumer heartbeat above the session", Config{GroupSettings: GroupSettings{ConsumerSessionTimeout: time.Second, ConsumerHeartbeatInterval: 2 * time.Second}}, "broker: coordinator: ConsumerHeartbeatInterval (2s) must be positive and below ConsumerSessionTimeout (1s)"},
		{"zero partitions", Config{Topics: map[string]int32{"t": 0}}, "want at least 1"},
		{"topic configs", Config{Topics: map[string]int32{"t": 1}, TopicConfigs: map[string]map[string]string{"t": {"retention.bytes": "1024"}}}, ""},
		{"configs of a topic not configured", Config{TopicConfigs: map[string]map[string]string{"t": {"retention.bytes": "1024"}}}, `broker: TopicConfigs names topic "t", which Topics does not`},
		{"unknown topic config", Config{Topics: map[string]int32{"t": 1}, TopicConfigs: map[string]map[string]string{"t": {"cleanup.policy": "compact"}}}, `broker: topic "t": invalid config: Unknown topic config name: cleanup.policy`},
		{"bad topic config value", Config{Topics: map[string]int32{"t": 1}, TopicConfigs: map[string]map[string]string{"t": {"max.message.bytes": "x"}}}, `broker: topic "t": invalid config: Invalid value x for configuration max.message.bytes: Not a number of type INT`},
		{"negative offsets retention", Config{GroupSettings: GroupSettings{OffsetsRetention: -time.Hour}}, "broker: coordinator: OffsetsRetention must not be negative, got -1h0m0s"},
		{"offsets retention", Config{GroupSettings: GroupSettings{OffsetsRetention: 7 * 24 * time.Hour}}, ""},
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

// TestConfigSettingsErrorNamesTheField: an invalid setting, the broker's
// own or a package's, is a *settings.Error naming its Go field, which the
// command turns into its flag.
func TestConfigSettingsErrorNamesTheField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{Listen: "127.0.0.1"}, "Listen"},
		{Config{ExpiryInterval: -1}, "ExpiryInterval"},
		{Config{ServerSettings: ServerSettings{MaxConnections: -1}}, "MaxConnections"},
		{Config{GroupSettings: GroupSettings{MaxGroups: -1}}, "MaxGroups"},
		{Config{RecordSettings: RecordSettings{SegmentBytes: 1}}, "SegmentBytes"},
		{Config{TransactionSettings: TransactionSettings{TransactionMaxTimeout: -1}}, "TransactionMaxTimeout"},
	} {
		var se *settings.Error
		require.True(t, errors.As(tc.cfg.Validate(), &se), tc.field)
		require.Equal(t, tc.field, se.Field)
	}
}

// TestConfigWithDefaults: WithDefaults fills each package's defaults and
// the broker's, and keeps what is set.
func TestConfigWithDefaults(t *testing.T) {
	t.Parallel()
	cfg := Config{Listen: "[::1]:0", ServerSettings: ServerSettings{MaxFetchWait: time.Second}}.WithDefaults()
	require.Equal(t, "[::1]:0", cfg.Listen)
	require.Equal(t, DefaultExpiryInterval, cfg.ExpiryInterval)
	require.Equal(t, time.Second, cfg.MaxFetchWait)
	require.Equal(t, 10*time.Minute, cfg.IdleTimeout)
	require.Equal(t, 45*time.Second, cfg.ConsumerSessionTimeout)
	require.Equal(t, int64(64<<20), cfg.SegmentBytes)
	require.Zero(t, cfg.RetentionBytes, "unlimited")
	require.Equal(t, 15*time.Minute, cfg.TransactionMaxTimeout)
	require.NoError(t, cfg.Validate())
}
