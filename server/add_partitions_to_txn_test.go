package server

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestAddPartitionsToTxn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pid, epoch := e.txnInit("tx")
	require.Equal(t, []int16{kerr.OperationNotAttempted.Code, kerr.UnknownTopicOrPartition.Code}, e.txnAdd("tx", pid, epoch, "orders", 0, 4))
	require.Equal(t, []int16{kerr.UnknownTopicOrPartition.Code}, e.txnAdd("tx", pid, epoch, "nope", 0))
	require.Equal(t, []int16{0, 0}, e.txnAdd("tx", pid, epoch, "orders", 0, 3))
	require.Equal(t, []int16{kerr.InvalidProducerIDMapping.Code}, e.txnAdd("other", pid, epoch, "orders", 1))
	require.Equal(t, []int16{kerr.ProducerFenced.Code}, e.txnAdd("tx", pid, epoch+1, "orders", 1))
	views := e.srv.txns.Views()
	require.Len(t, views, 1)
	require.Equal(t, "Ongoing", views[0].State.String())
	require.Len(t, views[0].Partitions, 2)
}
