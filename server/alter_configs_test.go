package server

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

func set(name, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr(value)}
}

func del(name string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: kmsg.IncrementalAlterConfigOpDelete}
}

func incrementalAlter(validateOnly bool, topic string, configs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) *kmsg.IncrementalAlterConfigsRequest {
	return incrementalAlterOf(validateOnly, kmsg.IncrementalAlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: topic, Configs: configs})
}

func incrementalAlterOf(validateOnly bool, resources ...kmsg.IncrementalAlterConfigsRequestResource) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version, req.ValidateOnly, req.Resources = 1, validateOnly, resources
	return req
}

func alterConfigs(validateOnly bool, typ kmsg.ConfigResourceType, name string, kv ...string) *kmsg.AlterConfigsRequest {
	req := kmsg.NewPtrAlterConfigsRequest()
	req.Version, req.ValidateOnly = 2, validateOnly
	res := kmsg.AlterConfigsRequestResource{ResourceType: typ, ResourceName: name}
	for i := 0; i+1 < len(kv); i += 2 {
		res.Configs = append(res.Configs, kmsg.AlterConfigsRequestResourceConfig{Name: kv[i], Value: kmsg.StringPtr(kv[i+1])})
	}
	req.Resources = []kmsg.AlterConfigsRequestResource{res}
	return req
}

// ownConfigs returns topic's own configs as the catalog holds them.
func (e *env) ownConfigs(topic string) map[string]string {
	t, ok := e.cat.Lookup(topic)
	require.True(e.t, ok)
	return t.Configs
}

// TestIncrementalAlterConfigs sets and deletes topic configs: the catalog
// holds the topic's own values, the log runs with them at once (a batch
// over the new limit is MESSAGE_TOO_LARGE on that topic only), DELETE
// takes one back to the default, DELETE of a name the topic does not set
// changes nothing, and validateOnly changes nothing.
func TestIncrementalAlterConfigs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := wiretest.Dial(t, e.serve(), "admin")
	def := e.log.Defaults()
	resp := wiretest.Do[*kmsg.IncrementalAlterConfigsResponse](t, c, incrementalAlter(false, "orders",
		set("segment.bytes", " 1048576 "), set("retention.bytes", "-5"), set("max.message.bytes", "100")))
	require.Equal(t, int16(0), resp.Resources[0].ErrorCode)
	require.Nil(t, resp.Resources[0].ErrorMessage)
	require.Equal(t, map[string]string{"segment.bytes": "1048576", "retention.bytes": "-5", "max.message.bytes": "100"}, e.ownConfigs("orders"))
	require.Equal(t, records.TopicSettings{SegmentBytes: 1048576, RetentionBytes: -1, MaxMessageBytes: 100}, e.log.Settings("orders"))
	require.Equal(t, def, e.log.Settings("payments"))

	big := batch("a value long enough to pass one hundred bytes with its header, sixty-one of them, and a little more")
	require.Greater(t, len(big), 100)
	produced := wiretest.Do[*kmsg.ProduceResponse](t, c, produceRequest(9, "orders", map[int32][]byte{0: big}))
	require.Equal(t, kerr.MessageTooLarge.Code, produced.Topics[0].Partitions[0].ErrorCode)
	produced = wiretest.Do[*kmsg.ProduceResponse](t, c, produceRequest(9, "payments", map[int32][]byte{0: big}))
	require.Equal(t, int16(0), produced.Topics[0].Partitions[0].ErrorCode)

	resp = wiretest.Do[*kmsg.IncrementalAlterConfigsResponse](t, c, incrementalAlter(false, "orders", del("max.message.bytes"), del("cleanup.policy")))
	require.Equal(t, int16(0), resp.Resources[0].ErrorCode)
	require.Equal(t, map[string]string{"segment.bytes": "1048576", "retention.bytes": "-5"}, e.ownConfigs("orders"))
	require.Equal(t, def.MaxMessageBytes, e.log.Settings("orders").MaxMessageBytes)
	produced = wiretest.Do[*kmsg.ProduceResponse](t, c, produceRequest(9, "orders", map[int32][]byte{0: big}))
	require.Equal(t, int16(0), produced.Topics[0].Partitions[0].ErrorCode)

	resp = wiretest.Do[*kmsg.IncrementalAlterConfigsResponse](t, c, incrementalAlter(true, "orders", set("segment.bytes", "2097152"), del("retention.bytes")))
	require.Equal(t, int16(0), resp.Resources[0].ErrorCode)
	require.Equal(t, map[string]string{"segment.bytes": "1048576", "retention.bytes": "-5"}, e.ownConfigs("orders"), "validateOnly changes nothing")
	require.Equal(t, int64(1048576), e.log.Settings("orders").SegmentBytes)
}

