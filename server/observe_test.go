package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// recordingObserver keeps every Observer call.
type recordingObserver struct {
	mu       sync.Mutex
	requests []observedRequest // guarded by mu
	commits  []observedCommit  // guarded by mu
	fenced   []FencingEvent    // guarded by mu
	fetched  []FetchEvent      // guarded by mu
	opened   []string          // guarded by mu; remote addresses
	closed   []string          // guarded by mu; remote addresses
	topics   []TopicEvent      // guarded by mu
	idents   []ConnInfo        // guarded by mu
}

type observedCommit struct {
	group string
	code  int16
}

type observedRequest struct {
	api, version, code int16
}

func (o *recordingObserver) RequestDone(api, version, code int16, elapsed time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests = append(o.requests, observedRequest{api, version, code})
}

func (o *recordingObserver) CommitDone(group string, elapsed time.Duration, code int16) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.commits = append(o.commits, observedCommit{group, code})
}

func (o *recordingObserver) Fenced(ev FencingEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fenced = append(o.fenced, ev)
}

func (o *recordingObserver) Fetched(ev FetchEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fetched = append(o.fetched, ev)
}

func (o *recordingObserver) ConnOpened(remote string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.opened = append(o.opened, remote)
}

func (o *recordingObserver) ConnClosed(remote string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = append(o.closed, remote)
}

func (o *recordingObserver) TopicNoticed(ev TopicEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.topics = append(o.topics, ev)
}

func (o *recordingObserver) ConnIdentified(info ConnInfo) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.idents = append(o.idents, info)
}

func (o *recordingObserver) snapshot() recordingObserver {
	o.mu.Lock()
	defer o.mu.Unlock()
	return recordingObserver{
		requests: append([]observedRequest(nil), o.requests...),
		commits:  append([]observedCommit(nil), o.commits...),
		fenced:   append([]FencingEvent(nil), o.fenced...),
		fetched:  append([]FetchEvent(nil), o.fetched...),
		opened:   append([]string(nil), o.opened...),
		closed:   append([]string(nil), o.closed...),
		topics:   append([]TopicEvent(nil), o.topics...),
		idents:   append([]ConnInfo(nil), o.idents...),
	}
}

func newObservedEnv(t *testing.T) (*env, *recordingObserver) {
	obs := &recordingObserver{}
	return newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.Observer = obs }}), obs
}

// observedCommitRequest is an OffsetCommit v8 of one orders partition.
func observedCommitRequest(group, member string, generation, partition int32) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group, req.MemberID, req.Generation = group, member, generation
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: partition, Offset: 5}}}}
	return req
}

