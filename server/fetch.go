package server

// Fetch (key 1), versions 4-12.
//
// Each partition answers whole stored batches from the one that holds the
// fetch offset (the client skips the records before it), at most its
// PartitionMaxBytes, all of them at most MaxBytes (capped by
// Config.MaxFetchBytes), except that the first partition with data gets at
// least one whole batch however large (KIP-74). Nothing above the high
// watermark, which is the durable log end: no consumer sees a record a
// crash could take back. An offset below the log start or above the high
// watermark is OFFSET_OUT_OF_RANGE. With fewer than MinBytes to give, the
// fetch waits up to MaxWaitMillis (capped by Config.MaxFetchWait; cut
// short by shutdown): each produce to a partition it names wakes it to
// read again, and it answers once it has MinBytes or the wait is over,
// with what there is then, as Kafka's DelayedFetch does. An error on any
// partition answers at once, as Kafka does.
//
// v4 adds the isolation level and the last stable offset: read_committed
// (1) reads no batch at or past the partition's last stable offset and
// gets the aborted transactions of the range it reads, read_uncommitted
// (0) reads to the high watermark; both learn the LSO. v5 the log start offset; v7 fetch sessions (KIP-227): we
// answer session id 0, which tells clients to send full requests; v9
// current leader epochs (there is one leader, at epoch 0: not checked);
// v11 racks; v12 is flexible. Before it reads from disk, a fetch reserves
// of the memory budget what it can read (records.Log.Readable, bounded by
// its MaxBytes and one batch more), not the MaxBytes it asks for, and keeps
// only what it read once it has: a fetch waiting at the high watermark
// holds no more than its small answer, so idle consumers cannot crowd out
// the ones with data to read, and it reserves again before it reads a
// second time. Once per request, after its first read, the observer
// learns where the client asked to read each partition (observeFetch): the
// fetch positions of the admin page.

import (
	"bytes"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/records"
)

func (s *Server) handleFetch(r *request, req *kmsg.FetchRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	maxBytes := s.maxFetch
	if req.MaxBytes > 0 {
		maxBytes = min(req.MaxBytes, maxBytes)
	}
	wait := min(time.Duration(max(req.MaxWaitMillis, 0))*time.Millisecond, s.maxFetchWait)
	var timer <-chan time.Time
	for read := 0; ; read++ {
		// Reserve once, before reading, a bound on everything the read
		// and its answer will hold; keep only what they do.
		records := s.fetchBound(req, maxBytes)
		if !r.reserve(fetchHoldBytes(req, records)) {
			return resp
		}
		total, ready := s.fetchOnce(r, req, resp, max(min(int64(maxBytes), records-int64(s.log.MaxMessageBytes())), 0), records > 0)
		if read == 0 {
			s.observeFetch(r, req, resp)
		}
		s.keepAnswer(r, req, total)
		if ready || total >= int64(req.MinBytes) || wait == 0 || timer == nil && read > 0 {
			return resp
		}
		// A long poll holds nothing while it waits: what it read is
		// dropped, its reservation given back, and it reads again once
		// records come past what this read saw, on any partition it
		// names, or its wait is over.
		w := s.log.Watch(watchOffsets(req, resp, records == 0)...)
		resp.Topics = resp.Topics[:0]
		r.acct.drop()
		r.keep(0)
		if timer == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-w.C():
		case <-timer:
			timer = nil // read once more, and answer that
		case <-r.ctx.Done():
			timer = nil
		}
		w.Close()
	}
}

// observeFetch tells the observer, once per request, where the client
// asked to read each partition that exists (fetchOnce has answered every
// partition, in request order; one the broker lacks is
// UNKNOWN_TOPIC_OR_PARTITION). One call per partition, and nothing
// allocated.
func (s *Server) observeFetch(r *request, req *kmsg.FetchRequest, resp *kmsg.FetchResponse) {
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			if resp.Topics[i].Partitions[j].ErrorCode == kerr.UnknownTopicOrPartition.Code {
				continue
			}
			s.observer.Fetched(FetchEvent{Remote: r.remote, Host: r.host, ClientID: r.clientID,
				Topic: t.Topic, Partition: p.Partition, FetchOffset: p.FetchOffset})
		}
	}
}

// watchOffsets names every partition of a fetch with the offset past
// which a produce must go to wake it: the high watermark its last read
// saw (fetchOnce answers the partitions in request order); or, when the
// read reserved and read nothing (nothing was readable when it looked),
// the fetch offset, so that records appended since wake it at once.
func watchOffsets(req *kmsg.FetchRequest, resp *kmsg.FetchResponse, readNothing bool) []records.WatchOffset {
	var watch []records.WatchOffset
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			offset := p.FetchOffset
			if !readNothing {
				offset = max(offset, resp.Topics[i].Partitions[j].HighWatermark)
			}
			watch = append(watch, records.WatchOffset{Topic: t.Topic, Partition: p.Partition, Offset: offset})
		}
	}
	return watch
}

// fetchAnswerBytes bounds the encoded size of a Fetch answer holding total
// bytes of records: the records, and per topic and partition their fixed
// fields (a partition's are about 45 bytes).
func fetchAnswerBytes(req *kmsg.FetchRequest, total int64) int64 {
	n := total + 64
	for _, t := range req.Topics {
		n += int64(len(t.Topic)) + 32 + 64*int64(len(t.Partitions))
	}
	return n
}

