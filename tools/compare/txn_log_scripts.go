package compare

// Transactions as the partition log shows them: the commit and abort
// markers (control batches) and their bytes, the last stable offset, and
// what a Fetch at read_committed answers (batches below the LSO and the
// aborted transactions). Each scenario writes to its record topic
// (Records), which no other scenario reads.

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/tools/lab"
	"github.com/minibroker/minibroker/wireclient"
)

// Fetch isolation levels.
const (
	readUncommitted int8 = 0
	readCommitted   int8 = 1
)

// logRead is one partition of a raw Fetch answer: its offsets, its
// aborted transactions and its batches, undecoded.
type logRead struct {
	highWatermark, lastStable int64
	aborted                   []kmsg.FetchResponseTopicPartitionAbortedTransaction
	batches                   []kmsg.RecordBatch
}

// readLog sends one Fetch v12 of tp from offset at isolation (no wait)
// and returns the partition's answer, insisting on NONE.
func readLog(ctx context.Context, conn *wireclient.Client, tp assignor.TopicPartition, offset int64, isolation int8) (logRead, error) {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.IsolationLevel = lab.FetchVersion, -1, isolation
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = 0, 1, 1<<20, -1
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.LogStartOffset = tp.Partition, offset, 1<<20, -1
	req.Topics = []kmsg.FetchRequestTopic{{Topic: tp.Topic, Partitions: []kmsg.FetchRequestTopicPartition{fp}}}
	resp, err := lab.Request[*kmsg.FetchResponse](ctx, conn, req)
	if err != nil {
		return logRead{}, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return logRead{}, fmt.Errorf("the Fetch answer lacks %s", tp)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		return logRead{}, fmt.Errorf("the Fetch of %s answered %s", tp, lab.CodeName(p.ErrorCode))
	}
	out := logRead{highWatermark: p.HighWatermark, lastStable: p.LastStableOffset, aborted: p.AbortedTransactions}
	for raw := p.RecordBatches; len(raw) > 0; {
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw); err != nil {
			return logRead{}, fmt.Errorf("the Fetch answer for %s: %w", tp, err)
		}
		if n := 12 + int(b.Length); n <= len(raw) {
			raw = raw[n:]
		} else {
			return logRead{}, fmt.Errorf("the Fetch answer for %s: batch of %d bytes in %d", tp, n, len(raw))
		}
		out.batches = append(out.batches, b)
	}
	return out, nil
}

// The batch attributes the scenarios look at.
const (
	attrTransactional int16 = 0x10
	attrControl       int16 = 0x20
)

// controlRecord is the one record of a control batch, decoded with kmsg.
type controlRecord struct {
	key    kmsg.ControlRecordKey
	marker kmsg.EndTxnMarker
}

// decodeControl decodes a control batch's records.
func decodeControl(b kmsg.RecordBatch) ([]controlRecord, error) {
	var out []controlRecord
	src := b.Records
	for range b.NumRecords {
		n, used := binary.Varint(src)
		if used <= 0 || n < 0 || n > int64(len(src)-used) {
			return nil, fmt.Errorf("bad control record length")
		}
		var r kmsg.Record
		if err := r.ReadFrom(src[:used+int(n)]); err != nil {
			return nil, err
		}
		src = src[used+int(n):]
		var c controlRecord
		if err := c.key.ReadFrom(r.Key); err != nil {
			return nil, fmt.Errorf("control record key: %w", err)
		}
		if err := c.marker.ReadFrom(r.Value); err != nil {
			return nil, fmt.Errorf("control record value: %w", err)
		}
		out = append(out, c)
	}
	return out, nil
}

// batchWords names batches by offset: "0-1", "3", and a marker as "2
// abort" or "4 commit" (a control batch that is no marker: "2 control").
func batchWords(batches []kmsg.RecordBatch) string {
	if len(batches) == 0 {
		return "no batches"
	}
	words := make([]string, len(batches))
	for i, b := range batches {
		last := b.FirstOffset + int64(b.LastOffsetDelta)
		w := fmt.Sprintf("%d-%d", b.FirstOffset, last)
		if last == b.FirstOffset {
			w = fmt.Sprint(b.FirstOffset)
		}
		if b.Attributes&attrControl != 0 {
			kind := "control"
			if cs, err := decodeControl(b); err == nil && len(cs) == 1 {
				kind = map[kmsg.ControlRecordKeyType]string{kmsg.ControlRecordKeyTypeAbort: "abort", kmsg.ControlRecordKeyTypeCommit: "commit"}[cs[0].key.Type]
			}
			w += " " + kind
		}
		words[i] = w
	}
	return strings.Join(words, ", ")
}

