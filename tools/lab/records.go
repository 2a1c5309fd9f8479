package lab

// Records over the wire: one Produce, Fetch or ListOffsets per call, each
// traced the way the group requests are, for the labs that put records in
// a partition and read them back (replay, zombie) and for the comparison
// scenarios that do the same against kfake.

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/wireclient"
)

// The versions of the record requests: what Kafka 4 serves without topic
// ids, and what minibroker and kfake both serve.
const (
	ProduceVersion     int16 = 9
	FetchVersion       int16 = 12
	ListOffsetsVersion int16 = 7
)

// RecordsTimestamp is the create time of the first record a lab produces,
// 2024-01-01T00:00:00Z in Unix milliseconds; each next record is one
// second later. Fixed, so that the records, and the labs' output, are the
// same bytes on every run.
const RecordsTimestamp int64 = 1704067200000

// Tracef is where a request and its answer are traced: one line each. A
// nil Tracef is silent.
type Tracef func(format string, args ...any)

func (f Tracef) line(format string, args ...any) {
	if f != nil {
		f(format, args...)
	}
}

// Produce sends one Produce (acks -1: answered once the batch is durable)
// of values to tp, as one batch made by records.EncodeBatch, with
// RecordsTimestamp plus one second per record. It returns the partition's
// code and the base offset the broker gave the batch.
func Produce(ctx context.Context, conn *wireclient.Client, trace Tracef, tp assignor.TopicPartition, values ...string) (int16, int64, error) {
	spec := records.BatchSpec{FirstTimestamp: RecordsTimestamp}
	for i, v := range values {
		spec.Records = append(spec.Records, records.Record{Value: []byte(v), TimestampDelta: int64(i) * 1000})
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version = ProduceVersion
	req.Acks = -1
	req.TimeoutMillis = 5000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = tp.Topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition, p.Records = tp.Partition, records.EncodeBatch(spec)
	t.Partitions = []kmsg.ProduceRequestTopicPartition{p}
	req.Topics = []kmsg.ProduceRequestTopic{t}
	trace.line("  > Produce v%d acks=-1 %s: one batch of %d records, %s", req.Version, tp, len(values), valueRange(values))
	resp, err := Request[*kmsg.ProduceResponse](ctx, conn, req)
	if err != nil {
		return 0, 0, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, 0, fmt.Errorf("lab: the Produce answer lacks %s", tp)
	}
	rp := resp.Topics[0].Partitions[0]
	if rp.ErrorCode != 0 {
		trace.line("  < Produce v%d %s=%s", resp.Version, tp, CodeName(rp.ErrorCode))
		return rp.ErrorCode, -1, nil
	}
	trace.line("  < Produce v%d %s=NONE base offset %d", resp.Version, tp, rp.BaseOffset)
	return 0, rp.BaseOffset, nil
}

// valueRange renders produced values for a trace line: "payment-0 ..
// payment-9", or the one value.
func valueRange(values []string) string {
	switch len(values) {
	case 0:
		return "no values"
	case 1:
		return "value " + values[0]
	}
	return "values " + values[0] + " .. " + values[len(values)-1]
}

// Fetched is one partition of a Fetch answer.
type Fetched struct {
	Code          int16
	HighWatermark int64
	// Records are the records at or after the fetch offset, as a client
	// keeps them: the broker answers whole batches, so the first batch may
	// start before the fetch offset, and those records are dropped.
	Records []records.DecodedRecord
	// Skipped counts the records before the fetch offset that the answer
	// carried and the client dropped.
	Skipped int
}

// Fetch sends one Fetch of tp from offset (no wait: MaxWait 0, MinBytes
// 1) and decodes the answer with records.Decode.
func Fetch(ctx context.Context, conn *wireclient.Client, trace Tracef, tp assignor.TopicPartition, offset int64) (Fetched, error) {
	req := kmsg.NewPtrFetchRequest()
	req.Version = FetchVersion
	req.ReplicaID = -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1<<20
	req.SessionEpoch = -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic = tp.Topic
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition, p.FetchOffset, p.PartitionMaxBytes = tp.Partition, offset, 1<<20
	p.LogStartOffset = -1
	t.Partitions = []kmsg.FetchRequestTopicPartition{p}
	req.Topics = []kmsg.FetchRequestTopic{t}
	trace.line("  > Fetch v%d %s offset=%d", req.Version, tp, offset)
	resp, err := Request[*kmsg.FetchResponse](ctx, conn, req)
	if err != nil {
		return Fetched{}, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return Fetched{}, fmt.Errorf("lab: the Fetch answer lacks %s", tp)
	}
	fp := resp.Topics[0].Partitions[0]
	out := Fetched{Code: fp.ErrorCode, HighWatermark: fp.HighWatermark}
	if fp.ErrorCode != 0 {
		trace.line("  < Fetch v%d %s=%s", resp.Version, tp, CodeName(fp.ErrorCode))
		return out, nil
	}
	all, err := records.Decode(fp.RecordBatches)
	if err != nil {
		return out, fmt.Errorf("lab: the Fetch answer for %s: %w", tp, err)
	}
	for _, r := range all {
		if r.Offset < offset {
			out.Skipped++
			continue
		}
		out.Records = append(out.Records, r)
	}
	line := fmt.Sprintf("  < Fetch v%d %s=NONE high watermark %d, %s", resp.Version, tp, fp.HighWatermark, offsetRange(out.Records))
	if out.Skipped > 0 {
		line += fmt.Sprintf(" (the batch starts at %d; the client drops the %d records before %d)", all[0].Offset, out.Skipped, offset)
	}
	trace.line("%s", line)
	return out, nil
}

// offsetRange renders fetched records for a trace line: "records 6-9",
// "record 6" or "no records".
func offsetRange(recs []records.DecodedRecord) string {
	switch len(recs) {
	case 0:
		return "no records"
	case 1:
		return "record " + strconv.FormatInt(recs[0].Offset, 10)
	}
	return fmt.Sprintf("records %d-%d", recs[0].Offset, recs[len(recs)-1].Offset)
}

// ListOffsetsEarliest and ListOffsetsLatest are ListOffsets' special
// timestamps: the log start, and the high watermark.
const (
	ListOffsetsEarliest int64 = -2
	ListOffsetsLatest   int64 = -1
)

// ListOffset sends one ListOffsets for tp at timestamp (or one of the
// special timestamps) and returns the partition's code and offset.
func ListOffset(ctx context.Context, conn *wireclient.Client, trace Tracef, tp assignor.TopicPartition, timestamp int64) (int16, int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = ListOffsetsVersion
	req.ReplicaID = -1
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = tp.Topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition, p.Timestamp = tp.Partition, timestamp
	t.Partitions = []kmsg.ListOffsetsRequestTopicPartition{p}
	req.Topics = []kmsg.ListOffsetsRequestTopic{t}
	what := strconv.FormatInt(timestamp, 10)
	switch timestamp {
	case ListOffsetsEarliest:
		what = "earliest"
	case ListOffsetsLatest:
		what = "latest"
	}
	trace.line("  > ListOffsets v%d %s %s", req.Version, tp, what)
	resp, err := Request[*kmsg.ListOffsetsResponse](ctx, conn, req)
	if err != nil {
		return 0, 0, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, 0, fmt.Errorf("lab: the ListOffsets answer lacks %s", tp)
	}
	rp := resp.Topics[0].Partitions[0]
	if rp.ErrorCode != 0 {
		trace.line("  < ListOffsets v%d %s=%s", resp.Version, tp, CodeName(rp.ErrorCode))
		return rp.ErrorCode, -1, nil
	}
	trace.line("  < ListOffsets v%d %s=NONE offset %d", resp.Version, tp, rp.Offset)
	return 0, rp.Offset, nil
}

// FetchRecords fetches tp from offset on the member's connection, traced
// with its requests.
func (m *Member) FetchRecords(ctx context.Context, tp assignor.TopicPartition, offset int64) (Fetched, error) {
	return Fetch(ctx, m.conn, m.tracef, tp, offset)
}

// ListOffset looks up an offset of tp on the member's connection.
func (m *Member) ListOffset(ctx context.Context, tp assignor.TopicPartition, timestamp int64) (int16, int64, error) {
	return ListOffset(ctx, m.conn, m.tracef, tp, timestamp)
}

// Produce produces values to tp on the member's connection: a lab's
// setup, sent by whichever member is at hand.
func (m *Member) Produce(ctx context.Context, tp assignor.TopicPartition, values ...string) (int16, int64, error) {
	return Produce(ctx, m.conn, m.tracef, tp, values...)
}
