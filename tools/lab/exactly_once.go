package lab

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/wireclient"
)

// ExactlyOnce runs the zombie's story with output: each member writes
// every record it processes to out. The first run writes plain records
// and commits plainly (at least once); the second puts each member's
// output and offset commit in one transaction (KIP-447), so the fence that
// refuses the zombie's commit also aborts its output. A read_committed
// reader of each output partition counts the duplicates.
func ExactlyOnce(ctx context.Context, w io.Writer, c clockRun, addr, group string, in, outTopic string) error {
	fmt.Fprintf(w, "lab exactly-once: the fence reaches the output, in group %s-plain, then %s-txn\n", group, group)
	fmt.Fprintf(w, "The zombie of lab zombie again, but now every member writes each record it processes\n")
	fmt.Fprintf(w, "to %s. First plainly, then inside transactions whose offset commit carries the\n", outTopic)
	fmt.Fprintf(w, "group's generation (KIP-447). A read_committed reader counts what reaches the output.\n")
	fmt.Fprintf(w, "Each step lists the requests sent (>) and the broker's answers (<).\n")
	tp := TP(in, 0)
	heading(w, fmt.Sprintf("Setup. Ten records go to %s in one batch, with fixed timestamps.", tp))
	producer, err := Dial(ctx, addr, MemberConfig{Group: group, Trace: w})
	if err != nil {
		return err
	}
	err = produceLabRecords(ctx, producer, tp)
	producer.Close()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n== Run 1: at least once. Outputs are plain records, commits plain OffsetCommits.\n")
	plain, err := eoRun(ctx, w, c, addr, group+"-plain", tp, TP(outTopic, 0), false)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n== Run 2: exactly once. Each member's outputs and commit go in one transaction.\n")
	txn, err := eoRun(ctx, w, c, addr, group+"-txn", tp, TP(outTopic, 1), true)
	if err != nil {
		return err
	}
	if plain != 4 || txn != 0 {
		return fmt.Errorf("lab exactly-once: %d and %d duplicates downstream, want 4 and 0", plain, txn)
	}
	fmt.Fprintf(w, "\nDuplicates downstream: at-least-once %d, exactly-once %d. In both runs the fence\n", plain, txn)
	fmt.Fprintf(w, "refused A's commit. Without transactions that came too late: A had already written\n")
	fmt.Fprintf(w, "6 to 9, and B wrote them again. With them, A's writes belonged to a transaction\n")
	fmt.Fprintf(w, "that could commit only with its offset commit; the fence refused the one, so A\n")
	fmt.Fprintf(w, "aborted the other, and a read_committed reader skips everything an abort marker\n")
	fmt.Fprintf(w, "closes. The records are still in the log (read_uncommitted sees them); the\n")
	fmt.Fprintf(w, "processing happened twice, its effect once (docs/behavior-matrix.md, txn-exactly-once).\n")
	return nil
}