// abortedWords names the aborted transactions of a Fetch answer by first
// offset, and whether each is p's.
func abortedWords(p *txnProducer, aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction) string {
	if aborted == nil {
		return "none (null)"
	}
	if len(aborted) == 0 {
		return "none"
	}
	words := make([]string, len(aborted))
	for i, a := range aborted {
		who := "another producer"
		if a.ProducerID == p.pid {
			who = "its"
		}
		words[i] = fmt.Sprintf("%s from %d", who, a.FirstOffset)
	}
	return strings.Join(words, ", ")
}

// offsetsAt answers tp's high watermark and its ListOffsets latest at
// read_committed, as "hw/latest".
func offsetsAt(ctx context.Context, conn *wireclient.Client, tp assignor.TopicPartition) (string, error) {
	hw, err := listLatest(ctx, conn, tp, readUncommitted)
	if err != nil {
		return "", err
	}
	lso, err := listLatest(ctx, conn, tp, readCommitted)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d/%d", hw, lso), nil
}

// listLatest sends ListOffsets v7 latest for tp at isolation and returns
// the offset, insisting on NONE.
func listLatest(ctx context.Context, conn *wireclient.Client, tp assignor.TopicPartition, isolation int8) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID, req.IsolationLevel = lab.ListOffsetsVersion, -1, isolation
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = tp.Partition, lab.ListOffsetsLatest
	req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: tp.Topic, Partitions: []kmsg.ListOffsetsRequestTopicPartition{rp}}}
	resp, err := lab.Request[*kmsg.ListOffsetsResponse](ctx, conn, req)
	if err != nil {
		return 0, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("the ListOffsets answer lacks %s", tp)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		return 0, fmt.Errorf("ListOffsets of %s answered %s", tp, lab.CodeName(p.ErrorCode))
	}
	return p.Offset, nil
}

// wantNone turns a (code name, err) pair into an error unless it is NONE.
func wantNone(what string) func(code string, err error) error {
	return func(code string, err error) error {
		if err != nil {
			return err
		}
		if code != "NONE" {
			return fmt.Errorf("%s answered %s", what, code)
		}
		return nil
	}
}

// begin adds tp to p's transaction and insists on NONE.
func (p *txnProducer) begin(ctx context.Context, tp assignor.TopicPartition) error {
	return wantNone("AddPartitionsToTxn")(p.addPartition(ctx, 3, p.pid, p.epoch, tp))
}

// txnLastStableOffset: a plain record at 0; a transaction writes 1-2 and
// stays open; another plain record at 3; then the commit. After each
// step, the high watermark and ListOffsets latest at read_committed,
// and Fetch's last stable offset while the transaction is open.
func txnLastStableOffset(ctx context.Context, s *Script) (string, error) {
	tp := lab.TP(s.group, 0)
	p, err := s.txnProducer(ctx, "lso")
	if err != nil {
		return "", err
	}
	if err := want(plainProduce(ctx, p.conn, tp, "before"))("Produce", 0); err != nil {
		return "", err
	}
	if err := p.begin(ctx, tp); err != nil {
		return "", err
	}
	if err := wantNone("Produce")(p.produce(ctx, tp, "open-0", "open-1")); err != nil {
		return "", err
	}
	open, err := offsetsAt(ctx, p.conn, tp)
	if err != nil {
		return "", err
	}
	if err := want(plainProduce(ctx, p.conn, tp, "during"))("Produce", 0); err != nil {
		return "", err
	}
	during, err := offsetsAt(ctx, p.conn, tp)
	if err != nil {
		return "", err
	}
	read, err := readLog(ctx, p.conn, tp, 0, readCommitted)
	if err != nil {
		return "", err
	}
	if err := wantNone("EndTxn commit")(p.end(ctx, true)); err != nil {
		return "", err
	}
	done, err := offsetsAt(ctx, p.conn, tp)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("high watermark/read_committed latest: open %s; plain record beside it %s (Fetch last stable %d); committed %s",
		open, during, read.lastStable, done), nil
}

// plainProduce produces values to tp as a plain producer (no producer
// id) and returns the partition's code.
func plainProduce(ctx context.Context, conn *wireclient.Client, tp assignor.TopicPartition, values ...string) (int16, error) {
	code, _, err := lab.Produce(ctx, conn, nil, tp, values...)
	return code, err
}

