package integration

// Helpers for the admin API tests: the configuration of a broker with the
// admin API on a loopback port (adminConfig, an adjust function of
// startBroker), raw kmsg members, and HTTP calls. Names carry an admin
// prefix so they never clash with the other tests' helpers.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/broker/adminapi"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// adminConfig is the broker of the admin tests, an adjust function of
// startBroker: on a manual clock (Unix 0), in memory, with orders(4) and
// payments(2) and the admin API on a loopback port.
func adminConfig(cfg *broker.Config) {
	cfg.ManualClock, cfg.DataDir = true, ""
	cfg.Topics = map[string]int32{"orders": 4, "payments": 2}
	cfg.Admin, cfg.AdminAPI = "127.0.0.1:0", adminapi.New
}

// adminURL is the base URL of the broker's admin API,
// "http://127.0.0.1:PORT".
func (b *testBroker) adminURL() string { return "http://" + b.AdminAddr() }

// adminJoin joins group over c with a JoinGroup v3, which joins at once
// (no MEMBER_ID_REQUIRED round), subscribing to topics, and requires
// success. An empty member asks for a new id.
func adminJoin(t *testing.T, c *wireclient.Client, group, member string, session time.Duration, topics ...string) *kmsg.JoinGroupResponse {
	t.Helper()
	resp := wiretest.Do[*kmsg.JoinGroupResponse](t, c, wiretest.JoinRequest(3, group, member, session, topics...))
	require.Zero(t, resp.ErrorCode, "join %s", group)
	return resp
}

// adminSync sends the SyncGroup that completes a join, and requires
// success: the member is told its assignment, and knows the generation.
func adminSync(t *testing.T, c *wireclient.Client, group string, joined *kmsg.JoinGroupResponse) {
	t.Helper()
	req := wiretest.SyncRequest(3, group, joined.MemberID, joined.Generation)
	require.Zero(t, wiretest.Do[*kmsg.SyncGroupResponse](t, c, req).ErrorCode, "sync %s", group)
}

// adminCommit commits offset for one partition with an OffsetCommit v8
// and returns the partition's code.
func adminCommit(t *testing.T, c *wireclient.Client, group, member string, generation int32, topic string, partition int32, offset int64) int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group, req.MemberID, req.Generation = group, member, generation
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: partition, Offset: offset}}}}
	return wiretest.Do[*kmsg.OffsetCommitResponse](t, c, req).Topics[0].Partitions[0].ErrorCode
}

// adminProduce appends n records to a partition over c (one batch, acks
// -1) and requires success.
func adminProduce(t *testing.T, c *wireclient.Client, topic string, partition int32, n int) {
	t.Helper()
	spec := records.BatchSpec{FirstTimestamp: time.Now().UnixMilli()}
	for i := range n {
		spec.Records = append(spec.Records, records.Record{Value: []byte("record-" + strconv.Itoa(i))})
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: partition, Records: records.EncodeBatch(spec)}}}}
	require.Zero(t, wiretest.Do[*kmsg.ProduceResponse](t, c, req).Topics[0].Partitions[0].ErrorCode, "produce to %s-%d", topic, partition)
}

// adminFetch fetches a partition from offset over c, without waiting, as a
// consumer on c's connection would, and requires success.
func adminFetch(t *testing.T, c *wireclient.Client, topic string, partition int32, offset int64) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxBytes = 12, 1<<20
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition, p.FetchOffset, p.PartitionMaxBytes = partition, offset, 1<<20
	req.Topics = []kmsg.FetchRequestTopic{{Topic: topic, Partitions: []kmsg.FetchRequestTopicPartition{p}}}
	require.Zero(t, wiretest.Do[*kmsg.FetchResponse](t, c, req).Topics[0].Partitions[0].ErrorCode, "fetch %s-%d at %d", topic, partition, offset)
}

// adminHTTP sends one request to the admin API and returns the status and
// the body.
func adminHTTP(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	require.NoError(t, err)
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json") // as curl -H does in the README
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(data)
}

// adminGetJSON GETs url, requires 200 and decodes the body into v.
func adminGetJSON(t *testing.T, url string, v any) {
	t.Helper()
	code, body := adminHTTP(t, "GET", url, "")
	require.Equal(t, http.StatusOK, code, body)
	require.NoError(t, json.Unmarshal([]byte(body), v), body)
}

// adminScrape reads the admin API's /metrics.
func adminScrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := adminHTTP(t, "GET", base+"/metrics", "")
	require.Equal(t, http.StatusOK, code)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	return fams
}

// adminMetric returns the value of a counter or gauge series, the sample
// count of a histogram; -1 when the series is absent. labels are "k", "v"
// pairs that must match the series' labels exactly.
func adminMetric(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	fam := fams[name]
	if fam == nil {
		return -1
	}
	for _, m := range fam.GetMetric() {
		if len(m.GetLabel())*2 != len(labels) {
			continue
		}
		match := true
		for i, l := range m.GetLabel() {
			match = match && l.GetName() == labels[2*i] && l.GetValue() == labels[2*i+1]
		}
		switch {
		case !match:
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		default:
			return m.GetGauge().GetValue()
		}
	}
	return -1
}
