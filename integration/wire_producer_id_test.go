package integration

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// initProducerID asks InitProducerId v4 for an idempotent producer's id
// and requires success at epoch 0.
func initProducerID(t *testing.T, c *wireclient.Client) int64 {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.ProducerID, req.ProducerEpoch = 4, -1, -1
	resp := wiretest.Do[*kmsg.InitProducerIDResponse](t, c, req)
	require.Equal(t, codeNone, resp.ErrorCode)
	require.Equal(t, int16(0), resp.ProducerEpoch)
	require.GreaterOrEqual(t, resp.ProducerID, int64(0))
	return resp.ProducerID
}

// TestWireInitProducerID: every request without a transactional id gets
// a producer id never handed out before, epoch 0, at every version, also
// after a restart on the same data dir; one that names a producer id and
// epoch (KIP-360's bump, v3+) gets a new id too, as Kafka answers a null
// transactional id. A transactional id gets
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED with id and epoch -1.
func TestWireInitProducerID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	seen := map[int64]string{}
	note := func(id int64, where string) {
		t.Helper()
		other, dup := seen[id]
		require.False(t, dup, "producer id %d handed out twice: %s and %s", id, other, where)
		seen[id] = where
	}
	first := startBroker(t, func(cfg *broker.Config) { cfg.DataDir = dir })
	c := wiretest.Dial(t, first.Addr(), "c")
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version, req.ProducerID, req.ProducerEpoch = v, -1, -1
		resp := wiretest.Do[*kmsg.InitProducerIDResponse](t, c, req)
		require.Equal(t, codeNone, resp.ErrorCode, "v%d", v)
		assert.Equal(t, int16(0), resp.ProducerEpoch, "v%d", v)
		note(resp.ProducerID, fmt.Sprintf("v%d", v))
	}
	bump := kmsg.NewPtrInitProducerIDRequest()
	bump.Version, bump.ProducerID, bump.ProducerEpoch = 4, initProducerID(t, c), 0
	resp := wiretest.Do[*kmsg.InitProducerIDResponse](t, c, bump)
	require.Equal(t, codeNone, resp.ErrorCode)
	assert.Equal(t, int16(0), resp.ProducerEpoch)
	note(bump.ProducerID, "before the bump")
	note(resp.ProducerID, "the bump")

	txn := kmsg.NewPtrInitProducerIDRequest()
	id := "tx"
	txn.Version, txn.TransactionalID, txn.TransactionTimeoutMillis = 4, &id, 60000
	resp = wiretest.Do[*kmsg.InitProducerIDResponse](t, c, txn)
	assert.Equal(t, codeNone, resp.ErrorCode, "a transactional id gets a producer id of its own")
	assert.Equal(t, int16(0), resp.ProducerEpoch)
	note(resp.ProducerID, "a transactional id")
	require.NoError(t, first.Close())

	second := startBroker(t, func(cfg *broker.Config) { cfg.DataDir = dir })
	c = wiretest.Dial(t, second.Addr(), "c")
	for i := range 3 {
		note(initProducerID(t, c), fmt.Sprintf("after the restart, %d", i))
	}
}

// TestWireIdempotentProduce: an idempotent producer's batches, per
// partition, follow Kafka's ProducerStateManager rules. A retry of one of
// its last five batches is answered NONE with the original offsets and
// stored once; a retry older than that, or a gap in the sequence, is
// OUT_OF_ORDER_SEQUENCE_NUMBER; a new epoch must start at sequence 0, and
// an epoch below the last one seen is INVALID_PRODUCER_EPOCH. A refused
// batch stores nothing. The state is per partition: the same sequence
// starts over on another one.
func TestWireIdempotentProduce(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	pid := initProducerID(t, c)
	send := func(partition int32, epoch int16, seq int32, values ...string) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		return produceOne(t, c, produceRequest(9, -1, "orders", partBatch{partition, idempotentBatch(pid, epoch, seq, values...)}))
	}
	type answer struct {
		Code int16
		Base int64
	}
	steps := []struct {
		name      string
		partition int32
		epoch     int16
		seq       int32
		values    []string
		want      answer
	}{
		{"first batch", 0, 0, 0, []string{"a", "b", "c"}, answer{codeNone, 0}},
		{"next batch", 0, 0, 3, []string{"d"}, answer{codeNone, 3}},
		{"retry of the last batch", 0, 0, 3, []string{"d"}, answer{codeNone, 3}},
		{"retry of an earlier batch", 0, 0, 0, []string{"a", "b", "c"}, answer{codeNone, 0}},
		{"a gap", 0, 0, 10, []string{"gap"}, answer{codeOutOfOrderSequenceNumber, -1}},
		{"a repeat of a sequence, not a whole batch", 0, 0, 1, []string{"b"}, answer{codeOutOfOrderSequenceNumber, -1}},
		{"in sequence after the refusals", 0, 0, 4, []string{"e"}, answer{codeNone, 4}},
		{"another partition starts at 0", 1, 0, 0, []string{"x"}, answer{codeNone, 0}},
		{"a new epoch not at 0", 0, 1, 5, []string{"f"}, answer{codeOutOfOrderSequenceNumber, -1}},
		{"a new epoch at 0", 0, 1, 0, []string{"f"}, answer{codeNone, 5}},
		{"the old epoch", 0, 0, 5, []string{"old"}, answer{codeInvalidProducerEpoch, -1}},
		{"a retry from the old epoch", 0, 0, 4, []string{"e"}, answer{codeInvalidProducerEpoch, -1}},
	}
	for _, s := range steps {
		a := send(s.partition, s.epoch, s.seq, s.values...)
		assert.Equal(t, s.want, answer{a.ErrorCode, a.BaseOffset}, "%s", s.name)
	}
	ps := fetchPartitions(t, c, fetchRequest(12, 0, fetchAt{"orders", 0, 0}, fetchAt{"orders", 1, 0}))
	assert.Equal(t, []string{"0:a", "1:b", "2:c", "3:d", "4:e", "5:f"}, decodedValues(t, ps["orders-0"].RecordBatches), "each batch once, nothing refused")
	assert.Equal(t, []string{"0:x"}, decodedValues(t, ps["orders-1"].RecordBatches))

	// Five batches are remembered: after five more, the first is too old
	// to be recognised as a retry.
	for i := range int32(5) {
		a := send(2, 0, i, fmt.Sprintf("r%d", i))
		require.Equal(t, answer{codeNone, int64(i)}, answer{a.ErrorCode, a.BaseOffset})
	}
	a := send(2, 0, 0, "r0")
	assert.Equal(t, answer{codeNone, 0}, answer{a.ErrorCode, a.BaseOffset}, "the oldest of the last five")
	a = send(2, 0, 5, "r5")
	require.Equal(t, answer{codeNone, 5}, answer{a.ErrorCode, a.BaseOffset})
	a = send(2, 0, 0, "r0")
	assert.Equal(t, answer{codeOutOfOrderSequenceNumber, -1}, answer{a.ErrorCode, a.BaseOffset}, "six batches back")
}