// txnReadCommitted: one producer's aborted transaction (records 0-1,
// marker 2), its committed one (3, marker 4) and an open one (5), then
// Fetches: read_committed from 0, from 3 and from 5, and read_uncommitted
// from 0, each with its batches, aborted transactions and last stable
// offset.
func txnReadCommitted(ctx context.Context, s *Script) (string, error) {
	tp := lab.TP(s.group, 0)
	p, err := s.txnProducer(ctx, "read-committed")
	if err != nil {
		return "", err
	}
	for _, step := range []struct {
		values []string
		commit bool
	}{{[]string{"aborted-0", "aborted-1"}, false}, {[]string{"committed"}, true}, {[]string{"open"}, false}} {
		if err := p.begin(ctx, tp); err != nil {
			return "", err
		}
		if err := wantNone("Produce")(p.produce(ctx, tp, step.values...)); err != nil {
			return "", err
		}
		if step.values[0] == "open" {
			break
		}
		if err := wantNone("EndTxn")(p.end(ctx, step.commit)); err != nil {
			return "", err
		}
	}
	var words []string
	for _, f := range []struct {
		offset    int64
		isolation int8
		name      string
	}{{0, readCommitted, "read_committed from 0"}, {3, readCommitted, "from 3"}, {5, readCommitted, "from 5"}, {0, readUncommitted, "read_uncommitted from 0"}} {
		r, err := readLog(ctx, p.conn, tp, f.offset, f.isolation)
		if err != nil {
			return "", err
		}
		words = append(words, fmt.Sprintf("%s: %s, aborted %s, last stable %d", f.name, batchWords(r.batches), abortedWords(p, r.aborted), r.lastStable))
	}
	if err := wantNone("EndTxn abort")(p.end(ctx, false)); err != nil {
		return "", err
	}
	return strings.Join(words, "; "), nil
}

// txnMarkers: a transaction of one record committed (0, marker 1), then
// one aborted (2, marker 3); the markers' bytes as a read_uncommitted
// Fetch returns them.
func txnMarkers(ctx context.Context, s *Script) (string, error) {
	tp := lab.TP(s.group, 0)
	p, err := s.txnProducer(ctx, "markers")
	if err != nil {
		return "", err
	}
	for _, commit := range []bool{true, false} {
		if err := p.begin(ctx, tp); err != nil {
			return "", err
		}
		if err := wantNone("Produce")(p.produce(ctx, tp, fmt.Sprint("commit ", commit))); err != nil {
			return "", err
		}
		if err := wantNone("EndTxn")(p.end(ctx, commit)); err != nil {
			return "", err
		}
	}
	r, err := readLog(ctx, p.conn, tp, 0, readUncommitted)
	if err != nil {
		return "", err
	}
	words := []string{batchWords(r.batches)}
	for _, b := range r.batches {
		if b.Attributes&attrControl == 0 {
			if b.Attributes&attrTransactional == 0 {
				return "", fmt.Errorf("the batch at %d is not transactional", b.FirstOffset)
			}
			continue
		}
		w, err := markerWords(p, b)
		if err != nil {
			return "", fmt.Errorf("the marker at %d: %w", b.FirstOffset, err)
		}
		words = append(words, fmt.Sprintf("%d: %s", b.FirstOffset, w))
	}
	words = append(words, fmt.Sprintf("high watermark %d", r.highWatermark))
	return strings.Join(words, "; "), nil
}

// markerWords describes a control batch: its attributes, sequence, the
// producer it names (p, at p's epoch, or another) and its one record.
func markerWords(p *txnProducer, b kmsg.RecordBatch) (string, error) {
	cs, err := decodeControl(b)
	if err != nil {
		return "", err
	}
	who := "another producer"
	if b.ProducerID == p.pid {
		who = fmt.Sprintf("its producer at epoch %+d", b.ProducerEpoch-p.epoch)
	}
	w := fmt.Sprintf("attributes %#x, sequence %d, %d record, %s", b.Attributes, b.FirstSequence, len(cs), who)
	for _, c := range cs {
		w += fmt.Sprintf(", key v%d type %d, value v%d coordinator epoch %d", c.key.Version, c.key.Type, c.marker.Version, c.marker.CoordinatorEpoch)
	}
	return w, nil
}