// TestObserverFencingRejections: every way the coordinator fences a stale
// or unknown member is reported once and logged at Info, and nothing else
// is.
func TestObserverFencingRejections(t *testing.T) {
	t.Parallel()
	e, obs := newObservedEnv(t)
	a := e.join("c", "g", "", "orders").MemberID // c-000001, generation 1
	b := e.join("c", "g", "", "orders").MemberID // c-000002, generation 2; a owns orders-0 and -2

	heartbeat := func(member string, gen int32) *kmsg.HeartbeatResponse {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.Generation = 4, "g", member, gen
		return call[*kmsg.HeartbeatResponse](e, "c", req)
	}
	syncReq := kmsg.NewPtrSyncGroupRequest()
	syncReq.Version, syncReq.Group, syncReq.MemberID, syncReq.Generation = 5, "g", a, 1

	require.Equal(t, kerr.IllegalGeneration.Code, heartbeat(a, 1).ErrorCode)
	require.Equal(t, kerr.IllegalGeneration.Code, call[*kmsg.SyncGroupResponse](e, "c", syncReq).ErrorCode)
	require.Equal(t, kerr.IllegalGeneration.Code, call[*kmsg.OffsetCommitResponse](e, "c", observedCommitRequest("g", a, 1, 0)).Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, kerr.RebalanceInProgress.Code, call[*kmsg.OffsetCommitResponse](e, "c", observedCommitRequest("g", a, 2, 1)).Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, kerr.UnknownMemberID.Code, heartbeat("ghost", 2).ErrorCode)
	require.Equal(t, kerr.UnknownMemberID.Code, call[*kmsg.JoinGroupResponse](e, "c", joinRequest(9, "g", "ghost", "orders")).ErrorCode)
	// Not fencing: success, a bad group id, a direct commit of a missing
	// partition, a member id handed out by MEMBER_ID_REQUIRED.
	require.Zero(t, heartbeat(b, 2).ErrorCode)
	require.Zero(t, call[*kmsg.OffsetCommitResponse](e, "c", observedCommitRequest("g", b, 2, 1)).Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, kerr.InvalidGroupID.Code, call[*kmsg.HeartbeatResponse](e, "c", kmsg.NewPtrHeartbeatRequest()).ErrorCode)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, call[*kmsg.OffsetCommitResponse](e, "c", observedCommitRequest("g", "", -1, 9)).Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, kerr.MemberIDRequired.Code, call[*kmsg.JoinGroupResponse](e, "c", joinRequest(9, "g", "", "orders")).ErrorCode)

	want := []FencingEvent{
		{Group: "g", MemberID: a, API: "Heartbeat", Generation: 1, Code: kerr.IllegalGeneration.Code, Reason: "stale generation"},
		{Group: "g", MemberID: a, API: "SyncGroup", Generation: 1, Code: kerr.IllegalGeneration.Code, Reason: "stale generation"},
		{Group: "g", MemberID: a, API: "OffsetCommit", Generation: 1, Code: kerr.IllegalGeneration.Code, Reason: "stale generation"},
		{Group: "g", MemberID: a, API: "OffsetCommit", Generation: 2, Code: kerr.RebalanceInProgress.Code, Reason: "not the owner"},
		{Group: "g", MemberID: "ghost", API: "Heartbeat", Generation: 2, Code: kerr.UnknownMemberID.Code, Reason: "unknown member"},
		{Group: "g", MemberID: "ghost", API: "JoinGroup", Generation: -1, Code: kerr.UnknownMemberID.Code, Reason: "unknown member"},
	}
	got := obs.snapshot()
	require.Equal(t, want, got.fenced)
	require.Equal(t, []observedCommit{
		{"g", kerr.IllegalGeneration.Code}, {"g", kerr.RebalanceInProgress.Code}, {"g", 0}, {"g", kerr.UnknownTopicOrPartition.Code},
	}, got.commits)

	logs := e.logs.Find("fencing rejection")
	require.Len(t, logs, len(want))
	for i, w := range want {
		require.Equal(t, slog.LevelInfo, logs[i].Level)
		require.Equal(t, map[string]string{
			"group": w.Group, "member": w.MemberID, "api": w.API,
			"generation": strconv.Itoa(int(w.Generation)), "code": CodeName(w.Code), "reason": w.Reason,
			"remote": "127.0.0.1:40000", // the connection's logger's
		}, logs[i].Attrs)
	}
}

// TestObserverOverTheWire: requests are reported with their API, version
// and code before the response is written; each partition of a Fetch
// that the broker has, with the connection's address and client id,
// once per request however long the fetch waits; and connections are
// bracketed, named by their remote address.
func TestObserverOverTheWire(t *testing.T) {
	t.Parallel()
	e, obs := newObservedEnv(t)
	c := wiretest.Dial(t, e.serve(), "wire")
	wiretest.Do[*kmsg.ApiVersionsResponse](t, c, apiVersionsRequest(3))
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.Generation = 4, "nobody", "m", 1
	wiretest.Do[*kmsg.HeartbeatResponse](t, c, hb)
	e.produce("orders", 1, "a", "b", "c")
	// orders-9 does not exist: answered at once, and not reported.
	wiretest.Do[*kmsg.FetchResponse](t, c, fetchRequest(12, 0, "orders", 2, 1, 9))
	// payments-0 is empty: the fetch waits its 20 ms, reported once.
	wiretest.Do[*kmsg.FetchResponse](t, c, fetchRequest(12, 20*time.Millisecond, "payments", 0, 0))

	got := obs.snapshot()
	require.Equal(t, []observedRequest{
		{int16(kmsg.ApiVersions), 3, 0},
		{int16(kmsg.Heartbeat), 4, kerr.UnknownMemberID.Code},
		{int16(kmsg.Fetch), 12, kerr.UnknownTopicOrPartition.Code},
		{int16(kmsg.Fetch), 12, 0},
	}, got.requests, "reported before each response was written")
	local := c.LocalAddr()
	require.Equal(t, []FetchEvent{
		{Remote: local, Host: "/127.0.0.1", ClientID: "wire", Topic: "orders", Partition: 1, FetchOffset: 2},
		{Remote: local, Host: "/127.0.0.1", ClientID: "wire", Topic: "payments", Partition: 0, FetchOffset: 0},
	}, got.fetched)
	require.Equal(t, []string{local}, got.opened)
	require.Empty(t, got.closed)

	c.Close()
	eventually(t, testTimeout, func() bool { return len(obs.snapshot().closed) == 1 }, "connection close reported")
	require.Equal(t, []string{local}, obs.snapshot().closed)
}

