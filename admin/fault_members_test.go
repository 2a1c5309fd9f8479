package admin

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/server"
)

// TestFaultsMemberGone: GET /v1/faults marks each fault whose member no
// group it can match holds now, with the rebalance that went on without
// it: b left (generation 4), c expired (generation 5), the first run of
// a static member was replaced by its restart (generation kept); "ghost"
// never joined, which the fault's warning says instead. A fault on a member that is in, or on no member,
// has no mark; a fault without a group finds its member in any group.
func TestFaultsMemberGone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join(t, "g", "a", time.Minute, "orders")
	f.join(t, "g", "b", time.Minute, "orders")
	f.join(t, "g", "c", 100*time.Millisecond, "orders") // generation 3
	static := coordinator.JoinRequest{Group: "s", InstanceID: "app-1", ClientID: "kgo", SessionTimeout: time.Minute,
		ProtocolType: coordinator.ConsumerProtocolType, WireRules: true, RequireMemberID: true,
		Protocols: []coordinator.Protocol{{Name: "range", Topics: []string{"orders"}}}}
	first, err := f.coord.Join(static)
	require.NoError(t, err)
	require.Equal(t, "app-1-000001", first.MemberID)
	for _, fault := range []server.Fault{
		{Keys: []int16{12}, Group: "g", Member: "a", Drop: true, Count: -1},            // 1: in
		{Keys: []int16{12}, Group: "g", Member: "b", Drop: true, Count: -1},            // 2: left
		{Keys: []int16{12}, Group: "g", Member: "c", Drop: true, Count: -1},            // 3: expired
		{Keys: []int16{12}, Group: "g", Member: "ghost", Drop: true, Count: -1},        // 4: never joined
		{Keys: []int16{12}, Member: "a", Drop: true, Count: -1},                        // 5: in, any group
		{Keys: []int16{12}, Member: "b", Drop: true, Count: -1},                        // 6: left, any group
		{Keys: []int16{12}, Group: "s", Member: first.MemberID, Drop: true, Count: -1}, // 7: replaced
		{Keys: []int16{12}, Group: "g", Drop: true, Count: -1},                         // 8: no member
	} {
		_, err := f.faults.Inject(fault)
		require.NoError(t, err)
	}

	gone := func() map[string]*memberGoneJSON {
		t.Helper()
		code, body := f.do(t, "GET", "/v1/faults", "")
		require.Equal(t, http.StatusOK, code, body)
		var list faultsJSON
		require.NoError(t, json.Unmarshal([]byte(body), &list))
		out := map[string]*memberGoneJSON{}
		for _, j := range list.Faults {
			out[j.ID] = j.MemberGone
		}
		require.Len(t, out, 8)
		return out
	}
	require.Equal(t, map[string]*memberGoneJSON{"1": nil, "2": nil, "3": nil, "4": nil, "5": nil, "6": nil, "7": nil, "8": nil}, gone())

	_, err = f.clock.Advance(50 * time.Millisecond)
	require.NoError(t, err)
	f.coord.Leave("g", "b") // generation 4
	_, err = f.clock.Advance(100 * time.Millisecond)
	require.NoError(t, err)
	require.Len(t, f.coord.Expire(), 1) // c: generation 5
	_, err = f.coord.Join(static)       // app-1-000002 takes the place of app-1-000001
	require.NoError(t, err)

	left := &memberGoneJSON{Reason: "leave", Group: "g", Generation: 4, Time: "1970-01-01T00:00:00.05Z", TimeMS: 50}
	require.Equal(t, map[string]*memberGoneJSON{
		"1": nil,
		"2": left,
		"3": {Reason: "expiry", Group: "g", Generation: 5, Time: "1970-01-01T00:00:00.15Z", TimeMS: 150},
		"4": nil, // its warning: group "g" has no member "ghost"
		"5": nil,
		"6": left,
		"7": {Reason: "static member restarted", Group: "s", Generation: 1, Time: "1970-01-01T00:00:00.15Z", TimeMS: 150},
		"8": nil,
	}, gone())

	// The POST answers the same of the fault it puts in force, beside the
	// warning that its member is not in the group now.
	code, body := f.do(t, "POST", "/v1/faults", `{"keys":[12],"group":"g","member":"c","drop":true,"count":-1}`)
	require.Equal(t, http.StatusOK, code, body)
	requireJSON(t, `{"id":"9","keys":[12],"group":"g","member":"c","drop":true,"count":-1,"hits":0,"remaining":-1,
		"warnings":["group \"g\" has no member \"c\" now (its members: a)"],
		"member_gone":{"reason":"expiry","group":"g","generation":5,"time":"1970-01-01T00:00:00.15Z","time_ms":150}}`, body)
}