// eoRun plays the story once and returns the duplicates a read_committed
// reader of out finds.
func eoRun(ctx context.Context, w io.Writer, c clockRun, addr, group string, tp, out assignor.TopicPartition, transactional bool) (int, error) {
	t := newTally()
	a, err := newReader(ctx, addr, "A", MemberConfig{Group: group, SessionTimeout: c.shortSession()}, tp, t, w)
	if err != nil {
		return 0, err
	}
	defer a.Close()
	b, err := newReader(ctx, addr, "B", MemberConfig{Group: group}, tp, t, w)
	if err != nil {
		return 0, err
	}
	defer b.Close()
	defer leaveQuietly(ctx, b.Member)
	ao := &eoWriter{r: a, out: out, txnID: group + "-a", transactional: transactional}
	bo := &eoWriter{r: b, out: out, txnID: group + "-b", transactional: transactional}

	heading(w, fmt.Sprintf("1. A joins, is given %s, processes 0 to 5, writes them and commits 6; then", tp))
	fmt.Fprintf(w, "   processes and writes 6 and 7.\n")
	if err := a.join(ctx); err != nil {
		return 0, err
	}
	if err := ao.init(ctx); err != nil {
		return 0, err
	}
	if _, err := a.start(ctx); err != nil {
		return 0, err
	}
	if err := a.fetch(ctx); err != nil {
		return 0, err
	}
	if err := ao.processAndWrite(ctx, 5); err != nil {
		return 0, err
	}
	if err := ao.commit(ctx, 6, 0); err != nil {
		return 0, err
	}
	if err := ao.processAndWrite(ctx, 7); err != nil {
		return 0, err
	}

	heading(w, "2. A pauses past its session; the expiry step removes it. A is not told.")
	if err := c.endSession(ctx, w, b.Member, group, a.ID); err != nil {
		return 0, err
	}

	heading(w, fmt.Sprintf("3. B joins, is given %s, starts at the committed offset, processes and writes", tp))
	fmt.Fprintf(w, "   6 to 9 and commits 10.\n")
	if err := b.join(ctx); err != nil {
		return 0, err
	}
	if err := bo.init(ctx); err != nil {
		return 0, err
	}
	if _, err := b.start(ctx); err != nil {
		return 0, err
	}
	if err := b.fetch(ctx); err != nil {
		return 0, err
	}
	if err := bo.processAndWrite(ctx, 9); err != nil {
		return 0, err
	}
	if err := bo.commit(ctx, 10, 0); err != nil {
		return 0, err
	}

	heading(w, fmt.Sprintf("4. A wakes, processes and writes 8 and 9, and commits 10 at generation %d.", a.Generation))
	if err := ao.processAndWrite(ctx, 9); err != nil {
		return 0, err
	}
	if err := ao.commit(ctx, 10, codeIllegalGeneration); err != nil {
		return 0, err
	}
	if transactional {
		fmt.Fprintf(w, "  Fenced: A aborts its transaction, and with it its writes of 6 to 9.\n")
		if err := ao.end(ctx, false); err != nil {
			return 0, err
		}
	} else {
		fmt.Fprintf(w, "  Fenced, but its writes of 6 to 9 are already in %s.\n", out)
	}

	heading(w, fmt.Sprintf("Downstream. A read_committed reader reads %s.", out))
	values, err := readCommitted(ctx, w, a.Member, out)
	if err != nil {
		return 0, err
	}
	seen := map[string]int{}
	for _, v := range values {
		seen[v]++
	}
	var twice []string
	for _, v := range slices.Sorted(func(yield func(string) bool) {
		for k := range seen {
			if !yield(k) {
				return
			}
		}
	}) {
		if seen[v] > 1 {
			twice = append(twice, v)
		}
	}
	fmt.Fprintf(w, "  %d records read, %d distinct; twice: %v. Duplicates downstream: %d.\n", len(values), len(seen), twice, len(values)-len(seen))
	return len(values) - len(seen), nil
}

// eoWriter is a reader's output side: plain, or a transactional producer.
type eoWriter struct {
	r             *reader
	out           assignor.TopicPartition
	txnID         string
	transactional bool
	pid           int64
	epoch         int16
	seq           int32
	open          bool // a transaction has begun
}

func (e *eoWriter) trace(format string, args ...any) { fmt.Fprintf(e.r.w, "  "+format+"\n", args...) }

func (e *eoWriter) conn() *wireclient.Client { return e.r.conn }

