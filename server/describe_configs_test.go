package server

import (
	"testing"

	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeConfigsRequest(version int16, synonyms, docs bool, resources ...kmsg.DescribeConfigsRequestResource) *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version, req.IncludeSynonyms, req.IncludeDocumentation = version, synonyms, docs
	req.Resources = resources
	return req
}

func topicResource(name string, configs ...string) kmsg.DescribeConfigsRequestResource {
	return kmsg.DescribeConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: name, ConfigNames: configs}
}

// configRow is one described config in a comparable form.
type configRow struct {
	Name, Value string
	Source      kmsg.ConfigSource
	ReadOnly    bool
	Default     bool
	Type        kmsg.ConfigType
	Synonyms    []string // "name=value@source"
	Doc         bool
}

func configRows(res kmsg.DescribeConfigsResponseResource) []configRow {
	var out []configRow
	for _, c := range res.Configs {
		row := configRow{Name: c.Name, Value: *c.Value, Source: c.Source, ReadOnly: c.ReadOnly, Default: c.IsDefault, Type: c.ConfigType, Doc: c.Documentation != nil}
		for _, s := range c.ConfigSynonyms {
			row.Synonyms = append(row.Synonyms, s.Name+"="+*s.Value+"@"+s.Source.String())
		}
		out = append(out, row)
	}
	return out
}

// TestDescribeConfigsTopic describes a topic at every version: its three
// configs at the broker's values (DEFAULT_CONFIG, with the broker's
// config as the synonym), a value the topic sets (DYNAMIC_TOPIC_CONFIG,
// its own value first among the synonyms), the type and documentation
// from v3 when asked, IsDefault on v0, and a names filter that leaves out
// an unknown name.
func TestDescribeConfigsTopic(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := wiretest.Dial(t, e.serve(), "admin")
	alter := wiretest.Do[*kmsg.IncrementalAlterConfigsResponse](t, c, incrementalAlter(false, "orders", set("segment.bytes", "1048576")))
	require.Equal(t, int16(0), alter.Resources[0].ErrorCode)
	for v := int16(0); v <= 4; v++ {
		resp := wiretest.Do[*kmsg.DescribeConfigsResponse](t, c, describeConfigsRequest(v, true, true, topicResource("orders"), topicResource("payments", "retention.bytes", "nope")))
		require.Len(t, resp.Resources, 2)
		for _, res := range resp.Resources {
			require.Equal(t, int16(0), res.ErrorCode, "v%d", v)
			require.Equal(t, kmsg.ConfigResourceTypeTopic, res.ResourceType)
		}
		want := []configRow{
			{Name: "max.message.bytes", Value: "1048588", Source: kmsg.ConfigSourceDefaultConfig, Default: true, Type: kmsg.ConfigTypeInt,
				Synonyms: []string{"message.max.bytes=1048588@DEFAULT_CONFIG"}, Doc: true},
			{Name: "retention.bytes", Value: "-1", Source: kmsg.ConfigSourceDefaultConfig, Default: true, Type: kmsg.ConfigTypeLong,
				Synonyms: []string{"log.retention.bytes=-1@DEFAULT_CONFIG"}, Doc: true},
			{Name: "segment.bytes", Value: "1048576", Source: kmsg.ConfigSourceDynamicTopicConfig, Type: kmsg.ConfigTypeInt,
				Synonyms: []string{"segment.bytes=1048576@DYNAMIC_TOPIC_CONFIG", "log.segment.bytes=67108864@DEFAULT_CONFIG"}, Doc: true},
		}
		payments := []configRow{want[1]}
		for _, rows := range [][]configRow{want, payments} {
			for i := range rows {
				r := &rows[i]
				if v == 0 {
					r.Default = r.Source == kmsg.ConfigSourceDefaultConfig // v0 has no source or synonyms
					r.Source, r.Synonyms = -1, nil
				} else {
					r.Default = false // v1+ has no IsDefault
				}
				if v < 3 {
					r.Type, r.Doc = 0, false
				}
			}
		}
		require.Equal(t, want, configRows(resp.Resources[0]), "v%d", v)
		require.Equal(t, payments, configRows(resp.Resources[1]), "v%d", v)
	}
	plain := wiretest.Do[*kmsg.DescribeConfigsResponse](t, c, describeConfigsRequest(4, false, false, topicResource("orders", "segment.bytes")))
	require.Equal(t, []configRow{{Name: "segment.bytes", Value: "1048576", Source: kmsg.ConfigSourceDynamicTopicConfig, Type: kmsg.ConfigTypeInt}},
		configRows(plain.Resources[0]), "no synonyms or documentation unless asked")
}

