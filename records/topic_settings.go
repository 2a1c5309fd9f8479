package records

import (
	"fmt"
	"maps"
	"math"
	"sync/atomic"
)

// TopicSettings are the Config fields one topic may set for itself
// (Kafka's topic configs segment.bytes, retention.bytes and
// max.message.bytes). Every field is the value in force, never "default":
// Defaults gives the Log's own, which a topic without settings uses.
type TopicSettings struct {
	// SegmentBytes: Config.SegmentBytes; the next roll uses it.
	SegmentBytes int64
	// RetentionBytes: Config.RetentionBytes, -1 unlimited; 0 keeps only
	// the segment holding the high watermark and the active one.
	RetentionBytes int64
	// MaxMessageBytes: Config.MaxMessageBytes; the next produce uses it.
	MaxMessageBytes int32
}

// Check reports whether s is a valid set of values.
func (s TopicSettings) Check() error {
	switch {
	case s.SegmentBytes < MinSegmentBytes || s.SegmentBytes > math.MaxInt32:
		return fmt.Errorf("segment bytes %d outside [%d, %d]", s.SegmentBytes, MinSegmentBytes, math.MaxInt32)
	case s.RetentionBytes < -1:
		return fmt.Errorf("retention bytes %d: want -1 (unlimited) or at least 0", s.RetentionBytes)
	case s.MaxMessageBytes < MinMaxMessageBytes:
		return fmt.Errorf("max message bytes %d: want at least %d", s.MaxMessageBytes, MinMaxMessageBytes)
	}
	return nil
}

// topicSettings is the Log's map of topics with settings of their own. It
// is replaced, never modified, so that the write path reads it without a
// lock.
type topicSettings struct {
	m      atomic.Pointer[map[string]TopicSettings]
	maxMsg atomic.Int32 // the largest MaxMessageBytes of the map and the Config
}

// Defaults returns the Log's own settings: those of every topic that has
// none of its own.
func (l *Log) Defaults() TopicSettings {
	return TopicSettings{SegmentBytes: l.cfg.SegmentBytes, RetentionBytes: l.cfg.RetentionBytes, MaxMessageBytes: l.cfg.MaxMessageBytes}
}

// Settings returns the settings topic runs with.
func (l *Log) Settings(topic string) TopicSettings {
	if m := l.settings.m.Load(); m != nil {
		if s, ok := (*m)[topic]; ok {
			return s
		}
	}
	return l.Defaults()
}

// SetSettings gives topic its own settings (s equal to Defaults drops
// them), in force at once: the next append rolls at the new segment size,
// the next Validate checks the new batch limit, and retention runs now on
// each of the topic's partitions, as after a flush. DeleteTopic drops a
// topic's settings. The caller makes them durable (the topic catalog).
func (l *Log) SetSettings(topic string, s TopicSettings) error {
	if err := s.Check(); err != nil {
		return fmt.Errorf("records: topic %q: %w", topic, err)
	}
	l.createMu.Lock()
	l.putSettings(topic, s, s != l.Defaults())
	l.createMu.Unlock()
	for tp, p := range *l.parts.Load() {
		if tp.Topic == topic {
			p.retainNow()
		}
	}
	return nil
}

// putSettings replaces the settings map with topic's entry set (keep) or
// dropped. Called with createMu held.
func (l *Log) putSettings(topic string, s TopicSettings, keep bool) {
	next := map[string]TopicSettings{}
	if cur := l.settings.m.Load(); cur != nil {
		next = maps.Clone(*cur)
	}
	delete(next, topic)
	if keep {
		next[topic] = s
	}
	largest := l.cfg.MaxMessageBytes
	for _, t := range next {
		largest = max(largest, t.MaxMessageBytes)
	}
	l.settings.m.Store(&next)
	l.settings.maxMsg.Store(largest)
}

// retainNow applies the partition's retention limit at once, as a flush
// does after it syncs.
func (p *partition) retainNow() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	drop := p.retain()
	p.mu.Unlock()
	p.remove(drop)
}