// init gets a transactional producer id.
func (e *eoWriter) init(ctx context.Context) error {
	if !e.transactional {
		return nil
	}
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.TransactionalID, req.TransactionTimeoutMillis = 4, &e.txnID, 60000
	e.trace("> InitProducerId v4 transactional_id=%s", e.txnID)
	resp, err := Request[*kmsg.InitProducerIDResponse](ctx, e.conn(), req)
	if err != nil {
		return err
	}
	e.trace("< InitProducerId v4 %s producer_id=%d epoch=%d", CodeName(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch)
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	e.pid, e.epoch = resp.ProducerID, resp.ProducerEpoch
	return nil
}

// begin adds the output partition and the group to a new transaction.
func (e *eoWriter) begin(ctx context.Context) error {
	if !e.transactional || e.open {
		return nil
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch = 3, e.txnID, e.pid, e.epoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: e.out.Topic, Partitions: []int32{e.out.Partition}}}
	e.trace("> AddPartitionsToTxn v3 %s", e.out)
	ar, err := Request[*kmsg.AddPartitionsToTxnResponse](ctx, e.conn(), add)
	if err != nil {
		return err
	}
	code := ar.Topics[0].Partitions[0].ErrorCode
	e.trace("< AddPartitionsToTxn v3 %s=%s", e.out, CodeName(code))
	if code != 0 {
		return kerr.ErrorForCode(code)
	}
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.Version, ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = 3, e.txnID, e.pid, e.epoch, e.r.cfg.Group
	e.trace("> AddOffsetsToTxn v3 group=%s", e.r.cfg.Group)
	or, err := Request[*kmsg.AddOffsetsToTxnResponse](ctx, e.conn(), ao)
	if err != nil {
		return err
	}
	e.trace("< AddOffsetsToTxn v3 %s", CodeName(or.ErrorCode))
	if or.ErrorCode != 0 {
		return kerr.ErrorForCode(or.ErrorCode)
	}
	e.open = true
	return nil
}

// processAndWrite processes the held records through offset and writes
// each processed value to the output, as one batch.
func (e *eoWriter) processAndWrite(ctx context.Context, through int64) error {
	before := len(e.r.done)
	if err := e.r.process(through); err != nil {
		return err
	}
	var values []string
	for _, off := range e.r.done[before:] {
		values = append(values, fmt.Sprintf("out-%d", off))
	}
	if len(values) == 0 {
		return nil
	}
	if err := e.begin(ctx); err != nil {
		return err
	}
	spec := records.BatchSpec{FirstTimestamp: RecordsTimestamp}
	for _, v := range values {
		spec.Records = append(spec.Records, records.Record{Value: []byte(v)})
	}
	if e.transactional {
		spec.Idempotent, spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = true, e.pid, e.epoch, e.seq
	}
	raw := records.EncodeBatch(spec)
	if e.transactional {
		binary.BigEndian.PutUint16(raw[21:], 0x10)
		binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
		e.seq += int32(len(values))
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
	if e.transactional {
		req.TransactionID = &e.txnID
	}
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: e.out.Topic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: e.out.Partition, Records: raw}}}}
	kind := "plain"
	if e.transactional {
		kind = "transactional"
	}
	e.trace("> Produce v9 %s %s %s", kind, e.out, valueRange(values))
	resp, err := Request[*kmsg.ProduceResponse](ctx, e.conn(), req)
	if err != nil {
		return err
	}
	p := resp.Topics[0].Partitions[0]
	e.trace("< Produce v9 %s=%s base_offset=%d", e.out, CodeName(p.ErrorCode), p.BaseOffset)
	if p.ErrorCode != 0 {
		return kerr.ErrorForCode(p.ErrorCode)
	}
	return nil
}

// commit commits offset for the input partition at the member's
// generation, and insists on want: plainly, or as the transaction's
// TxnOffsetCommit followed (when accepted) by EndTxn commit.
func (e *eoWriter) commit(ctx context.Context, offset int64, want int16) error {
	if !e.transactional {
		return e.r.commit(ctx, offset, want)
	}
	if err := e.begin(ctx); err != nil {
		return err
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = 3, e.txnID, e.pid, e.epoch
	req.Group, req.MemberID, req.Generation = e.r.cfg.Group, e.r.ID, e.r.Generation
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = e.r.tp.Partition, offset
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: e.r.tp.Topic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{rp}}}
	e.trace("> TxnOffsetCommit v3 member=%s generation=%d %s=%d", e.r.ID, e.r.Generation, e.r.tp, offset)
	resp, err := Request[*kmsg.TxnOffsetCommitResponse](ctx, e.conn(), req)
	if err != nil {
		return err
	}
	code := resp.Topics[0].Partitions[0].ErrorCode
	e.trace("< TxnOffsetCommit v3 %s=%s", e.r.tp, CodeName(code))
	if code != want {
		return fmt.Errorf("lab exactly-once: TxnOffsetCommit answered %s, want %s", CodeName(code), CodeName(want))
	}
	if code != 0 {
		return nil
	}
	return e.end(ctx, true)
}