// TestDescribeConfigsBroker describes the broker (node 0): every setting
// read-only and STATIC_BROKER_CONFIG, at the values the broker runs with;
// "" (the cluster-wide dynamic defaults) has none.
func TestDescribeConfigsBroker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := wiretest.Dial(t, e.serve(), "admin")
	resp := wiretest.Do[*kmsg.DescribeConfigsResponse](t, c, describeConfigsRequest(4, true, false,
		kmsg.DescribeConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "0"},
		kmsg.DescribeConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: ""}))
	require.Equal(t, int16(0), resp.Resources[0].ErrorCode)
	got := map[string]string{}
	for _, row := range configRows(resp.Resources[0]) {
		require.True(t, row.ReadOnly, row.Name)
		require.Equal(t, kmsg.ConfigSourceStaticBrokerConfig, row.Source, row.Name)
		require.Equal(t, []string{row.Name + "=" + row.Value + "@STATIC_BROKER_CONFIG"}, row.Synonyms)
		got[row.Name] = row.Value
	}
	require.Equal(t, map[string]string{
		"auto.create.topics.enable": "false", "broker.id": "0", "default.replication.factor": "1", "log.retention.bytes": "-1",
		"log.segment.bytes": "67108864", "message.max.bytes": "1048588", "node.id": "0", "num.partitions": "1",
	}, got)
	require.Equal(t, int16(0), resp.Resources[1].ErrorCode)
	require.Empty(t, resp.Resources[1].Configs)
}

// TestDescribeConfigsCodes: an unknown topic, a name no topic can have,
// a broker that is not this node or not a number, and resource types
// minibroker has no configs for, each in its own resource beside a good
// one.
func TestDescribeConfigsCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := wiretest.Dial(t, e.serve(), "admin")
	resp := wiretest.Do[*kmsg.DescribeConfigsResponse](t, c, describeConfigsRequest(4, false, false,
		topicResource("nope"),
		topicResource("a/b"),
		kmsg.DescribeConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "7"},
		kmsg.DescribeConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "zero"},
		kmsg.DescribeConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeBrokerLogger, ResourceName: "0"},
		kmsg.DescribeConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "g"},
		kmsg.DescribeConfigsRequestResource{ResourceType: 99, ResourceName: "x"},
		topicResource("orders"),
	))
	var codes []int16
	for _, r := range resp.Resources {
		codes = append(codes, r.ErrorCode)
	}
	bad := kerr.InvalidRequest.Code
	require.Equal(t, []int16{kerr.UnknownTopicOrPartition.Code, kerr.InvalidTopicException.Code, bad, bad, bad, bad, bad, 0}, codes)
	require.Equal(t, "unknown topic: The topic 'nope' does not exist", *resp.Resources[0].ErrorMessage)
	require.Contains(t, *resp.Resources[2].ErrorMessage, "Unexpected broker id, expected 0 or empty string, but received 7")
	require.Empty(t, resp.Resources[0].Configs)
	require.Len(t, resp.Resources[7].Configs, 3)
}

// TestDescribeConfigsManyResources: ten thousand resources in one
// request are answered one by one, in order, and the connection serves
// the next request.
func TestDescribeConfigsManyResources(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := wiretest.Dial(t, e.serve(), "admin")
	var many []kmsg.DescribeConfigsRequestResource
	for range 10_000 {
		many = append(many, topicResource("nope"))
	}
	resp := wiretest.Do[*kmsg.DescribeConfigsResponse](t, c, describeConfigsRequest(4, false, false, many...))
	require.Len(t, resp.Resources, 10_000)
	for _, r := range resp.Resources {
		require.Equal(t, kerr.UnknownTopicOrPartition.Code, r.ErrorCode)
	}
	ok := wiretest.Do[*kmsg.DescribeConfigsResponse](t, c, describeConfigsRequest(4, false, false, topicResource("orders")))
	require.Len(t, ok.Resources[0].Configs, 3)
}
