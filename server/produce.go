package server

// Produce (key 0), versions 3-12.
//
// v3 is the first version of record batches (magic 2) and transactional
// ids; v5 returns the log start offset; v7 allows zstd; v8 (KIP-467)
// returns an error message and per-record errors; v9 is flexible; v10-12
// add nothing a single broker without transactions uses. Each partition's
// records must be exactly one batch, validated as Kafka's LogValidator
// does (records.Log.Validate); a batch that fails stores nothing and fails
// only its own partition. An answer goes out once every accepted batch is
// durable (fdatasync, one flush round for the whole request). acks 0 gets
// no answer, and a failed acks-0 produce closes the connection, as Kafka
// does: there is no other way to tell the producer. A transactional
// batch is appended only if its producer's transaction (the request's
// transactional id) has added the partition: otherwise INVALID_TXN_STATE
// and nothing stored; a stale epoch INVALID_PRODUCER_EPOCH, an unknown
// id or another producer id INVALID_PRODUCER_ID_MAPPING; without a
// transactional id TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka's
// KafkaApis answers. The request's timeout is not used: a batch is
// durable or failed as soon as its flush round ends. A request holding
// compressed batches reserves of the budget, while it validates them, what
// the largest one's decompression holds (records.DecodeBytes, at most
// records.DecoderBytes): they are validated one at a time, and a batch
// that would need more than that bound is MESSAGE_TOO_LARGE (a raw snappy
// block above 8 MiB) or CORRUPT_MESSAGE (a zstd window above 8 MiB).

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/records"
)

// errAcksZeroFailed closes the connection of a failed acks-0 produce.
var errAcksZeroFailed = errors.New("a produce with acks 0 failed")

// appending is one partition of a produce: where its answer goes and the
// append it waits for.
type appending struct {
	rp      *kmsg.ProduceResponseTopicPartition
	pending *records.Pending
}

func (s *Server) handleProduce(r *request, req *kmsg.ProduceRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	var requestErr error
	if req.Acks != 0 && req.Acks != 1 && req.Acks != -1 {
		requestErr = fmt.Errorf("%w: acks %d, want -1, 0 or 1", kerr.InvalidRequiredAcks, req.Acks)
	}
	if requestErr == nil {
		done, ok := r.borrow(decodeBytes(req))
		defer done()
		if !ok {
			return resp
		}
	}
	var waits []appending
	failed := false
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(t.Partitions))
		for i, p := range t.Partitions {
			rp := &rt.Partitions[i]
			*rp = kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			pending, err := s.appendBatch(req.Version, req.TransactionID, t.Topic, p.Partition, p.Records, requestErr)
			if err != nil {
				s.produceFailed(r, rp, err)
				failed = true
				continue
			}
			waits = append(waits, appending{rp: rp, pending: pending})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Acks == 0 {
		s.log.Flush() // nobody waits: start the round that makes them durable
		if failed {
			r.failed = errAcksZeroFailed
		}
		return nil
	}
	for _, w := range waits {
		a, err := w.pending.Wait()
		if err != nil {
			s.produceFailed(r, w.rp, err)
			continue
		}
		w.rp.BaseOffset, w.rp.LogStartOffset = a.BaseOffset, a.LogStartOffset
	}
	return resp
}

// decodeBytes is what validating req's batches holds in decompressors at
// most: they are validated one at a time.
func decodeBytes(req *kmsg.ProduceRequest) int64 {
	var n int64
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			n = max(n, records.DecodeBytes(p.Records))
		}
	}
	return n
}

// appendBatch validates one partition's records and appends them.
func (s *Server) appendBatch(version int16, txnID *string, topic string, partition int32, raw []byte, requestErr error) (*records.Pending, error) {
	if requestErr != nil {
		return nil, requestErr
	}
	if !s.catalog.HasPartition(topic, partition) {
		return nil, fmt.Errorf("%w: %s-%d", records.ErrUnknownPartition, topic, partition)
	}
	// ProduceRequest.validateRecords: zstd needs v7 (KIP-110), checked
	// before anything else about the batch.
	if codec, ok := records.PeekCodec(raw); ok && codec == records.CodecZstd && version < 7 {
		return nil, fmt.Errorf("%w: zstd needs Produce v7 or later, got v%d", kerr.UnsupportedCompressionType, version)
	}
	batch, err := s.log.ValidateTopic(topic, raw)
	if err != nil {
		return nil, err
	}
	if !batch.Transactional() {
		return s.log.Append(topic, partition, batch)
	}
	pid, epoch := batch.Producer()
	if txnID == nil {
		return nil, fmt.Errorf("%w: producer %d", records.ErrTransactional, pid)
	}
	var pending *records.Pending
	err = s.txns.Produce(*txnID, pid, epoch, records.TopicPartition{Topic: topic, Partition: partition}, func() error {
		var err error
		pending, err = s.log.Append(topic, partition, batch)
		return err
	})
	return pending, err
}

// produceFailed answers one partition with err's code and, v8+, its
// message; a failure of our own is logged.
func (s *Server) produceFailed(r *request, rp *kmsg.ProduceResponseTopicPartition, err error) {
	r.setCode(&rp.ErrorCode, s.code(err))
	msg := err.Error()
	rp.ErrorMessage = &msg
	rp.BaseOffset, rp.LogStartOffset = -1, -1
	if errors.Is(err, records.ErrStorage) {
		r.logger.Error("produce not stored", "err", err)
	}
}
