package server

// DescribeConfigs (key 32), versions 0-4.
//
// v1 adds synonyms and the source (v0 has IsDefault instead), v3 the type
// and documentation, v4 is flexible. A topic resource lists every topic
// config minibroker has (topics/), each with the value in force:
// the topic's own (DYNAMIC_TOPIC_CONFIG) or the broker's
// (DEFAULT_CONFIG), never read-only or sensitive. A broker resource ("0",
// the node id) lists the broker's settings, all read-only and
// STATIC_BROKER_CONFIG: they come from its command line. The broker
// resource "" (Kafka's cluster-wide dynamic defaults) has none. Synonyms
// (when asked) run from the config itself to the broker's config behind
// it; documentation only when asked. Config names filter; an unknown one
// is left out, as Kafka.
//
// Errors, per resource, as Kafka's ConfigHelper: an unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION, a name no topic can have
// INVALID_TOPIC_EXCEPTION, a broker name that is not an integer or not
// this node INVALID_REQUEST; any other resource type (broker loggers,
// groups, client metrics) INVALID_REQUEST.

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/topics"
)

// configEntry is one config of a resource, as the config APIs answer it.
type configEntry struct {
	name, value string
	source      kmsg.ConfigSource
	readOnly    bool
	typ         kmsg.ConfigType
	doc         string
	synonyms    []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
}

// What DescribeConfigs reserves of the memory budget for its answer: per
// resource (its name twice, an error message), and per config, synonyms
// included, with more for documentation.
const (
	describeResourceBytes = 128
	describeEntryBytes    = 128
	describeDocBytes      = 192
)

func (s *Server) handleDescribeConfigs(r *request, req *kmsg.DescribeConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	entry := int64(describeEntryBytes)
	if req.IncludeDocumentation {
		entry += describeDocBytes
	}
	var estimate int64
	for _, rr := range req.Resources {
		estimate += describeResourceBytes + 2*int64(len(rr.ResourceName))
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			estimate += int64(len(topics.Settings())) * entry
		case kmsg.ConfigResourceTypeBroker:
			estimate += int64(len(brokerConfigNames)) * entry
		}
	}
	if !r.reserve(estimate) {
		return resp
	}
	for _, rr := range req.Resources {
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		entries, err := s.describeResource(rr.ResourceType, rr.ResourceName)
		if err != nil {
			r.setCode(&res.ErrorCode, s.code(err))
			msg := err.Error()
			res.ErrorMessage = &msg
			resp.Resources = append(resp.Resources, res)
			continue
		}
		for _, e := range entries {
			if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, e.name) {
				continue
			}
			rc := kmsg.NewDescribeConfigsResponseResourceConfig()
			rc.Name, rc.Value = e.name, kmsg.StringPtr(e.value)
			rc.ReadOnly, rc.Source, rc.ConfigType = e.readOnly, e.source, e.typ
			rc.IsDefault = e.source == kmsg.ConfigSourceDefaultConfig || e.source == kmsg.ConfigSourceStaticBrokerConfig
			if req.IncludeSynonyms {
				rc.ConfigSynonyms = e.synonyms
			}
			if req.IncludeDocumentation {
				rc.Documentation = kmsg.StringPtr(e.doc)
			}
			res.Configs = append(res.Configs, rc)
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp
}

// describeResource returns the configs of one resource.
func (s *Server) describeResource(typ kmsg.ConfigResourceType, name string) ([]configEntry, error) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		t, err := s.configTopic(name)
		if err != nil {
			return nil, err
		}
		return s.topicEntries(t), nil
	case kmsg.ConfigResourceTypeBroker:
		if name == "" {
			return nil, nil // no cluster-wide dynamic defaults
		}
		id, err := strconv.Atoi(name)
		if err != nil {
			return nil, fmt.Errorf("%w: Broker id must be an integer, but it is: %s", kerr.InvalidRequest, name)
		}
		if id != int(NodeID) {
			return nil, fmt.Errorf("%w: Unexpected broker id, expected %d or empty string, but received %s", kerr.InvalidRequest, NodeID, name)
		}
		return s.brokerEntries(), nil
	}
	return nil, fmt.Errorf("%w: Unsupported resource type %d", kerr.InvalidRequest, typ)
}

// configTopic returns the topic a config resource names.
func (s *Server) configTopic(name string) (catalog.Topic, error) {
	if err := s.checkTopicName(name); err != nil {
		return catalog.Topic{}, err
	}
	t, ok := s.catalog.Lookup(name)
	if !ok {
		return catalog.Topic{}, unknownTopic(name)
	}
	return t, nil
}

