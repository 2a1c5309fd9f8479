package server

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/protocol"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestHandlersMatchTheVersionTable: one handler per advertised API, and
// each answers its own API at every advertised version.
func TestHandlersMatchTheVersionTable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := handlers()
	assert.Len(t, h, len(protocol.SupportedVersions()))
	for _, vr := range protocol.SupportedVersions() {
		fn, ok := h[kmsg.Key(vr.Key)]
		if !assert.True(t, ok, "no handler for %s", kmsg.NameForKey(vr.Key)) {
			continue
		}
		for v := vr.Min; v <= vr.Max; v++ {
			req := kmsg.RequestForKey(vr.Key)
			req.SetVersion(v)
			if f, ok := req.(*kmsg.FetchRequest); ok {
				f.MaxWaitMillis = 0
			}
			if p, ok := req.(*kmsg.ProduceRequest); ok {
				p.Acks = -1 // acks 0 is not answered
			}
			resp := fn.handle(e.srv, e.req("c", v), req)
			assert.Equal(t, vr.Key, resp.Key(), "%s v%d", kmsg.NameForKey(vr.Key), v)
			assert.Equal(t, v, resp.GetVersion(), "%s v%d answers at its version", kmsg.NameForKey(vr.Key), v)
		}
	}
}

// fuzzCorr is the correlation id of every fuzzed request.
const fuzzCorr = 7

// fuzzEnv is one fresh server per fuzz input, so that a crasher replays
// alone: a real coordinator on a manual clock with an in-memory store, the
// chapter's topics, group "g" holding member "c-000001" at generation 1,
// owner of orders-0..3, and consumer (KIP-848) group "k" holding member
// "k1" at epoch 1, owner of orders-0..3 and payments-0, so that fuzzed
// heartbeats, syncs, commits and leaves of both protocols can reach past
// the unknown-member checks. Fetch waits at most 1 ms.
func fuzzEnv(t *testing.T) *env {
	e := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.MaxFetchWait = time.Millisecond }})
	e.join("c", "g", "", "orders")
	e.consumerJoin("k", "k1", "orders", "payments")
	return e
}

