package admin

// The chapter's four states, per partition: who is in the group
// (membership), who owns the partition in this generation (assignment),
// where each consumer reads (its fetch position) and what the group has
// committed (the durable offset), beside the log's own offsets. The lag
// is Kafka's consumer lag: log end - committed, none for a commit of a
// reset sentinel (-1, -2). GET /v1/groups shows them
// per group, GET /v1/topics per topic.

import (
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/records"
)

// Log is what the API reads of the partition logs; *records.Log has it.
type Log interface {
	// PartitionStats returns a partition's offsets and size, or an error
	// when the log does not have it.
	PartitionStats(topic string, partition int32) (records.PartitionStats, error)
}

var _ Log = (*records.Log)(nil)

// snapshot is what one API answer reads once: the clock, the catalog's
// topics and the fetch positions.
type snapshot struct {
	now       time.Time
	topics    map[string]int32
	positions map[assignor.TopicPartition][]fetched
}

func (s *Server) snapshot() *snapshot {
	return &snapshot{now: s.now(), topics: s.catalog.Counts(), positions: s.recorder.fetchPositions()}
}

// logOffsets reads a partition's log start and log end (the high
// watermark: what consumers can read); ok is false without a log or
// when the log lacks the partition.
func (s *Server) logOffsets(topic string, partition int32) (st records.PartitionStats, ok bool) {
	if s.log == nil {
		return st, false
	}
	st, err := s.log.PartitionStats(topic, partition)
	return st, err == nil
}

// partitionJSON is one partition of a group, its four states side by
// side. The offsets are null where they are unknown: no log, no commit.
type partitionJSON struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// LogStartOffset is the first offset the log holds; LogEndOffset the
	// high watermark, the offset after the last record a consumer can
	// read.
	LogStartOffset *int64 `json:"log_start_offset"`
	LogEndOffset   *int64 `json:"log_end_offset"`
	// Owner is the member assigned the partition in this generation (a
	// consumer group: the member that holds it now), "" for nobody;
	// Target, consumer groups only, the member the target gives it to.
	Owner  string  `json:"owner"`
	Target *string `json:"target,omitzero"`
	// FetchPositions are the positions of the connections whose client id
	// is a member's, attributed to a member or not (positions.go).
	FetchPositions []fetchPositionJSON `json:"fetch_positions"`
	// Committed is the group's durable committed offset, and Lag is
	// LogEndOffset - Committed (negative for a commit past the log end,
	// which nothing forbids); both null without a commit.
	Committed *int64 `json:"committed"`
	Lag       *int64 `json:"lag"`
	// CommittedReset is "earliest" or "latest" when Committed is a reset
	// sentinel (-2 or -1, what kafkajs commits when its position fell out
	// of range): not a position but the policy the consumer resets by at
	// its next OffsetFetch. Lag is null then: there is none to measure.
	CommittedReset string `json:"committed_reset,omitempty"`
}

// resetName names a reset sentinel's policy, "" for any other offset.
func resetName(offset int64) string {
	switch offset {
	case offsets.ResetEarliest:
		return "earliest"
	case offsets.ResetLatest:
		return "latest"
	}
	return ""
}

