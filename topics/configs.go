package topics

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/records"
)

// The topic configs minibroker has, by Kafka's names.
const (
	MaxMessageBytes = "max.message.bytes"
	RetentionBytes  = "retention.bytes"
	SegmentBytes    = "segment.bytes"
)

// ErrInvalidConfig (INVALID_CONFIG): a config name a topic cannot have,
// or a value it cannot take; the message says which, in Kafka's words.
var ErrInvalidConfig = errors.New("invalid config")

// Setting describes one topic config.
type Setting struct {
	Name   string // the topic config
	Broker string // the broker's config that is its default (Kafka's synonym)
	Type   string // Kafka's ConfigDef type: "INT" or "LONG"
	Doc    string
}

// settings are every topic config, sorted by name.
var settings = [...]Setting{
	{Name: MaxMessageBytes, Broker: "message.max.bytes", Type: "INT",
		Doc: "The largest record batch size allowed, header included; a larger batch is refused with MESSAGE_TOO_LARGE."},
	{Name: RetentionBytes, Broker: "log.retention.bytes", Type: "LONG",
		Doc: "The size a partition may grow to before its oldest whole segments are deleted; negative: no limit."},
	{Name: SegmentBytes, Broker: "log.segment.bytes", Type: "INT",
		Doc: "The size at which a partition's active segment file rolls."},
}

// Settings returns every topic config, sorted by name.
func Settings() []Setting {
	out := settings
	return out[:]
}

// Lookup returns the topic config called name.
func Lookup(name string) (Setting, bool) {
	for _, s := range settings {
		if s.Name == name {
			return s, true
		}
	}
	return Setting{}, false
}

// Value is one topic config as a topic has it.
type Value struct {
	Setting
	Value   string // in force
	Default string // the broker's
	Own     bool   // the topic sets it (Kafka's DYNAMIC_TOPIC_CONFIG)
}

// Values returns each topic config of t as it is in force, beside the
// broker's defaults (records.Log.Defaults), sorted by name.
func Values(defaults records.TopicSettings, t catalog.Topic) []Value {
	def := render(defaults)
	out := make([]Value, 0, len(settings))
	for _, s := range settings {
		v := Value{Setting: s, Value: def[s.Name], Default: def[s.Name]}
		if own, ok := t.Configs[s.Name]; ok {
			v.Value, v.Own = own, true
		}
		out = append(out, v)
	}
	return out
}

// render writes settings as Kafka prints the configs.
func render(s records.TopicSettings) map[string]string {
	return map[string]string{
		MaxMessageBytes: strconv.FormatInt(int64(s.MaxMessageBytes), 10),
		RetentionBytes:  strconv.FormatInt(s.RetentionBytes, 10),
		SegmentBytes:    strconv.FormatInt(s.SegmentBytes, 10),
	}
}

// Resolve checks configs (a topic's own, by name) as Kafka's LogConfig
// validates them, and returns the settings a topic with them runs with
// (the defaults for the rest) and the configs as they are saved (values
// trimmed, as Kafka parses them). An unknown name or a bad value is
// ErrInvalidConfig with Kafka's message.
func Resolve(defaults records.TopicSettings, configs map[string]string) (records.TopicSettings, map[string]string, error) {
	s := defaults
	saved := make(map[string]string, len(configs))
	for name, raw := range configs {
		value := strings.TrimSpace(raw)
		var err error
		switch name {
		case SegmentBytes:
			s.SegmentBytes, err = parse(name, value, "INT", records.MinSegmentBytes, math.MaxInt32)
		case MaxMessageBytes:
			var n int64
			n, err = parse(name, value, "INT", records.MinMaxMessageBytes, math.MaxInt32)
			s.MaxMessageBytes = int32(n)
		case RetentionBytes:
			// Any long, as Kafka: a negative one is no limit.
			s.RetentionBytes, err = parse(name, value, "LONG", math.MinInt64, math.MaxInt64)
			s.RetentionBytes = max(s.RetentionBytes, -1)
		default:
			err = fmt.Errorf("%w: Unknown topic config name: %s", ErrInvalidConfig, name)
		}
		if err != nil {
			return records.TopicSettings{}, nil, err
		}
		saved[name] = value
	}
	return s, saved, nil
}