// end ends the open transaction.
func (e *eoWriter) end(ctx context.Context, commit bool) error {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = 3, e.txnID, e.pid, e.epoch, commit
	e.trace("> EndTxn v3 commit=%v", commit)
	resp, err := Request[*kmsg.EndTxnResponse](ctx, e.conn(), req)
	if err != nil {
		return err
	}
	e.trace("< EndTxn v3 %s", CodeName(resp.ErrorCode))
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	e.open = false
	return nil
}

// readCommitted reads tp from 0 to its end at read_committed and returns
// the values a consumer delivers: aborted transactions' records and
// markers skipped.
func readCommitted(ctx context.Context, w io.Writer, m *Member, tp assignor.TopicPartition) ([]string, error) {
	var out []string
	active := map[int64]bool{}
	var aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction
	for offset := int64(0); ; {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.IsolationLevel, req.MaxBytes = 12, -1, 1, 1<<20
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = tp.Partition, offset, 1<<20
		req.Topics = []kmsg.FetchRequestTopic{{Topic: tp.Topic, Partitions: []kmsg.FetchRequestTopicPartition{fp}}}
		fmt.Fprintf(w, "  > Fetch v12 read_committed %s offset=%d\n", tp, offset)
		resp, err := Request[*kmsg.FetchResponse](ctx, m.conn, req)
		if err != nil {
			return nil, err
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			return nil, kerr.ErrorForCode(p.ErrorCode)
		}
		aborted = append(aborted, p.AbortedTransactions...)
		slices.SortStableFunc(aborted, func(a, b kmsg.FetchResponseTopicPartitionAbortedTransaction) int {
			return int(a.FirstOffset - b.FirstOffset)
		})
		if len(p.RecordBatches) == 0 {
			fmt.Fprintf(w, "  < Fetch v12 %s high_watermark=%d last_stable_offset=%d: the end\n", tp, p.HighWatermark, p.LastStableOffset)
			return out, nil
		}
		var delivered, skipped int
		for raw := p.RecordBatches; len(raw) > 0; {
			var b kmsg.RecordBatch
			if err := b.ReadFrom(raw); err != nil {
				return nil, err
			}
			raw = raw[12+int(b.Length):]
			last := b.FirstOffset + int64(b.LastOffsetDelta)
			offset = last + 1
			for len(aborted) > 0 && aborted[0].FirstOffset <= last {
				active[aborted[0].ProducerID] = true
				aborted = aborted[1:]
			}
			if b.Attributes&0x20 != 0 {
				delete(active, b.ProducerID)
				continue
			}
			n := int(b.NumRecords)
			if b.Attributes&0x10 != 0 && active[b.ProducerID] {
				skipped += n
				continue
			}
			rs, err := decodeBatchValues(b)
			if err != nil {
				return nil, err
			}
			out = append(out, rs...)
			delivered += n
		}
		fmt.Fprintf(w, "  < Fetch v12 %s high_watermark=%d last_stable_offset=%d aborted_transactions=%d: %d records delivered, %d of aborted transactions skipped\n",
			tp, p.HighWatermark, p.LastStableOffset, len(p.AbortedTransactions), delivered, skipped)
	}
}

// decodeBatchValues returns an uncompressed batch's record values.
func decodeBatchValues(b kmsg.RecordBatch) ([]string, error) {
	var out []string
	src := b.Records
	for range b.NumRecords {
		var r kmsg.Record
		if err := r.ReadFrom(src); err != nil {
			return nil, err
		}
		out = append(out, string(r.Value))
		n, used := binary.Varint(src)
		if used <= 0 {
			return nil, fmt.Errorf("lab: bad record length")
		}
		src = src[used+int(n):]
	}
	return out, nil
}