// readBuffer is the buffer a partition's read of n bytes goes into: one
// of the pool's when n is large enough.
func (s *Server) readBuffer(n int) []byte {
	if n < minPooledBytes {
		return make([]byte, 0, n)
	}
	return s.mem.bufs.get(n)
}

// holdRead decides what becomes of the buffer records were read into:
// records that fill at least half of a pooled buffer are answered from
// it, and it goes back to the pool once the answer is encoded; fewer (the
// read kept only whole batches) are copied out and the buffer goes back
// at once. So what a fetch holds stays within twice what it answers.
func (s *Server) holdRead(r *request, records []byte) []byte {
	switch {
	case cap(records) < minPooledBytes:
	case len(records) < cap(records)/2:
		small := bytes.Clone(records)
		s.mem.bufs.put(records)
		records = small
	default:
		r.acct.hold(records)
	}
	if len(records) == 0 {
		return nil
	}
	return records
}

// keepAnswer shrinks the fetch's reservation to what it holds: the
// buffers its records were read into and its encoded answer, and tells
// the connection how large the answer is.
func (s *Server) keepAnswer(r *request, req *kmsg.FetchRequest, records int64) {
	r.answerBytes = fetchAnswerBytes(req, records)
	r.keep(r.acct.pooledBytes() + outputBytes(r.answerBytes))
}

// fetchOnce reads every requested partition into resp and returns the
// record bytes it holds and whether an error makes the fetch answer now.
//
// It reads at most maxBytes, except that with oneBatch the first partition
// with data gets at least one whole batch (KIP-74).
func (s *Server) fetchOnce(r *request, req *kmsg.FetchRequest, resp *kmsg.FetchResponse, maxBytes int64, oneBatch bool) (total int64, ready bool) {
	for _, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			// No records is an empty field, never a null one, as in
			// Kafka: librdkafka refuses a null (MessageSetSize -1).
			rp.RecordBatches = []byte{}
			if !s.catalog.HasPartition(t.Topic, p.Partition) {
				r.setCode(&rp.ErrorCode, kerr.UnknownTopicOrPartition.Code)
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
				ready = true
				continue
			}
			room := max(maxBytes-total, 0)
			limit := int32(min(int64(p.PartitionMaxBytes), room))
			read := s.log.ReadAlloc
			if req.IsolationLevel == readCommitted {
				read = s.log.ReadCommittedAlloc
			}
			res, err := read(t.Topic, p.Partition, p.FetchOffset, limit, oneBatch && total == 0, s.readBuffer)
			res.Records = s.holdRead(r, res.Records)
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
			if req.IsolationLevel == readCommitted && err == nil {
				rp.AbortedTransactions = abortedTransactions(res.Aborted)
			}
			if err != nil {
				r.setCode(&rp.ErrorCode, s.code(err))
				// records logs a corrupt batch itself, rate-limited.
				if !errors.Is(err, records.ErrOffsetOutOfRange) && !errors.Is(err, records.ErrCorruptMessage) {
					r.logger.Error("fetch failed", "topic", t.Topic, "partition", p.Partition, "err", err)
				}
				ready = true
			}
			if res.Records != nil {
				rp.RecordBatches = res.Records
			}
			total += int64(len(res.Records))
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return total, ready
}

// fetchBound bounds the records fetchOnce may read now: what every named
// partition holds past its fetch offset, at most its PartitionMaxBytes,
// all at most maxBytes, plus the one batch KIP-74 lets the first exceed
// them by; and at most what the work lane can hold at once. A fetch that
// can read nothing reserves nothing; records that come meanwhile are read
// by its next round (the log's Watch fires at once for them).
func (s *Server) fetchBound(req *kmsg.FetchRequest, maxBytes int32) int64 {
	var n, any int64
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			readable := s.log.Readable(t.Topic, p.Partition, p.FetchOffset)
			n += min(readable, int64(max(p.PartitionMaxBytes, 0)))
			any += readable
		}
	}
	if any == 0 {
		return 0
	}
	records := min(n, int64(maxBytes)) + int64(s.log.MaxMessageBytes())
	// What the lane can hold, less the batch: KIP-74's batch is always
	// allowed for, and the lane takes a reservation above its maximum as
	// its maximum, alone.
	room := (s.mem.work.max - 2*fetchAnswerBytes(req, 0)) / fetchHoldFactor
	return max(min(records, room), int64(s.log.MaxMessageBytes()))
}

// fetchHoldFactor is how many times the records it reads a fetch may
// hold at once: the buffers they are read into (a pool class, less than
// twice what it holds, or a copy: holdRead) and the encoded answer (a pool
// class again: outputBytes).
const fetchHoldFactor = 4

// fetchHoldBytes bounds what a fetch of at most records bytes holds
// before its answer is written.
func fetchHoldBytes(req *kmsg.FetchRequest, records int64) int64 {
	if records == 0 {
		return 0
	}
	return fetchHoldFactor*records + 2*fetchAnswerBytes(req, 0)
}

// outputBytes is what the connection's output buffer takes for an answer
// of n bytes (grow: a pool class when large).
func outputBytes(n int64) int64 {
	if c, ok := pooledCap(int(n)); ok && n > keepOutputBytes {
		return int64(c)
	}
	return n
}

// readCommitted is the isolation level of Fetch and ListOffsets that
// reads only what transactions committed.
const readCommitted = 1

// abortedTransactions is a Fetch's list of aborted transactions (never
// null for read_committed, as Kafka answers).
func abortedTransactions(aborted []records.AbortedTxn) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	out := make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, 0, len(aborted))
	for _, a := range aborted {
		out = append(out, kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
	}
	return out
}