// TestWireIdempotentStateSurvivesRestart: the producer state is rebuilt
// from the log at start, so a retry sent after a restart on the same data
// dir (its answer lost in the crash) gets the original offsets and is not
// stored twice, and the producer's next sequence is accepted where it
// left off, while a gap is still refused.
func TestWireIdempotentStateSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := startBroker(t, func(cfg *broker.Config) { cfg.DataDir = dir })
	c := wiretest.Dial(t, first.Addr(), "c")
	pid := initProducerID(t, c)
	batches := [][]byte{idempotentBatch(pid, 0, 0, "a", "b"), idempotentBatch(pid, 0, 2, "c")}
	for i, want := range []int64{0, 2} {
		a := produceOne(t, c, produceRequest(9, -1, "payments", partBatch{0, batches[i]}))
		require.Equal(t, codeNone, a.ErrorCode)
		require.Equal(t, want, a.BaseOffset)
	}
	require.NoError(t, first.Close())

	second := startBroker(t, func(cfg *broker.Config) { cfg.DataDir = dir })
	c = wiretest.Dial(t, second.Addr(), "c")
	for i, want := range []int64{0, 2} {
		a := produceOne(t, c, produceRequest(9, -1, "payments", partBatch{0, batches[i]}))
		assert.Equal(t, codeNone, a.ErrorCode, "retry %d after the restart", i)
		assert.Equal(t, want, a.BaseOffset, "retry %d gets its original offset", i)
	}
	gap := produceOne(t, c, produceRequest(9, -1, "payments", partBatch{0, idempotentBatch(pid, 0, 9, "gap")}))
	assert.Equal(t, codeOutOfOrderSequenceNumber, gap.ErrorCode)
	next := produceOne(t, c, produceRequest(9, -1, "payments", partBatch{0, idempotentBatch(pid, 0, 3, "d")}))
	assert.Equal(t, codeNone, next.ErrorCode)
	assert.Equal(t, int64(3), next.BaseOffset)
	p := fetchPartitions(t, c, fetchRequest(12, 0, fetchAt{"payments", 0, 0}))["payments-0"]
	assert.Equal(t, []string{"0:a", "1:b", "2:c", "3:d"}, decodedValues(t, p.RecordBatches))
}

// TestWireForgedProducerID: a Produce whose batch carries a producer id
// the broker never handed out (here MaxInt64-1) is refused with
// INVALID_PRODUCER_ID_MAPPING and stores nothing; after a restart on the
// same data dir InitProducerId still hands out ids and an idempotent
// producer's batch is stored. Before the check, the forged batch was
// stored and every InitProducerId after the restart answered
// KAFKA_STORAGE_ERROR "producer ids exhausted".
func TestWireForgedProducerID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := startBroker(t, func(cfg *broker.Config) { cfg.DataDir = dir })
	c := wiretest.Dial(t, first.Addr(), "c")
	const forged = int64(1<<63 - 2)
	for _, pid := range []int64{forged, 0} {
		rp := produceOne(t, c, produceRequest(9, -1, "payments", partBatch{0, idempotentBatch(pid, 0, 0, "forged")}))
		require.Equal(t, codeInvalidProducerIDMapping, rp.ErrorCode, "producer id %d", pid)
		require.NotNil(t, rp.ErrorMessage)
		assert.Contains(t, *rp.ErrorMessage, fmt.Sprintf("producer id %d was never handed out", pid))
	}
	pid := initProducerID(t, c)
	rp := produceOne(t, c, produceRequest(9, -1, "payments", partBatch{0, idempotentBatch(pid, 0, 0, "real")}))
	require.Equal(t, codeNone, rp.ErrorCode)
	require.Equal(t, int64(0), rp.BaseOffset, "the forged batches stored nothing")
	require.NoError(t, first.Close())

	second := startBroker(t, func(cfg *broker.Config) { cfg.DataDir = dir })
	c = wiretest.Dial(t, second.Addr(), "c")
	next := initProducerID(t, c)
	require.Greater(t, next, pid)
	rp = produceOne(t, c, produceRequest(9, -1, "payments", partBatch{0, idempotentBatch(next, 0, 0, "after")}))
	require.Equal(t, codeNone, rp.ErrorCode)
	require.Equal(t, int64(1), rp.BaseOffset)
	assert.Empty(t, second.Logs.AtLevel(slog.LevelError), "no Error line")
}
