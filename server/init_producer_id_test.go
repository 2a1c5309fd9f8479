package server

import (
	"testing"

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
