package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/protocol"
)

func TestApiVersionsAdvertisesTheTable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for v := int16(0); v <= 4; v++ {
		resp := call[*kmsg.ApiVersionsResponse](e, "c", apiVersionsRequest(v))
		assert.Zero(t, resp.ErrorCode, "v%d", v)
		var got []protocol.VersionRange
		for _, k := range resp.ApiKeys {
			got = append(got, protocol.VersionRange{Key: k.ApiKey, Min: k.MinVersion, Max: k.MaxVersion})
		}
		assert.Equal(t, protocol.SupportedVersions(), got, "v%d", v)
	}
}

// TestApiVersionsAdvertisesRecords: Produce v3+ beside Fetch v4+, which
// is what makes librdkafka use record batches and fetch at all.
func TestApiVersionsAdvertisesRecords(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	resp := call[*kmsg.ApiVersionsResponse](e, "c", apiVersionsRequest(4))
	got := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	assert.Equal(t, [2]int16{3, 12}, got[int16(kmsg.Produce)])
	assert.Equal(t, [2]int16{4, 12}, got[int16(kmsg.Fetch)])
	assert.Equal(t, [2]int16{0, 7}, got[int16(kmsg.ListOffsets)])
	assert.Equal(t, [2]int16{0, 4}, got[int16(kmsg.InitProducerID)])
}

// TestApiVersionsAdvertisesKIP848: kgo speaks the consumer protocol only to
// a broker that advertises ConsumerGroupHeartbeat v1 (should848).
func TestApiVersionsAdvertisesKIP848(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	resp := call[*kmsg.ApiVersionsResponse](e, "c", apiVersionsRequest(4))
	var got []kmsg.ApiVersionsResponseApiKey
	for _, k := range resp.ApiKeys {
		if k.ApiKey == int16(kmsg.ConsumerGroupHeartbeat) || k.ApiKey == int16(kmsg.ConsumerGroupDescribe) {
			got = append(got, kmsg.ApiVersionsResponseApiKey{ApiKey: k.ApiKey, MinVersion: k.MinVersion, MaxVersion: k.MaxVersion})
		}
	}
	assert.Equal(t, []kmsg.ApiVersionsResponseApiKey{{ApiKey: 68, MinVersion: 0, MaxVersion: 1}, {ApiKey: 69, MinVersion: 0, MaxVersion: 1}}, got)
}

// TestApiVersionsSoftwareName follows Kafka's ApiVersionsRequest.isValid:
// a bad client software name or version is INVALID_REQUEST, answered.
func TestApiVersionsSoftwareName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name, software, version string
		want                    int16
	}{
		{"kgo", "kgo", "v1.22.3", 0},
		{"dashes and dots", "apache-kafka-java", "3.9.0-SNAPSHOT", 0},
		{"empty name", "", "1.0", kerr.InvalidRequest.Code},
		{"empty version", "kgo", "", kerr.InvalidRequest.Code},
		{"space", "my client", "1.0", kerr.InvalidRequest.Code},
		{"trailing dash", "kgo-", "1.0", kerr.InvalidRequest.Code},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := apiVersionsRequest(3)
			req.ClientSoftwareName, req.ClientSoftwareVersion = tc.software, tc.version
			resp := call[*kmsg.ApiVersionsResponse](e, "c", req)
			assert.Equal(t, tc.want, resp.ErrorCode)
			require.NotEmpty(t, resp.ApiKeys, "the table goes out either way")
		})
	}
	req := apiVersionsRequest(2)
	req.ClientSoftwareName = ""
	assert.Zero(t, call[*kmsg.ApiVersionsResponse](e, "c", req).ErrorCode, "before v3 there is no name to check")
}