// fuzzSeed is one valid request of every advertised API, filled in so that
// it reaches the coordinator's paths in fuzzEnv: the member, its group and
// generation, and the known topics.
func fuzzSeed(key, version int16) kmsg.Request {
	switch key {
	case int16(kmsg.ApiVersions):
		return apiVersionsRequest(version)
	case int16(kmsg.Metadata):
		return metadataRequest(version, []string{"orders", "nope"})
	case int16(kmsg.FindCoordinator):
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.CoordinatorKey, r.CoordinatorKeys = "g", []string{"g", "h"}
		r.SetVersion(version)
		return r
	case int16(kmsg.JoinGroup):
		return joinRequest(version, "g", "c-000001", "orders")
	case int16(kmsg.SyncGroup):
		r := kmsg.NewPtrSyncGroupRequest()
		r.Group, r.MemberID, r.Generation = "g", "c-000001", 1
		r.SetVersion(version)
		return r
	case int16(kmsg.Heartbeat):
		return wiretest.HeartbeatRequest(version, "g", "c-000001", 1)
	case int16(kmsg.LeaveGroup):
		return wiretest.LeaveRequest(version, "g", "c-000001")
	case int16(kmsg.OffsetCommit):
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Group, r.MemberID, r.Generation = "g", "c-000001", 1
		meta := "m"
		r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{
			{Partition: 0, Offset: 5, LeaderEpoch: -1, Metadata: &meta}, {Partition: 3, Offset: 9, LeaderEpoch: 2},
		}}}
		r.SetVersion(version)
		return r
	case int16(kmsg.OffsetFetch):
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Group = "g"
		r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{0, 1}}}
		r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}, {Group: "h", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "orders", Partitions: []int32{0}}}}}
		r.SetVersion(version)
		return r
	case int16(kmsg.DescribeGroups):
		return describeRequest(version, "g", "nope")
	case int16(kmsg.ListGroups):
		r := kmsg.NewPtrListGroupsRequest()
		r.StatesFilter = []string{"Stable"}
		r.SetVersion(version)
		return r
	case int16(kmsg.CreateTopics):
		return createRequest(version, false, createTopic("invoices", 3, 1), createTopic("orders", 1, 1))
	case int16(kmsg.CreatePartitions):
		r := kmsg.NewPtrCreatePartitionsRequest()
		r.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "orders", Count: 6}, {Topic: "payments", Count: 1}, {Topic: "nope", Count: 2}}
		r.SetVersion(version)
		return r
	case int16(kmsg.DeleteRecords):
		r := kmsg.NewPtrDeleteRecordsRequest()
		r.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "orders", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: -1}, {Partition: 9, Offset: 3}}}}
		r.SetVersion(version)
		return r
	case int16(kmsg.DeleteTopics):
		return deleteByName(version, "payments", "nope", "../x")
	case int16(kmsg.ListOffsets):
		r := kmsg.NewPtrListOffsetsRequest()
		r.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "orders", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1}}}}
		r.SetVersion(version)
		return r
	case int16(kmsg.Fetch):
		return fetchRequest(version, 0, "orders", 0, 0, 9)
	case int16(kmsg.Produce):
		r := kmsg.NewPtrProduceRequest()
		r.Acks, r.TimeoutMillis = -1, 1000
		r.Topics = []kmsg.ProduceRequestTopic{{Topic: "orders", Partitions: []kmsg.ProduceRequestTopicPartition{
			{Partition: 0, Records: records.EncodeBatch(records.BatchSpec{FirstTimestamp: time.Now().UnixMilli(), Records: []records.Record{{Value: []byte("v")}}})},
			{Partition: 9, Records: []byte{1, 2, 3}},
		}}}
		r.SetVersion(version)
		return r
	case int16(kmsg.InitProducerID):
		r := kmsg.NewPtrInitProducerIDRequest()
		r.ProducerID, r.ProducerEpoch = -1, -1
		r.SetVersion(version)
		return r
	case int16(kmsg.ConsumerGroupHeartbeat):
		r := consumerHeartbeatRequest(version, "k", "k1", 1, "orders", "payments")
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{Partitions: []int32{0, 1}}}
		return r
	case int16(kmsg.DeleteGroups):
		return deleteGroupsRequest(version, "g", "nope", "g")
	case int16(kmsg.OffsetDelete):
		return offsetDeleteRequest("g", "orders", 0, 3)
	case int16(kmsg.SASLHandshake):
		r := kmsg.NewPtrSASLHandshakeRequest()
		r.Mechanism = MechanismPlain
		r.SetVersion(version)
		return r
	case int16(kmsg.SASLAuthenticate):
		r := kmsg.NewPtrSASLAuthenticateRequest()
		r.SASLAuthBytes = []byte("\x00alice\x00alice-secret")
		r.SetVersion(version)
		return r
	case int16(kmsg.DescribeCluster):
		r := kmsg.NewPtrDescribeClusterRequest()
		r.IncludeClusterAuthorizedOperations = true
		r.SetVersion(version)
		return r
	case int16(kmsg.DescribeConfigs):
		r := kmsg.NewPtrDescribeConfigsRequest()
		r.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "orders"}, {ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "0"}}
		r.IncludeSynonyms, r.IncludeDocumentation = true, true
		r.SetVersion(version)
		return r
	case int16(kmsg.AlterConfigs):
		r := kmsg.NewPtrAlterConfigsRequest()
		r.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "orders",
			Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.bytes", Value: kmsg.StringPtr("4096")}}}}
		r.SetVersion(version)
		return r
	case int16(kmsg.IncrementalAlterConfigs):
		r := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "orders",
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "segment.bytes", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("1048576")}}}}
		r.SetVersion(version)
		return r
	case int16(kmsg.AddPartitionsToTxn):
		r := kmsg.NewPtrAddPartitionsToTxnRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch = "tx", 1, 0
		r.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "orders", Partitions: []int32{0, 9}}}
		r.SetVersion(version)
		return r
	case int16(kmsg.AddOffsetsToTxn):
		r := kmsg.NewPtrAddOffsetsToTxnRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = "tx", 1, 0, "g"
		r.SetVersion(version)
		return r
	case int16(kmsg.EndTxn):
		r := kmsg.NewPtrEndTxnRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = "tx", 1, 0, true
		r.SetVersion(version)
		return r
	case int16(kmsg.TxnOffsetCommit):
		r := kmsg.NewPtrTxnOffsetCommitRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch = "tx", 1, 0
		r.Group, r.MemberID, r.Generation = "g", "c-000001", 1
		r.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5, LeaderEpoch: -1}}}}
		r.SetVersion(version)
		return r
	case int16(kmsg.DescribeTransactions):
		r := kmsg.NewPtrDescribeTransactionsRequest()
		r.TransactionalIDs = []string{"t", "nope"}
		r.SetVersion(version)
		return r
	case int16(kmsg.ListTransactions):
		r := kmsg.NewPtrListTransactionsRequest()
		r.StateFilters, r.ProducerIDFilters, r.DurationFilterMillis = []string{"Ongoing", "Nope"}, []int64{1}, 10
		r.SetVersion(version)
		return r
	case int16(kmsg.ConsumerGroupDescribe):
		r := kmsg.NewPtrConsumerGroupDescribeRequest()
		r.Groups = []string{"k", "g", "nope"}
		r.SetVersion(version)
		return r
	}
	panic(fmt.Sprintf("no fuzz seed for API key %d", key))
}