// partitions renders every partition of the topics in subscribed and of
// the topics committed names, sorted.
func (s *Server) partitions(v coordinator.GroupView, subscribed []string, committed []offsets.Entry,
	owner, target map[assignor.TopicPartition]string, snap *snapshot) []partitionJSON {
	commits := make(map[assignor.TopicPartition]int64, len(committed))
	parts := make(map[assignor.TopicPartition]bool)
	topics := slices.Clone(subscribed)
	for _, e := range committed {
		tp := assignor.TopicPartition{Topic: e.Topic, Partition: e.Partition}
		commits[tp] = e.Offset
		parts[tp] = true // even one the catalog does not have
		topics = append(topics, e.Topic)
	}
	for _, t := range topics {
		for p := range snap.topics[t] {
			parts[assignor.TopicPartition{Topic: t, Partition: p}] = true
		}
	}
	who := newAttribution(v.Members)
	consumer := v.Type == coordinator.ConsumerGroup
	out := []partitionJSON{}
	for _, tp := range slices.SortedFunc(maps.Keys(parts), assignor.TopicPartition.Compare) {
		pj := partitionJSON{Topic: tp.Topic, Partition: tp.Partition, Owner: owner[tp], FetchPositions: []fetchPositionJSON{}}
		if consumer {
			to := target[tp]
			pj.Target = &to
		}
		st, known := s.logOffsets(tp.Topic, tp.Partition)
		if known {
			pj.LogStartOffset, pj.LogEndOffset = &st.LogStartOffset, &st.HighWatermark
		}
		if c, ok := commits[tp]; ok {
			pj.Committed = &c
			pj.CommittedReset = resetName(c)
			if known && pj.CommittedReset == "" {
				lag := st.HighWatermark - c
				pj.Lag = &lag
			}
		}
		for _, f := range snap.positions[tp] {
			if p, ok := who.attribute(f, snap.now); ok {
				pj.FetchPositions = append(pj.FetchPositions, p)
			}
		}
		out = append(out, pj)
	}
	return out
}

// topicsJSON answers GET /v1/topics.
type topicsJSON struct {
	Now    string      `json:"now"`
	NowMS  int64       `json:"now_ms"`
	Topics []topicJSON `json:"topics"`
}

// topicJSON is one topic of the catalog.
type topicJSON struct {
	Topic string `json:"topic"`
	// Configs are the topic's own configs (retention.bytes,
	// segment.bytes, max.message.bytes; DescribeConfigs' non-default
	// ones), absent when it has none.
	Configs    map[string]string    `json:"configs,omitempty"`
	Partitions []topicPartitionJSON `json:"partitions"`
}

// topicPartitionJSON is one partition's log, and every connection's fetch
// position in it, whatever its group. The log's figures are null when
// the log does not have the partition.
type topicPartitionJSON struct {
	Partition      int32  `json:"partition"`
	LogStartOffset *int64 `json:"log_start_offset"`
	LogEndOffset   *int64 `json:"log_end_offset"`
	// LastStableOffset is what read_committed consumers read up to.
	LastStableOffset *int64 `json:"last_stable_offset"`
	// Bytes is what the partition's segment files hold, records not yet
	// durable included.
	Bytes          *int64              `json:"bytes"`
	FetchPositions []fetchPositionJSON `json:"fetch_positions"`
}

// handleTopics answers GET /v1/topics: every topic in the catalog, sorted,
// with its own configs and each partition's log offsets, size and fetch
// positions.
func (s *Server) handleTopics(w http.ResponseWriter, _ *http.Request) {
	snap := s.snapshot()
	out := topicsJSON{Topics: []topicJSON{}}
	out.Now, out.NowMS = stamp(snap.now)
	for _, name := range slices.Sorted(maps.Keys(snap.topics)) {
		t := topicJSON{Topic: name, Partitions: []topicPartitionJSON{}}
		if ct, ok := s.catalog.Lookup(name); ok {
			t.Configs = ct.Configs
		}
		for p := range snap.topics[name] {
			pj := topicPartitionJSON{Partition: p, FetchPositions: []fetchPositionJSON{}}
			if st, ok := s.logOffsets(name, p); ok {
				pj.LogStartOffset, pj.LogEndOffset, pj.Bytes = &st.LogStartOffset, &st.HighWatermark, &st.Bytes
				pj.LastStableOffset = &st.LastStableOffset
			}
			for _, f := range snap.positions[assignor.TopicPartition{Topic: name, Partition: p}] {
				pj.FetchPositions = append(pj.FetchPositions, positionJSON(f, snap.now))
			}
			t.Partitions = append(t.Partitions, pj)
		}
		out.Topics = append(out.Topics, t)
	}
	writeJSON(w, http.StatusOK, out)
}