// TestAlterConfigsReplaces: AlterConfigs replaces the whole set (what it
// does not name goes back to the default), validateOnly changes nothing,
// a null value is INVALID_REQUEST, a bad value INVALID_CONFIG.
func TestAlterConfigsReplaces(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := wiretest.Dial(t, e.serve(), "admin")
	wiretest.Do[*kmsg.IncrementalAlterConfigsResponse](t, c, incrementalAlter(false, "orders", set("segment.bytes", "1048576"), set("retention.bytes", "4096")))
	for v := int16(0); v <= 2; v++ {
		req := alterConfigs(false, kmsg.ConfigResourceTypeTopic, "orders", "max.message.bytes", fmt.Sprint(2048+v))
		req.Version = v
		resp := wiretest.Do[*kmsg.AlterConfigsResponse](t, c, req)
		require.Equal(t, int16(0), resp.Resources[0].ErrorCode, "v%d", v)
		require.Equal(t, map[string]string{"max.message.bytes": fmt.Sprint(2048 + v)}, e.ownConfigs("orders"))
	}
	require.Equal(t, records.TopicSettings{SegmentBytes: e.log.Defaults().SegmentBytes, RetentionBytes: -1, MaxMessageBytes: 2050}, e.log.Settings("orders"))

	resp := wiretest.Do[*kmsg.AlterConfigsResponse](t, c, alterConfigs(true, kmsg.ConfigResourceTypeTopic, "orders"))
	require.Equal(t, int16(0), resp.Resources[0].ErrorCode)
	require.Equal(t, map[string]string{"max.message.bytes": "2050"}, e.ownConfigs("orders"), "validateOnly changes nothing")

	null := alterConfigs(false, kmsg.ConfigResourceTypeTopic, "orders")
	null.Resources[0].Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "segment.bytes"}}
	resp = wiretest.Do[*kmsg.AlterConfigsResponse](t, c, null)
	require.Equal(t, kerr.InvalidRequest.Code, resp.Resources[0].ErrorCode)
	require.Equal(t, "INVALID_REQUEST: This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.: Null value not supported for : segment.bytes", *resp.Resources[0].ErrorMessage)
	resp = wiretest.Do[*kmsg.AlterConfigsResponse](t, c, alterConfigs(false, kmsg.ConfigResourceTypeTopic, "orders", "segment.bytes", "12"))
	require.Equal(t, kerr.InvalidConfig.Code, resp.Resources[0].ErrorCode)
	resp = wiretest.Do[*kmsg.AlterConfigsResponse](t, c, alterConfigs(false, kmsg.ConfigResourceTypeBroker, "0", "log.segment.bytes", "1048576"))
	require.Equal(t, kerr.InvalidRequest.Code, resp.Resources[0].ErrorCode)
	resp = wiretest.Do[*kmsg.AlterConfigsResponse](t, c, alterConfigs(false, kmsg.ConfigResourceTypeTopic, "nope", "segment.bytes", "1048576"))
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Resources[0].ErrorCode)
	require.Equal(t, map[string]string{"max.message.bytes": "2050"}, e.ownConfigs("orders"))
}

