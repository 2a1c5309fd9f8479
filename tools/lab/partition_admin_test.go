package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/broker/adminapi"
	"github.com/minibroker/minibroker/internal/interrupt"
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

// adminFaults lists the faults of the broker whose admin API is at admin,
// through GET /v1/faults.
func adminFaults(t *testing.T, admin string) []map[string]any {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/v1/faults")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out struct {
		Faults []map[string]any `json:"faults"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.Faults
}

// startAdminBroker starts a broker with an admin API, on the real clock
// unless manual, and its own orders topic.
func startAdminBroker(t *testing.T, manual bool) *broker.Broker {
	t.Helper()
	b, err := broker.Start(t.Context(), broker.Config{Admin: "127.0.0.1:0", AdminAPI: adminapi.New, ManualClock: manual, ExpiryInterval: 10 * time.Millisecond,
		Topics: map[string]int32{"orders": 4}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

// requireUntouched: b has its orders topic alone, no group and no fault,
// as the broker's own registry and its admin API list them.
func requireUntouched(t *testing.T, b *broker.Broker) {
	t.Helper()
	require.Equal(t, map[string]int32{"orders": 4}, b.Catalog().Counts())
	require.Empty(t, b.Coordinator().Groups())
	require.Empty(t, b.Faults())
	require.Empty(t, adminFaults(t, b.AdminAddr()))
}

// TestLabPartitionActsOnlyOnItsBroker: the partition lab pointed at one
// broker with the admin API of another (what --admin's default gives when
// another broker serves 127.0.0.1:9644) refuses before it makes anything,
// and saying why; so it does with an admin address nobody serves, and
// with a broker on a manual clock, whose expiry step never runs by
// itself. Pointed at a broker with its own API, it runs there, removes
// its fault, and the other broker's faults list stays empty.
func TestLabPartitionActsOnlyOnItsBroker(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	x, y := startAdminBroker(t, false), startAdminBroker(t, false)

	var out bytes.Buffer
	err := RunWith(ctx, "partition", &out, Options{Broker: x.Addr(), Admin: y.AdminAddr()})
	require.ErrorIs(t, err, ErrNeedsAdmin)
	require.ErrorContains(t, err, fmt.Sprintf("the admin API at %s serves the broker at %s, not the one at %s (which advertises %s); give --admin",
		y.AdminAddr(), y.Addr(), x.Addr(), x.Addr()))
	require.Empty(t, out.String(), "it said nothing of a run, and made nothing")
	requireUntouched(t, x)
	requireUntouched(t, y)

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	nobody := closed.Addr().String()
	require.NoError(t, closed.Close())
	err = RunWith(ctx, "partition", &out, Options{Broker: x.Addr(), Admin: nobody})
	require.ErrorIs(t, err, ErrNeedsAdmin)
	require.ErrorContains(t, err, "the admin API at "+nobody+" does not say which broker it serves")
	require.ErrorContains(t, err, "connection refused")
	requireUntouched(t, x)

	manual := startAdminBroker(t, true)
	err = RunWith(ctx, "partition", &out, Options{Broker: manual.Addr(), Admin: manual.AdminAddr()})
	require.ErrorContains(t, err, "the broker at "+manual.Addr()+" runs on a manual clock")
	requireUntouched(t, manual)

	require.NoError(t, RunWith(ctx, "partition", &out, Options{Broker: x.Addr(), Admin: x.AdminAddr()}), out.String())
	require.Contains(t, out.String(), ": ILLEGAL_GENERATION: the fence refuses it\n")
	require.Empty(t, x.Faults(), "the lab removed its fault")
	requireUntouched(t, y)
}

// TestLabPartitionFailingLeavesNoFault: a partition lab that fails once
// its fault is in force (here its context ends: the way Ctrl-C stops it)
// removes the fault before it returns, and says so.
func TestLabPartitionFailingLeavesNoFault(t *testing.T) {
	t.Parallel()
	b := startAdminBroker(t, false)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for len(b.Faults()) == 0 && runCtx.Err() == nil {
			<-tick.C
		}
		stop()
	}()
	var out bytes.Buffer
	err := RunWith(runCtx, "partition", &out, Options{Broker: b.Addr(), Admin: b.AdminAddr()})
	require.ErrorIs(t, err, interrupt.ErrInterrupted, out.String())
	require.Regexp(t, `\nlab: removed fault 1 \(the heartbeats of a-\d+ in lab-partition-[0-9a-z]+\) from the broker\.\n`, out.String())
	require.Empty(t, b.Faults())
	require.Empty(t, adminFaults(t, b.AdminAddr()))
}