// fuzzBody returns what follows the client id in req's frame: header v2's
// tags, if any, and the body.
func fuzzBody(t testing.TB, req kmsg.Request) []byte {
	frame := rawRequest(req, fuzzCorr, "c")[4:]
	_, rest, err := protocol.ParseHeader(frame)
	require.NoError(t, err)
	return rest
}

// FuzzDispatch feeds (API key, version, client id, bytes after the client
// id) through handleFrame, the path of every request: header parse,
// DecodeRequest, dispatch and the handler, into a real coordinator. The
// seeds are one valid request of every advertised API at its lowest and
// highest version, plus testdata/fuzz/FuzzDispatch. Properties:
//   - nothing panics;
//   - a refused request is one of the close errors (docs/design.md section 4);
//   - a request without an answer is a produce with acks 0;
//   - otherwise the answer carries the request's correlation id, API key
//     and version (or KIP-511's v0 ApiVersions answer), encodes, decodes
//     as that API's response and re-encodes to the same bytes;
//   - nothing is logged at Error (an unmapped error is our own failure).
func FuzzDispatch(f *testing.F) {
	for _, vr := range protocol.SupportedVersions() {
		for _, v := range []int16{vr.Min, vr.Max} {
			f.Add(vr.Key, v, "c", fuzzBody(f, fuzzSeed(vr.Key, v)))
		}
	}
	f.Fuzz(func(t *testing.T, key, version int16, clientID string, rest []byte) {
		if len(clientID) > 1<<10 || len(rest) > 1<<20 {
			return // the frame cap bounds these on the wire
		}
		e := fuzzEnv(t)
		frame := kbin.AppendInt16(nil, key)
		frame = kbin.AppendInt16(frame, version)
		frame = kbin.AppendInt32(frame, fuzzCorr)
		frame = kbin.AppendString(frame, clientID)
		frame = append(frame, rest...)

		acct := &account{mem: e.srv.mem, wait: time.Second}
		defer acct.settle()
		r := &request{ctx: t.Context(), logger: e.srv.logger, peer: &peer{remote: "127.0.0.1:40000", host: "/127.0.0.1"}, acct: acct}
		resp, corr, err := e.srv.handleFrame(r, frame)
		if err != nil {
			for _, closing := range []error{protocol.ErrMalformedHeader, protocol.ErrUnknownAPIKey,
				protocol.ErrUnsupportedVersion, protocol.ErrMalformedRequest} {
				if errors.Is(err, closing) {
					return
				}
			}
			t.Fatalf("%s v%d: refused with %v, which is not a close error", kmsg.NameForKey(key), version, err)
		}
		if resp == nil {
			// The one request that is not answered: a produce with acks
			// 0 (produce.go), whose failure closes the connection.
			if acks, ok := produceAcks(frame); !ok || acks != 0 {
				t.Fatalf("%s v%d: no answer, but it is not a produce with acks 0", kmsg.NameForKey(key), version)
			}
			return
		}
		wantVersion := version
		if !protocol.Supported(key, version) {
			if key != int16(kmsg.ApiVersions) {
				t.Fatalf("%s v%d answered, but it is not supported", kmsg.NameForKey(key), version)
			}
			wantVersion = 0 // KIP-511
		}
		code := r.code
		codes := responseCodes(resp)
		if code != 0 && !slices.Contains(codes, code) {
			t.Fatalf("%s v%d: the observer is told code %d, which the answer does not carry (%v)", kmsg.NameForKey(key), version, code, codes)
		}
		if code == 0 && slices.ContainsFunc(codes, func(c int16) bool { return c != 0 }) {
			t.Fatalf("%s v%d: the observer is told NONE, but the answer carries %v", kmsg.NameForKey(key), version, codes)
		}
		if corr != fuzzCorr || resp.Key() != key || resp.GetVersion() != wantVersion {
			t.Fatalf("request %s v%d corr %d answered by %s v%d corr %d",
				kmsg.NameForKey(key), version, fuzzCorr, kmsg.NameForKey(resp.Key()), resp.GetVersion(), corr)
		}
		out := protocol.AppendResponse(nil, corr, resp)
		body := out[8:] // size, correlation id
		if resp.IsFlexible() && key != int16(kmsg.ApiVersions) {
			body = body[1:] // response header v1's empty tags
		}
		again := kmsg.ResponseForKey(key)
		again.SetVersion(wantVersion)
		if err := again.ReadFrom(body); err != nil {
			t.Fatalf("%s v%d: our answer does not decode: %v\n%x", kmsg.NameForKey(key), wantVersion, err, body)
		}
		if reencoded := again.AppendTo(nil); !bytes.Equal(reencoded, body) {
			t.Fatalf("%s v%d: our answer does not round-trip:\n%x\n%x", kmsg.NameForKey(key), wantVersion, body, reencoded)
		}
		for _, r := range e.logs.AtLevel(slog.LevelError) {
			t.Fatalf("%s v%d: logged at Error: %s %v", kmsg.NameForKey(key), version, r.Message, r.Attrs)
		}
	})
}