// TestIncrementalAlterConfigsCodes sends one refused change per resource
// and checks each code and message; none changes anything.
func TestIncrementalAlterConfigsCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := wiretest.Dial(t, e.serve(), "admin")
	topic := func(name string, configs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsRequestResource {
		return kmsg.IncrementalAlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: name, Configs: configs}
	}
	broker := func(name string, configs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsRequestResource {
		return kmsg.IncrementalAlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: name, Configs: configs}
	}
	appendOp := kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "segment.bytes", Op: kmsg.IncrementalAlterConfigOpAppend, Value: kmsg.StringPtr("1")}
	subtract := kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "retention.bytes", Op: kmsg.IncrementalAlterConfigOpSubtract, Value: kmsg.StringPtr("1")}
	unknownOp := kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "segment.bytes", Op: 7, Value: kmsg.StringPtr("1")}
	nullSet := kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "segment.bytes", Op: kmsg.IncrementalAlterConfigOpSet}
	cases := []struct {
		res  kmsg.IncrementalAlterConfigsRequestResource
		code int16
		msg  string
	}{
		{topic("orders", set("cleanup.policy", "compact")), kerr.InvalidConfig.Code, "Unknown topic config name: cleanup.policy"},
		{topic("orders", set("segment.bytes", "big")), kerr.InvalidConfig.Code, "Invalid value big for configuration segment.bytes: Not a number of type INT"},
		{topic("orders", set("segment.bytes", "-1")), kerr.InvalidConfig.Code, "Invalid value -1 for configuration segment.bytes: Value must be at least 1024"},
		{topic("orders", set("segment.bytes", "2147483648")), kerr.InvalidConfig.Code, "Not a number of type INT"},
		{topic("orders", set("max.message.bytes", "-100")), kerr.InvalidConfig.Code, "Value must be at least 61"},
		{topic("orders", set("retention.bytes", "1e9")), kerr.InvalidConfig.Code, "Not a number of type LONG"},
		{topic("orders", appendOp), kerr.InvalidConfig.Code, "Can't APPEND to key segment.bytes because its type is not LIST"},
		{topic("orders", subtract), kerr.InvalidConfig.Code, "Can't SUBTRACT to key retention.bytes because its type is not LIST"},
		{topic("orders", unknownOp), kerr.InvalidRequest.Code, "Unknown operations type 7"},
		{topic("orders", nullSet), kerr.InvalidRequest.Code, "Null value not supported for : segment.bytes"},
		{topic("orders", set("segment.bytes", "1048576"), del("segment.bytes")), kerr.InvalidRequest.Code, "Error due to duplicate config keys"},
		{topic("nope", set("segment.bytes", "1048576")), kerr.UnknownTopicOrPartition.Code, "The topic 'nope' does not exist"},
		{topic("nope", set("segment.bytes", "1")), kerr.InvalidConfig.Code, "Value must be at least 1024"},
		{topic("../x", set("segment.bytes", "1048576")), kerr.InvalidTopicException.Code, `"../x"`},
		{topic("", set("segment.bytes", "1048576")), kerr.InvalidRequest.Code, "Default topic resources are not allowed"},
		{broker("0", set("log.segment.bytes", "1048576"), del("message.max.bytes")), kerr.InvalidRequest.Code, "Cannot update these configs dynamically: [log.segment.bytes, message.max.bytes]"},
		{broker("", set("num.partitions", "3")), kerr.InvalidRequest.Code, "Cannot update these configs dynamically: [num.partitions]"},
		{broker("1", set("num.partitions", "3")), kerr.InvalidRequest.Code, "Unexpected broker id, expected 0, but received 1"},
		{broker("one"), kerr.InvalidRequest.Code, "Node id must be an integer, but it is: one"},
		{kmsg.IncrementalAlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "g"}, kerr.InvalidRequest.Code, "Unsupported resource type 32"},
	}
	for _, validateOnly := range []bool{false, true} {
		for _, tc := range cases {
			resp := wiretest.Do[*kmsg.IncrementalAlterConfigsResponse](t, c, incrementalAlterOf(validateOnly, tc.res))
			got := resp.Resources[0]
			require.Equal(t, tc.code, got.ErrorCode, "%+v", tc.res)
			require.NotNil(t, got.ErrorMessage)
			require.Contains(t, *got.ErrorMessage, tc.msg)
			require.Equal(t, tc.res.ResourceName, got.ResourceName)
			require.Equal(t, tc.res.ResourceType, got.ResourceType)
		}
	}
	require.Nil(t, e.ownConfigs("orders"))
	require.Equal(t, e.log.Defaults(), e.log.Settings("orders"))

	empty := wiretest.Do[*kmsg.IncrementalAlterConfigsResponse](t, c, incrementalAlterOf(false, broker("0")))
	require.Equal(t, int16(0), empty.Resources[0].ErrorCode, "no change to the broker is no error")
	twice := wiretest.Do[*kmsg.IncrementalAlterConfigsResponse](t, c, incrementalAlterOf(false,
		topic("orders", set("segment.bytes", "1048576")), topic("payments", set("segment.bytes", "1048576")), topic("orders", del("segment.bytes"))))
	require.Equal(t, []int16{kerr.InvalidRequest.Code, 0, kerr.InvalidRequest.Code},
		[]int16{twice.Resources[0].ErrorCode, twice.Resources[1].ErrorCode, twice.Resources[2].ErrorCode})
	require.Equal(t, "INVALID_REQUEST: This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.: Each resource must appear at most once", *twice.Resources[0].ErrorMessage)
	require.Nil(t, e.ownConfigs("orders"))
	require.Equal(t, map[string]string{"segment.bytes": "1048576"}, e.ownConfigs("payments"))
}

