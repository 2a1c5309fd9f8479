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
	resp := call[*kmsg.InitProducerIDResponse](e, "p", &kmsg.InitProducerIDRequest{Version: 4, TransactionalID: &txn, ProducerID: -1, ProducerEpoch: -1})
	assert.Equal(t, kerr.TransactionalIDAuthorizationFailed.Code, resp.ErrorCode)
	assert.Equal(t, int64(-1), resp.ProducerID)
	require.Len(t, e.logs.Find("transactional producer refused: transactions are not supported"), 1)
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