// parse reads an INT or LONG config as ConfigDef.parseType does, within
// [lo, hi] (ConfigDef.Range.atLeast).
func parse(name, value, typ string, lo, hi int64) (int64, error) {
	bits := 64
	if typ == "INT" {
		bits = 32
	}
	n, err := strconv.ParseInt(value, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%w: Invalid value %s for configuration %s: Not a number of type %s", ErrInvalidConfig, value, name, typ)
	}
	if n < lo {
		return 0, fmt.Errorf("%w: Invalid value %s for configuration %s: Value must be at least %d", ErrInvalidConfig, value, name, lo)
	}
	if n > hi {
		return 0, fmt.Errorf("%w: Invalid value %s for configuration %s: Value must be no more than %d", ErrInvalidConfig, value, name, hi)
	}
	return n, nil
}

// Prepare is the broker's catalog.Config.Prepare: it makes topic t's
// partition logs and gives them t's settings, so that a topic is never
// visible without either.
func Prepare(log *records.Log, t catalog.Topic) error {
	s, _, err := Resolve(log.Defaults(), t.Configs)
	if err != nil {
		return err
	}
	if err := log.CreatePartitions(t.Name, t.Partitions); err != nil {
		return err
	}
	return log.SetSettings(t.Name, s)
}

// ApplyConfigs gives every topic of cat the settings of its configs, at
// start-up. A config the catalog holds that is not valid (a file edited
// by hand) is an error naming the topic.
func ApplyConfigs(cat *catalog.Catalog, log *records.Log) error {
	for _, t := range cat.List() {
		s, _, err := Resolve(log.Defaults(), t.Configs)
		if err == nil {
			err = log.SetSettings(t.Name, s)
		}
		if err != nil {
			return fmt.Errorf("topic %q in %s: %w", t.Name, cat.Path(), err)
		}
	}
	return nil
}

// Create creates topic name with partitions and its own configs, checked
// first: a bad config is ErrInvalidConfig and nothing is made. With
// validateOnly it only checks.
func (a *Admin) Create(name string, partitions int32, configs map[string]string, validateOnly bool) (catalog.Topic, error) {
	_, saved, err := Resolve(a.Log.Defaults(), configs)
	if err != nil {
		return catalog.Topic{}, err
	}
	if validateOnly {
		return catalog.Topic{Name: name, Partitions: partitions, Configs: saved}, a.Catalog.Check(name, partitions)
	}
	return a.Catalog.CreateWithConfigs(name, partitions, saved)
}

// SetConfigs replaces topic name's own configs with configs (empty: the
// defaults for all): checked first (ErrInvalidConfig), saved in the
// catalog, then in force in the partition logs at once. With validateOnly
// it only checks. It returns the topic as it is after.
func (a *Admin) SetConfigs(name string, configs map[string]string, validateOnly bool) (catalog.Topic, error) {
	s, saved, err := Resolve(a.Log.Defaults(), configs)
	if err != nil {
		return catalog.Topic{}, err
	}
	if validateOnly {
		t, ok := a.Catalog.Lookup(name)
		if !ok {
			return catalog.Topic{}, fmt.Errorf("%w: %q", catalog.ErrUnknownTopic, name)
		}
		t.Configs = saved
		return t, nil
	}
	return a.Catalog.SetConfigs(name, saved, func(t catalog.Topic) {
		if err := a.Log.SetSettings(t.Name, s); err != nil { // Resolve checked it
			a.logger().Error("topic settings not in force until the next start", "topic", t.Name, "err", err)
		}
	})
}
