package compare

// Scenarios of transactions (KIP-98, KIP-447; docs/design.md section 13):
// raw InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit,
// EndTxn and transactional Produce requests, for the rules where the two
// brokers may answer differently. Each transactional id is named after the
// script's group, so that a run on a shared broker has ids of its own. A
// scenario that adds a partition to a transaction adds its record topic's
// (Records), never one of the chapter's topics: the markers would take
// offsets there that other scenarios read.

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/tools/lab"
	"github.com/minibroker/minibroker/wireclient"
)

// txnProducer is one transactional producer on a connection of the
// script's: its transactional id, the producer id and epoch its last
// InitProducerId answered, and the next sequence number per partition at
// that epoch.
type txnProducer struct {
	conn  *wireclient.Client
	id    string
	pid   int64
	epoch int16
	seq   map[assignor.TopicPartition]int32
}

// txnTimeoutMillis is the transaction timeout of the scenarios' producers
// (a minute: none of them waits for it) unless a scenario sets its own.
const txnTimeoutMillis = 60000

// txnProducer dials a connection and initializes the transactional id
// named after the script's group and suffix.
func (s *Script) txnProducer(ctx context.Context, suffix string) (*txnProducer, error) {
	return s.txnProducerWith(ctx, suffix, txnTimeoutMillis)
}

// txnProducerWith is txnProducer with a transaction timeout of
// timeoutMillis.
func (s *Script) txnProducerWith(ctx context.Context, suffix string, timeoutMillis int32) (*txnProducer, error) {
	conn, err := s.rawConn(ctx)
	if err != nil {
		return nil, err
	}
	s.conns = append(s.conns, conn)
	p := &txnProducer{conn: conn, id: s.group + "-" + suffix}
	return p, wantNone("InitProducerId for " + p.id)(p.initWith(ctx, timeoutMillis, -1, -1))
}

// init sends InitProducerId v4 for the producer's id and insists on NONE.
func (p *txnProducer) init(ctx context.Context) error {
	return wantNone("InitProducerId for " + p.id)(p.initWith(ctx, txnTimeoutMillis, -1, -1))
}

// initWith sends InitProducerId v4 for the producer's id with a
// transaction timeout of timeoutMillis, naming pid and epoch (KIP-360;
// -1 for none), and returns its code. On NONE the producer takes the
// producer id and epoch answered, and its sequences start again.
func (p *txnProducer) initWith(ctx context.Context, timeoutMillis int32, pid int64, epoch int16) (string, error) {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.TransactionalID, req.TransactionTimeoutMillis = 4, &p.id, timeoutMillis
	req.ProducerID, req.ProducerEpoch = pid, epoch
	resp, err := lab.Request[*kmsg.InitProducerIDResponse](ctx, p.conn, req)
	if err != nil {
		return "", err
	}
	if resp.ErrorCode == 0 {
		p.pid, p.epoch, p.seq = resp.ProducerID, resp.ProducerEpoch, nil
	}
	return lab.CodeName(resp.ErrorCode), nil
}

// addPartition sends AddPartitionsToTxn at version for tp, as the
// producer's id with pid and epoch, and returns the partition's code.
func (p *txnProducer) addPartition(ctx context.Context, version int16, pid int64, epoch int16, tp assignor.TopicPartition) (string, error) {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = version, p.id, pid, epoch
	req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: tp.Topic, Partitions: []int32{tp.Partition}}}
	resp, err := lab.Request[*kmsg.AddPartitionsToTxnResponse](ctx, p.conn, req)
	if err != nil {
		return "", err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return "", fmt.Errorf("AddPartitionsToTxn answered %d topics for one partition", len(resp.Topics))
	}
	return lab.CodeName(resp.Topics[0].Partitions[0].ErrorCode), nil
}

// addGroup sends AddOffsetsToTxn v3 for group and insists on NONE.
func (p *txnProducer) addGroup(ctx context.Context, group string) error {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = 3, p.id, p.pid, p.epoch, group
	resp, err := lab.Request[*kmsg.AddOffsetsToTxnResponse](ctx, p.conn, req)
	if err != nil {
		return err
	}
	return want(resp.ErrorCode, nil)("AddOffsetsToTxn", 0)
}

// stage sends TxnOffsetCommit v3 of offset for tp in group, as memberID
// at generation, and returns the partition's code.
func (p *txnProducer) stage(ctx context.Context, group, memberID string, generation int32, tp assignor.TopicPartition, offset int64) (string, error) {
	return p.stageAt(ctx, 3, group, memberID, generation, tp, offset)
}