// TestNilObserver: a server without an observer works as before.
func TestNilObserver(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.Equal(t, nopObserver{}, e.srv.observer)
	a := e.join("c", "g", "", "orders").MemberID
	require.Equal(t, kerr.IllegalGeneration.Code, call[*kmsg.OffsetCommitResponse](e, "c", observedCommitRequest("g", a, 7, 0)).Topics[0].Partitions[0].ErrorCode)
	require.Len(t, e.logs.Find("fencing rejection"), 1)
}

func TestCodeName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "NONE", CodeName(0))
	require.Equal(t, "ILLEGAL_GENERATION", CodeName(22))
	require.Equal(t, "UNKNOWN_MEMBER_ID", CodeName(25))
	require.Equal(t, "REBALANCE_IN_PROGRESS", CodeName(27))
	require.Equal(t, "UNKNOWN_SERVER_ERROR", CodeName(-1))
	require.Equal(t, "UNKNOWN_CODE", CodeName(9999))
}

// responseCodes returns every ErrorCode field of resp, walking its
// nested structs and slices.
func responseCodes(resp kmsg.Response) []int16 {
	var out []int16
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if f := v.Type().Field(i); f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16 {
					out = append(out, int16(v.Field(i).Int()))
				} else {
					walk(v.Field(i))
				}
			}
		}
	}
	walk(reflect.ValueOf(resp))
	return out
}

// TestHandlersSetCodesThroughSetCode: no handler writes an error code
// field but through request.setCode, which records the request's outcome
// for the observer where it is decided.
func TestHandlersSetCodesThroughSetCode(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for _, lhs := range n.Lhs {
					if sel, ok := lhs.(*ast.SelectorExpr); ok && sel.Sel.Name == "ErrorCode" {
						t.Errorf("%s: an error code is assigned directly; use r.setCode", fset.Position(n.Pos()))
					}
				}
			case *ast.KeyValueExpr:
				if id, ok := n.Key.(*ast.Ident); ok && id.Name == "ErrorCode" {
					t.Errorf("%s: an error code is set in a literal; use r.setCode", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
}

// TestRequestCodeIsTheFirstSet: the observer is told the first non-zero
// code a handler set, and 0 when every code is NONE.
func TestRequestCodeIsTheFirstSet(t *testing.T) {
	t.Parallel()
	r := &request{}
	var a, b, c int16
	r.setCode(&a, 0)
	require.Zero(t, r.code)
	r.setCode(&b, 22)
	r.setCode(&c, 25)
	require.Equal(t, int16(22), r.code)
	require.Equal(t, []int16{0, 22, 25}, []int16{a, b, c})
}

// TestObserverFencedInstance: the replaced incarnation of a static member
// is a fencing rejection with its own reason.
func TestObserverFencedInstance(t *testing.T) {
	t.Parallel()
	e, obs := newObservedEnv(t)
	old, _ := e.staticRestart("g")
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.Generation, req.InstanceID = 4, "g", old, 1, kmsg.StringPtr("a")
	require.Equal(t, kerr.FencedInstanceID.Code, call[*kmsg.HeartbeatResponse](e, "kgo", req).ErrorCode)
	require.Equal(t, []FencingEvent{{Group: "g", MemberID: old, API: "Heartbeat", Generation: 1, Code: kerr.FencedInstanceID.Code,
		Reason: "replaced instance"}}, obs.snapshot().fenced)
}
