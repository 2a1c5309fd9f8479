package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAddOffsetsToTxn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pid, epoch := e.txnInit("tx")
	add := func(version int16, group string, epoch int16) int16 {
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = version, "tx", pid, epoch, group
		return call[*kmsg.AddOffsetsToTxnResponse](e, "p", req).ErrorCode
	}
	require.Equal(t, kerr.InvalidGroupID.Code, add(3, strings.Repeat("g", 300), epoch))
	require.Equal(t, kerr.InvalidProducerEpoch.Code, add(1, "g", epoch-1))
	require.Equal(t, kerr.ProducerFenced.Code, add(2, "g", epoch-1))
	require.Equal(t, int16(0), add(3, "g", epoch))
	require.Equal(t, []string{"g"}, e.srv.txns.Views()[0].Groups)
}