// stageAt is stage at version: below v3 the request carries no member id
// or generation.
func (p *txnProducer) stageAt(ctx context.Context, version int16, group, memberID string, generation int32, tp assignor.TopicPartition, offset int64) (string, error) {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = version, p.id, p.pid, p.epoch
	req.Group, req.MemberID, req.Generation = group, memberID, generation
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = tp.Partition, offset
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: tp.Topic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{rp}}}
	resp, err := lab.Request[*kmsg.TxnOffsetCommitResponse](ctx, p.conn, req)
	if err != nil {
		return "", err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return "", fmt.Errorf("TxnOffsetCommit answered %d topics for one partition", len(resp.Topics))
	}
	return lab.CodeName(resp.Topics[0].Partitions[0].ErrorCode), nil
}

// end sends EndTxn v3 and returns its code.
func (p *txnProducer) end(ctx context.Context, commit bool) (string, error) {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = 3, p.id, p.pid, p.epoch, commit
	resp, err := lab.Request[*kmsg.EndTxnResponse](ctx, p.conn, req)
	if err != nil {
		return "", err
	}
	return lab.CodeName(resp.ErrorCode), nil
}

// produce sends one transactional batch of values to tp (Produce v9 naming
// the producer's id), at the partition's next sequence number, and
// returns the partition's code.
func (p *txnProducer) produce(ctx context.Context, tp assignor.TopicPartition, values ...string) (string, error) {
	return p.produceAs(ctx, &p.id, p.pid, tp, values...)
}

// produceAs sends one transactional batch of values to tp as producer id
// pid (no producer id if negative) at the producer's epoch, in a Produce
// v9 naming txnID (none if nil), and returns the partition's code. A
// batch answered NONE moves the partition's sequence on.
func (p *txnProducer) produceAs(ctx context.Context, txnID *string, pid int64, tp assignor.TopicPartition, values ...string) (string, error) {
	spec := records.BatchSpec{FirstTimestamp: lab.RecordsTimestamp, Idempotent: pid >= 0, ProducerID: pid, ProducerEpoch: p.epoch, BaseSequence: p.seq[tp]}
	for _, v := range values {
		spec.Records = append(spec.Records, records.Record{Value: []byte(v)})
	}
	raw := records.EncodeBatch(spec)
	// The transactional attribute (bit 4), under a new CRC-32C.
	binary.BigEndian.PutUint16(raw[21:], 0x10)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = lab.ProduceVersion, -1, 5000, txnID
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: tp.Topic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: tp.Partition, Records: raw}}}}
	resp, err := lab.Request[*kmsg.ProduceResponse](ctx, p.conn, req)
	if err != nil {
		return "", err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return "", fmt.Errorf("the Produce answer lacks %s", tp)
	}
	code := resp.Topics[0].Partitions[0].ErrorCode
	if code == 0 && pid >= 0 {
		if p.seq == nil {
			p.seq = map[assignor.TopicPartition]int32{}
		}
		p.seq[tp] += int32(len(values))
	}
	return lab.CodeName(code), nil
}

// txnInitFences: a second InitProducerId for the same id bumps the epoch;
// the first epoch's AddPartitionsToTxn is then fenced, at v3 and at v1.
func txnInitFences(ctx context.Context, s *Script) (string, error) {
	tp := lab.TP(s.group, 0)
	first, err := s.txnProducer(ctx, "fenced")
	if err != nil {
		return "", err
	}
	pid, epoch := first.pid, first.epoch
	if err := first.init(ctx); err != nil {
		return "", err
	}
	v3, err := first.addPartition(ctx, 3, pid, epoch, tp)
	if err != nil {
		return "", err
	}
	v1, err := first.addPartition(ctx, 1, pid, epoch, tp)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("epoch %+d, same producer id %v; the old epoch's AddPartitionsToTxn v3 %s, v1 %s",
		first.epoch-epoch, first.pid == pid, v3, v1), nil
}

// txnEndNotBegun: EndTxn commit, then EndTxn abort, right after
// InitProducerId, with no partition or group added.
func txnEndNotBegun(ctx context.Context, s *Script) (string, error) {
	p, err := s.txnProducer(ctx, "idle")
	if err != nil {
		return "", err
	}
	commit, err := p.end(ctx, true)
	if err != nil {
		return "", err
	}
	abort, err := p.end(ctx, false)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("commit %s, abort %s", commit, abort), nil
}