// produceAcks returns the acks of frame when it is a Produce request.
func produceAcks(frame []byte) (int16, bool) {
	h, body, err := protocol.ParseHeader(frame)
	if err != nil {
		return 0, false
	}
	req, err := protocol.DecodeRequest(h, body)
	if err != nil {
		return 0, false
	}
	produce, ok := req.(*kmsg.ProduceRequest)
	if !ok {
		return 0, false
	}
	return produce.Acks, true
}

// TestReservingHandlersHaveTheirTraits: the handlers that reserve of the
// memory budget are exactly those whose API declares largeAnswer or
// decompresses in the dispatch table, so that the connection loop, which
// reads only the traits, writes what it holds before a request that may
// wait for the budget.
func TestReservingHandlersHaveTheirTraits(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	reserving := map[string]bool{} // handler name -> its file calls r.reserve
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		var handlers []string
		calls := false
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if strings.HasPrefix(n.Name.Name, "handle") && n.Recv != nil {
					handlers = append(handlers, n.Name.Name)
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "reserve" || sel.Sel.Name == "borrow") {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "r" {
						calls = true
					}
				}
			}
			return true
		})
		for _, h := range handlers {
			reserving[h] = calls
		}
	}
	table := handlers()
	for key, a := range table {
		name := "handle" + kmsg.NameForKey(int16(key))
		calls, ok := reserving[name]
		require.True(t, ok, "no handler function %s", name)
		assert.Equal(t, calls, a.traits&(largeAnswer|decompresses) != 0, "%s: reserves %v, traits %b", name, calls, a.traits)
	}
}

// TestConnectionLoopNamesNoAPI: the connection loop (conn.go, frame.go,
// oversize.go, http.go) and the memory budget (memory.go, bufpool.go)
// name no API key: what they must know of an API they read from its
// entry in the dispatch table.
func TestConnectionLoopNamesNoAPI(t *testing.T) {
	t.Parallel()
	keys := map[string]bool{}
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		keys[kmsg.NameForKey(k)] = true
	}
	fset := token.NewFileSet()
	for _, path := range []string{"conn.go", "frame.go", "oversize.go", "http.go", "memory.go", "bufpool.go"} {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "kmsg" && keys[sel.Sel.Name] {
					t.Errorf("%s names the API key kmsg.%s", fset.Position(sel.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
}

// TestOnlyApiVersionsIsAVersionProbe: the one API whose unsupported
// version is answered (KIP-511) rather than closing the connection.
func TestOnlyApiVersionsIsAVersionProbe(t *testing.T) {
	t.Parallel()
	var probes []string
	for key, a := range handlers() {
		if a.traits&versionProbe != 0 {
			probes = append(probes, key.Name())
		}
	}
	assert.Equal(t, []string{"ApiVersions"}, probes)
}