// TestAlterConfigsHugeLists: 20,000 configs of unknown names, or the
// same name 20,000 times, in one resource, and 5,000 resources, are
// answered with their codes and change nothing.
func TestAlterConfigsHugeLists(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := wiretest.Dial(t, e.serve(), "admin")
	var unknown, same []kmsg.IncrementalAlterConfigsRequestResourceConfig
	for i := range 20_000 {
		unknown = append(unknown, set(fmt.Sprintf("no.such.config.%d", i), "1"))
		same = append(same, set("retention.bytes", fmt.Sprint(i)))
	}
	resp := wiretest.Do[*kmsg.IncrementalAlterConfigsResponse](t, c, incrementalAlter(false, "orders", unknown...))
	require.Equal(t, kerr.InvalidConfig.Code, resp.Resources[0].ErrorCode)
	require.Contains(t, *resp.Resources[0].ErrorMessage, "Unknown topic config name: no.such.config.")
	resp = wiretest.Do[*kmsg.IncrementalAlterConfigsResponse](t, c, incrementalAlter(false, "orders", same...))
	require.Equal(t, kerr.InvalidRequest.Code, resp.Resources[0].ErrorCode)
	require.Contains(t, *resp.Resources[0].ErrorMessage, "Error due to duplicate config keys")

	var many []kmsg.IncrementalAlterConfigsRequestResource
	for i := range 5_000 {
		many = append(many, kmsg.IncrementalAlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeTopic,
			ResourceName: fmt.Sprintf("absent-%d", i), Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{set("retention.bytes", "1")}})
	}
	resp = wiretest.Do[*kmsg.IncrementalAlterConfigsResponse](t, c, incrementalAlterOf(false, many...))
	require.Len(t, resp.Resources, 5_000)
	for i, r := range resp.Resources {
		require.Equal(t, kerr.UnknownTopicOrPartition.Code, r.ErrorCode)
		require.Equal(t, fmt.Sprintf("absent-%d", i), r.ResourceName)
	}
	require.Nil(t, e.ownConfigs("orders"))
	require.Len(t, e.cat.List(), 2)
}
