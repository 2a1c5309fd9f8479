package compare

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/wireclient"
)

// TestTxnProducerRequestFailures: a transactional producer whose request
// fails (its connection gone, as when a run is interrupted) gets the
// error from AddOffsetsToTxn and EndTxn, never a panic on the answer it
// did not get.
func TestTxnProducerRequestFailures(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	b, err := StartMinibroker(ctx)
	require.NoError(t, err)
	defer b.Close()
	conn, err := wireclient.Dial(ctx, b.Addr(), "compare")
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	p := &txnProducer{conn: conn, id: "compare-txn", pid: 1}
	require.Error(t, p.addGroup(ctx, "compare-group"))
	code, err := p.end(ctx, false)
	require.Error(t, err)
	require.Empty(t, code)
}
