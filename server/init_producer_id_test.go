package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestInitProducerID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seen := map[int64]bool{}
	for v := int16(0); v <= 4; v++ {
		resp := call[*kmsg.InitProducerIDResponse](e, "p", &kmsg.InitProducerIDRequest{Version: v, ProducerID: -1, ProducerEpoch: -1})
		require.Zero(t, resp.ErrorCode)
		assert.Zero(t, resp.ProducerEpoch)
		assert.False(t, seen[resp.ProducerID], "ids are never handed out twice")
		seen[resp.ProducerID] = true
	}
	txn := "t"
	first := call[*kmsg.InitProducerIDResponse](e, "p", &kmsg.InitProducerIDRequest{Version: 4, TransactionalID: &txn, TransactionTimeoutMillis: 60000, ProducerID: -1, ProducerEpoch: -1})
	require.Zero(t, first.ErrorCode)
	assert.False(t, seen[first.ProducerID], "a transactional id gets a producer id of its own")
	assert.Zero(t, first.ProducerEpoch)
	again := call[*kmsg.InitProducerIDResponse](e, "p", &kmsg.InitProducerIDRequest{Version: 4, TransactionalID: &txn, TransactionTimeoutMillis: 60000, ProducerID: -1, ProducerEpoch: -1})
	require.Zero(t, again.ErrorCode)
	assert.Equal(t, first.ProducerID, again.ProducerID)
	assert.Equal(t, int16(1), again.ProducerEpoch)
	// KIP-360: naming a producer id and epoch the id does not hold.
	wrong := call[*kmsg.InitProducerIDResponse](e, "p", &kmsg.InitProducerIDRequest{Version: 4, TransactionalID: &txn, TransactionTimeoutMillis: 60000, ProducerID: first.ProducerID + 1, ProducerEpoch: 1})
	assert.Equal(t, kerr.ProducerFenced.Code, wrong.ErrorCode)
	assert.Equal(t, int64(-1), wrong.ProducerID)
	long := call[*kmsg.InitProducerIDResponse](e, "p", &kmsg.InitProducerIDRequest{Version: 4, TransactionalID: &txn, TransactionTimeoutMillis: 16 * 60000, ProducerID: -1, ProducerEpoch: -1})
	assert.Equal(t, kerr.InvalidTransactionTimeout.Code, long.ErrorCode, "over the 15 minute default maximum")
}

// TestEveryInterval lets the first line through, holds back the ones
// within a second of it and reports how many it held back.
func TestEveryInterval(t *testing.T) {
	t.Parallel()
	var e everyInterval
	at := time.Unix(100, 0)
	n, ok := e.allow(at)
	require.True(t, ok)
	require.Zero(t, n)
	for i := range 3 {
		_, ok = e.allow(at.Add(time.Duration(i) * 300 * time.Millisecond))
		require.False(t, ok)
	}
	n, ok = e.allow(at.Add(time.Second))
	require.True(t, ok)
	require.Equal(t, 3, n)
}
