package lab

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/broker/adminapi"
)

// TestRemoteFaults: the partition lab's fault through a broker's admin
// API: POST puts it in force with the lab's filters, DELETE removes it,
// and a refusal comes back with the API's message.
func TestRemoteFaults(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	b, err := broker.Start(ctx, broker.Config{Admin: "127.0.0.1:0", AdminAPI: adminapi.New, ManualClock: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	r := &remoteFaults{admin: b.AdminAddr()}
	require.NoError(t, r.cut(ctx, "lab-partition-x", "a-000001"))
	require.Equal(t, "1", r.id)
	list := b.Faults()
	require.Len(t, list, 1)
	require.Equal(t, broker.Fault{Keys: []int16{12}, Group: "lab-partition-x", Member: "a-000001", Drop: true, Count: -1}, list[0].Fault)

	require.NoError(t, r.remove(ctx))
	require.Empty(t, b.Faults())
	err = r.remove(ctx)
	require.ErrorContains(t, err, `DELETE /v1/faults/1: 404 {"error":"no fault \"1\""}`)
}