// checkTopicName refuses a config resource's name that no topic can
// have, as Kafka's Topic.validate.
func (s *Server) checkTopicName(name string) error {
	if !catalog.ValidTopicName(name) {
		return fmt.Errorf("%w: %q", catalog.ErrInvalidTopic, name)
	}
	return nil
}

// unknownTopic is Kafka's error for a config resource of no topic.
func unknownTopic(name string) error {
	return fmt.Errorf("%w: The topic '%s' does not exist", catalog.ErrUnknownTopic, name)
}

// topicEntries returns every topic config of t, sorted by name.
func (s *Server) topicEntries(t catalog.Topic) []configEntry {
	values := topics.Values(s.log.Defaults(), t)
	out := make([]configEntry, 0, len(values))
	for _, v := range values {
		e := configEntry{name: v.Name, value: v.Value, source: kmsg.ConfigSourceDefaultConfig, typ: configType(v.Type), doc: v.Doc}
		if v.Own {
			e.source = kmsg.ConfigSourceDynamicTopicConfig
			e.synonyms = append(e.synonyms, synonym(v.Name, v.Value, kmsg.ConfigSourceDynamicTopicConfig))
		}
		e.synonyms = append(e.synonyms, synonym(v.Broker, v.Default, kmsg.ConfigSourceDefaultConfig))
		out = append(out, e)
	}
	return out
}

// brokerConfigNames are the broker resource's configs, sorted.
var brokerConfigNames = [...]string{
	"auto.create.topics.enable", "broker.id", "default.replication.factor", "log.retention.bytes",
	"log.segment.bytes", "message.max.bytes", "node.id", "num.partitions",
}

// brokerEntries returns the broker's read-only settings, sorted by name.
func (s *Server) brokerEntries() []configEntry {
	d := s.log.Defaults()
	node := strconv.Itoa(int(NodeID))
	values := map[string]configEntry{
		"auto.create.topics.enable": {value: strconv.FormatBool(s.autoCreate), typ: kmsg.ConfigTypeBoolean,
			doc: "Whether a Metadata request for an unknown topic creates it (--auto-create-topics)."},
		"broker.id": {value: node, typ: kmsg.ConfigTypeInt, doc: "The broker's id: the node id of the only node."},
		"default.replication.factor": {value: "1", typ: kmsg.ConfigTypeInt,
			doc: "The replication factor of a topic created without one: one, on a single broker."},
		"log.retention.bytes": {value: strconv.FormatInt(d.RetentionBytes, 10), typ: kmsg.ConfigTypeLong,
			doc: "The size a partition may grow to before its oldest segments are deleted, -1 for no limit (--retention-bytes); topics' retention.bytes default."},
		"log.segment.bytes": {value: strconv.FormatInt(d.SegmentBytes, 10), typ: kmsg.ConfigTypeInt,
			doc: "The size at which a segment file rolls (--segment-bytes); topics' segment.bytes default."},
		"message.max.bytes": {value: strconv.FormatInt(int64(d.MaxMessageBytes), 10), typ: kmsg.ConfigTypeInt,
			doc: "The largest record batch accepted (--max-message-bytes); topics' max.message.bytes default."},
		"node.id": {value: node, typ: kmsg.ConfigTypeInt, doc: "The node id of the only node of the cluster."},
		"num.partitions": {value: strconv.Itoa(int(s.defaultParts)), typ: kmsg.ConfigTypeInt,
			doc: "The partitions of a topic created without a count (--default-partitions)."},
	}
	out := make([]configEntry, 0, len(brokerConfigNames))
	for _, name := range brokerConfigNames {
		e := values[name]
		e.name, e.source, e.readOnly = name, kmsg.ConfigSourceStaticBrokerConfig, true
		e.synonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{synonym(name, e.value, kmsg.ConfigSourceStaticBrokerConfig)}
		out = append(out, e)
	}
	return out
}

func synonym(name, value string, source kmsg.ConfigSource) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	syn.Name, syn.Value, syn.Source = name, kmsg.StringPtr(value), source
	return syn
}

// configType maps topics/' type names to Kafka's.
func configType(typ string) kmsg.ConfigType {
	switch typ {
	case "INT":
		return kmsg.ConfigTypeInt
	case "LONG":
		return kmsg.ConfigTypeLong
	}
	return kmsg.ConfigTypeUnknown
}