// txnProduceNotAdded: a transactional batch to a partition the
// transaction never added, then whether it was stored (the partition's
// log end).
func txnProduceNotAdded(ctx context.Context, s *Script) (string, error) {
	tp := lab.TP(s.group, 0)
	p, err := s.txnProducer(ctx, "unadded")
	if err != nil {
		return "", err
	}
	code, err := p.produce(ctx, tp, "stray")
	if err != nil {
		return "", err
	}
	lc, end, err := lab.ListOffset(ctx, p.conn, nil, tp, lab.ListOffsetsLatest)
	if err != nil {
		return "", err
	}
	if lc != 0 {
		return "", fmt.Errorf("ListOffsets answered %s", lab.CodeName(lc))
	}
	if code == "NONE" {
		// Leave no transaction hanging on a broker that outlives the run.
		if _, err := p.end(ctx, false); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%s, log end %d", code, end), nil
}

// txnOffsetCommitStaleGeneration: a member's transactional producer
// stages the member's offsets under the generation before the group's
// last rebalance, then under the current one.
func txnOffsetCommitStaleGeneration(ctx context.Context, s *Script) (string, error) {
	pr, err := s.twoMembers(ctx)
	if err != nil {
		return "", err
	}
	m := pr.first
	if len(m.Assigned) == 0 {
		return "", fmt.Errorf("member %s owns nothing", m.ID)
	}
	p, err := s.txnProducer(ctx, "stale")
	if err != nil {
		return "", err
	}
	if err := p.addGroup(ctx, s.group); err != nil {
		return "", err
	}
	stale, err := p.stage(ctx, s.group, m.ID, pr.oldGeneration, m.Assigned[0], 5)
	if err != nil {
		return "", err
	}
	current, err := p.stage(ctx, s.group, m.ID, m.Generation, m.Assigned[0], 5)
	if err != nil {
		return "", err
	}
	if _, err := p.end(ctx, false); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s; at the current generation %s", stale, current), nil
}

// txnRequireStable: orders-1 is committed directly (offset 7) into the
// group, which has no members; a transaction stages orders-0 (offset 5,
// unfenced). OffsetFetch v8 with RequireStable asks for both.
func txnRequireStable(ctx context.Context, s *Script) (string, error) {
	staged, other := lab.TP(s.topic("orders"), 0), lab.TP(s.topic("orders"), 1)
	m, err := s.memberWith(ctx, lab.MemberConfig{})
	if err != nil {
		return "", err
	}
	if code, err := commitCode(ctx, m, "", -1, lab.PartitionOffset{TopicPartition: other, Offset: 7}); err != nil || code != "NONE" {
		return "", fmt.Errorf("the direct commit answered %s (%v)", code, err)
	}
	p, err := s.txnProducer(ctx, "stable")
	if err != nil {
		return "", err
	}
	if err := p.addGroup(ctx, s.group); err != nil {
		return "", err
	}
	if code, err := p.stage(ctx, s.group, "", -1, staged, 5); err != nil || code != "NONE" {
		return "", fmt.Errorf("TxnOffsetCommit answered %s (%v)", code, err)
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.RequireStable = 8, true
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = s.group
	g.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: staged.Topic, Partitions: []int32{0, 1}}}
	req.Groups = []kmsg.OffsetFetchRequestGroup{g}
	resp, err := lab.Request[*kmsg.OffsetFetchResponse](ctx, p.conn, req)
	if err != nil {
		return "", err
	}
	if _, err := p.end(ctx, false); err != nil {
		return "", err
	}
	if len(resp.Groups) != 1 {
		return "", fmt.Errorf("OffsetFetch answered %d groups for one", len(resp.Groups))
	}
	rg := resp.Groups[0]
	var words []string
	if rg.ErrorCode != 0 {
		words = append(words, "group "+lab.CodeName(rg.ErrorCode))
	}
	for _, t := range rg.Topics {
		for _, rp := range t.Partitions {
			words = append(words, fmt.Sprintf("orders-%d %s %d", rp.Partition, lab.CodeName(rp.ErrorCode), rp.Offset))
		}
	}
	if len(words) == 0 {
		return "no partitions", nil
	}
	return strings.Join(words, ", "), nil
}

// txnPIDMapping: two transactional ids; the first adds a partition naming
// the second's producer id and epoch.
func txnPIDMapping(ctx context.Context, s *Script) (string, error) {
	tp := lab.TP(s.group, 0)
	a, err := s.txnProducer(ctx, "a")
	if err != nil {
		return "", err
	}
	b, err := s.txnProducer(ctx, "b")
	if err != nil {
		return "", err
	}
	code, err := a.addPartition(ctx, 3, b.pid, b.epoch, tp)
	if err != nil {
		return "", err
	}
	if code == "NONE" {
		// Leave no transaction hanging on a broker that outlives the run.
		b.end(ctx, false)
		a.end(ctx, false)
	}
	return code, nil
}
