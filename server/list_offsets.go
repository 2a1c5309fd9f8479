package server

// ListOffsets (key 2), versions 0-7.
//
// Timestamp -2 asks for the log start offset, -1 for the high watermark
// (the durable log end), -3 (v7, KIP-734) for the record with the largest
// timestamp, and a timestamp t >= 0 for the first record whose timestamp
// is at least t (offset -1 when there is none). v0 answers a list of
// old-style offsets (just the one); v1 a single offset and timestamp; v2
// adds the isolation level (read_committed: latest is the last stable
// offset, the first offset of the oldest open transaction); v4 leader epochs (0: one leader); v6 is
// flexible. An unknown topic or partition gets UNKNOWN_TOPIC_OR_PARTITION;
// another negative timestamp, or -3 before v7, INVALID_REQUEST. A request
// with a timestamp lookup reserves, before it reads, one stored batch and
// one decompressor's memory of the budget (records.DecoderBytes): its
// lookups run one at a time; a stored batch that would need more than that
// bound answers its partition MESSAGE_TOO_LARGE (docs/behavior-matrix.md).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/records"
)

// The special timestamps of ListOffsets.
const (
	listLatest       = -1
	listEarliest     = -2
	listMaxTimestamp = -3
)

func (s *Server) handleListOffsets(r *request, req *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	if looksUpTimes(req) {
		done, ok := r.borrow(records.DecoderBytes + int64(s.log.MaxMessageBytes()))
		defer done()
		if !ok {
			return resp
		}
	}
	for _, t := range req.Topics {
		rt := kmsg.ListOffsetsResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			offset, ts, err := s.listOffset(req.Version, req.IsolationLevel == readCommitted, t.Topic, p.Partition, p.Timestamp)
			if err != nil {
				r.setCode(&rp.ErrorCode, s.code(err))
				offset, ts = -1, -1
				rp.LeaderEpoch = -1
			}
			rp.Offset, rp.Timestamp = offset, ts
			if req.Version == 0 && err == nil {
				rp.OldStyleOffsets = []int64{offset}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// looksUpTimes reports whether req asks for a lookup that reads and
// decompresses a stored batch: a timestamp, or the largest timestamp (v7).
func looksUpTimes(req *kmsg.ListOffsetsRequest) bool {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if p.Timestamp >= 0 || p.Timestamp == listMaxTimestamp && req.Version >= 7 {
				return true
			}
		}
	}
	return false
}

// listOffset answers one partition's lookup: the offset and, for the
// timestamp lookups, the timestamp found (-1 otherwise).
func (s *Server) listOffset(version int16, committed bool, topic string, partition int32, ts int64) (offset, timestamp int64, err error) {
	if !s.catalog.HasPartition(topic, partition) {
		return 0, 0, fmt.Errorf("%w: %s-%d", records.ErrUnknownPartition, topic, partition)
	}
	switch {
	case ts == listEarliest || ts == listLatest:
		start, hw, err := s.log.Offsets(topic, partition)
		if ts == listEarliest {
			return start, -1, err
		}
		if committed && err == nil {
			hw, err = s.log.LastStableOffset(topic, partition)
		}
		return hw, -1, err
	case ts == listMaxTimestamp && version >= 7:
		return s.log.MaxTimestamp(topic, partition)
	case ts >= 0:
		return s.log.OffsetForTime(topic, partition, ts)
	}
	return 0, 0, fmt.Errorf("%w: timestamp %d at ListOffsets v%d", errBadTimestamp, ts, version)
}

// errBadTimestamp is a ListOffsets timestamp no version we serve knows.
var errBadTimestamp = fmt.Errorf("%w: unknown special timestamp", kerr.InvalidRequest)
