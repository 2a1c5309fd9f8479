package server

// Produce (key 0), versions 3-12, over --max-frame-bytes (oversize.go).
//
// Kafka reads a Produce of up to socket.request.max.bytes (100 MiB) and
// answers a batch over message.max.bytes MESSAGE_TOO_LARGE
// (UnifiedLog.analyzeAndValidateRecords: "The record batch size in the
// append to ... exceeds the maximum configured value"), which clients do
// not retry. Such a request is skimmed here: every partition it names is
// answered MESSAGE_TOO_LARGE with a message naming the flag, and nothing
// of it is stored, not even a partition whose own batch is small (Kafka
// would store that one: a matrix row). With acks 0 the connection closes
// instead, as after any failed acks-0 produce (produce.go).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/protocol"
	"github.com/minibroker/minibroker/records"
)

// Bounds of what an answer to a skimmed Produce holds until it is
// written, per partition (its kmsg entry and its encoding) and per topic
// beside its name (twice: the entry and the encoding).
const (
	skimAnswerPartitionBytes = 160
	skimAnswerTopicBytes     = 96
)

// answerOversizedProduce answers a Produce whose frame of size bytes is
// over MaxFrameBytes: MESSAGE_TOO_LARGE for every partition it names.
func (s *Server) answerOversizedProduce(r *request, sk *protocol.Skimmer, size int32) (kmsg.Response, error) {
	skim, err := sk.SkimProduce(r.version, skimHoldBytes)
	if err != nil {
		return nil, err
	}
	if skim.Acks == 0 {
		return nil, fmt.Errorf("%w: its request of %d bytes is over --max-frame-bytes (%d)", errAcksZeroFailed, size, s.maxFrame)
	}
	var bound int64
	for _, t := range skim.Topics {
		bound += skimAnswerTopicBytes + 2*int64(len(t.Topic)) + skimAnswerPartitionBytes*int64(len(t.Partitions))
	}
	if !r.reserve(bound) {
		return nil, nil // r.failed closes the connection
	}
	tooLarge := fmt.Errorf("%w: the produce request of %d bytes is over the broker's --max-frame-bytes (%d), so it was read and discarded and none of its batches stored",
		records.ErrMessageTooLarge, size, s.maxFrame)
	code, msg := s.code(tooLarge), tooLarge.Error() // one message, shared by every partition
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = r.version
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(skim.Topics))
	for i, t := range skim.Topics {
		rt := &resp.Topics[i]
		*rt = kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			rp := &rt.Partitions[j]
			*rp = kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.BaseOffset = p.Partition, -1
			r.setCode(&rp.ErrorCode, code)
			rp.ErrorMessage = &msg
		}
	}
	return resp, nil
}
