package server

import (
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/protocol"
)

// handler answers one decoded request. Handlers never fail: request-level
// problems become error codes in the response. The one answer that is
// not sent is a produce's with acks 0: its handler returns nil.
type handler func(s *Server, r *request, req kmsg.Request) kmsg.Response

// typed adapts a handler of one concrete request type.
func typed[Req kmsg.Request](fn func(*Server, *request, Req) kmsg.Response) handler {
	return func(s *Server, r *request, req kmsg.Request) kmsg.Response {
		return fn(s, r, req.(Req))
	}
}

// api is one entry of the dispatch table: the handler and what the
// connection loop must know of it (its traits), so that the loop itself
// knows no API.
type api struct {
	handle handler
	traits traits
	// holds bounds what a request of the API holds beyond its frame
	// (amplification.go), measured for its worst shapes by
	// TestRequestBoundsHoldHostileShapes.
	holds perByte
	// counts, when set, counts the bound instead from the request's body
	// (after its header) at a version, before it is decoded: for an API
	// whose frames may be mostly bytes its request refers to.
	counts func(body []byte, version int16) int64
}

// traits are what an API asks of the connection loop and the memory
// budget (memory.go).
type traits uint8

const (
	// pooledFrame: a large frame is read into a buffer of the pool, given
	// back once the answer is encoded. Only for a handler that keeps
	// nothing of its request (Produce copies the batches into the log's
	// files before it returns).
	pooledFrame traits = 1 << iota
	// mayWait: the handler may wait for something other than the budget
	// (a Fetch for records, up to its MaxWait), so answers already made
	// are written before it runs, not held back for it.
	mayWait
	// largeAnswer: the handler reserves a bound on its answer of the work
	// lane before it builds it (request.reserve). Since a reservation
	// waits only while the connection holds no work, answers already made
	// are written before it runs.
	largeAnswer
	// decompresses: the handler may decompress stored or produced batches,
	// and reserves the decompressor's memory of the work lane first
	// (records.DecoderBytes). It may wait only while the connection holds
	// no work, so it needs no write before it.
	decompresses
	// versionProbe: the request asks which versions the broker speaks, so
	// one of a version it does not speak gets KIP-511's v0 answer
	// (protocol.UnsupportedAPIVersionsResponse) instead of a closed
	// connection.
	versionProbe
)

// coalesces reports whether a request of this API may be handled while
// the answers before it wait to share its write.
func (t traits) coalesces() bool { return t&(mayWait|largeAnswer) == 0 }

// handlers returns the dispatch table: one entry per API in protocol's
// version table, and nothing else.
func handlers() map[kmsg.Key]api {
	m := map[kmsg.Key]api{
		kmsg.ApiVersions:     {typed((*Server).handleApiVersions), versionProbe, 2 * perFrameByte, nil},
		kmsg.Metadata:        {typed((*Server).handleMetadata), largeAnswer, 358 * perFrameByte, nil},
		kmsg.FindCoordinator: {typed((*Server).handleFindCoordinator), 0, 546 * perFrameByte, nil},
		kmsg.JoinGroup:       {typed((*Server).handleJoinGroup), largeAnswer, 0, joinGroupHolds},
		kmsg.SyncGroup:       {typed((*Server).handleSyncGroup), 0, 0, syncGroupHolds},
		kmsg.Heartbeat:       {typed((*Server).handleHeartbeat), 0, 2 * perFrameByte, nil},
		kmsg.LeaveGroup:      {typed((*Server).handleLeaveGroup), 0, 40 * perFrameByte, nil},
		kmsg.OffsetCommit:    {typed((*Server).handleOffsetCommit), 0, 55 * perFrameByte, nil},
		kmsg.OffsetFetch:     {typed((*Server).handleOffsetFetch), 0, 160 * perFrameByte, nil},
		kmsg.DescribeGroups:  {typed((*Server).handleDescribeGroups), largeAnswer, 900 * perFrameByte, nil},
		kmsg.ListGroups:      {typed((*Server).handleListGroups), 0, 40 * perFrameByte, nil},
		kmsg.CreateTopics:    {typed((*Server).handleCreateTopics), 0, 257 * perFrameByte, nil},
		kmsg.DeleteTopics:    {typed((*Server).handleDeleteTopics), 0, 3000 * perFrameByte, nil},
		kmsg.ListOffsets:     {typed((*Server).handleListOffsets), decompresses, 114 * perFrameByte, nil},
		kmsg.Fetch:           {typed((*Server).handleFetch), mayWait | largeAnswer, 142 * perFrameByte, nil},
		kmsg.Produce:         {typed((*Server).handleProduce), pooledFrame | decompresses, 0, produceHolds},
		kmsg.InitProducerID:  {typed((*Server).handleInitProducerID), 0, 2 * perFrameByte, nil},
		kmsg.DeleteGroups:    {typed((*Server).handleDeleteGroups), 0, 98 * perFrameByte, nil},
		kmsg.OffsetDelete:    {typed((*Server).handleOffsetDelete), 0, 32 * perFrameByte, nil},

		kmsg.CreatePartitions: {typed((*Server).handleCreatePartitions), 0, 311 * perFrameByte, nil},
		kmsg.DeleteRecords:    {typed((*Server).handleDeleteRecords), 0, 114 * perFrameByte, nil},

		kmsg.DescribeConfigs:         {typed((*Server).handleDescribeConfigs), largeAnswer, 634 * perFrameByte, nil},
		kmsg.AlterConfigs:            {typed((*Server).handleAlterConfigs), largeAnswer, 625 * perFrameByte, nil},
		kmsg.IncrementalAlterConfigs: {typed((*Server).handleIncrementalAlterConfigs), largeAnswer, 625 * perFrameByte, nil},

		kmsg.SASLHandshake:    {typed((*Server).handleSASLHandshake), 0, 2 * perFrameByte, nil},
		kmsg.SASLAuthenticate: {typed((*Server).handleSASLAuthenticate), 0, 2 * perFrameByte, nil},
		kmsg.DescribeCluster:  {typed((*Server).handleDescribeCluster), 0, 2 * perFrameByte, nil},

		kmsg.AddPartitionsToTxn: {typed((*Server).handleAddPartitionsToTxn), 0, 114 * perFrameByte, nil},
		kmsg.AddOffsetsToTxn:    {typed((*Server).handleAddOffsetsToTxn), 0, 8 * perFrameByte, nil},
		kmsg.EndTxn:             {typed((*Server).handleEndTxn), 0, 8 * perFrameByte, nil},
		kmsg.TxnOffsetCommit:    {typed((*Server).handleTxnOffsetCommit), 0, 142 * perFrameByte, nil},

		kmsg.DescribeTransactions: {typed((*Server).handleDescribeTransactions), largeAnswer, 900 * perFrameByte, nil},
		kmsg.ListTransactions:     {typed((*Server).handleListTransactions), largeAnswer, 121 * perFrameByte, nil},

		kmsg.ConsumerGroupHeartbeat: {typed((*Server).handleConsumerGroupHeartbeat), 0, 2 * perFrameByte, nil},
		kmsg.ConsumerGroupDescribe:  {typed((*Server).handleConsumerGroupDescribe), largeAnswer, 1124 * perFrameByte, nil},
	}
	for _, v := range protocol.SupportedVersions() {
		if m[kmsg.Key(v.Key)].handle == nil {
			panic(fmt.Sprintf("server: no handler for advertised API %s", kmsg.NameForKey(v.Key)))
		}
	}
	if len(m) != len(protocol.SupportedVersions()) {
		panic("server: a handler exists for an API that is not advertised")
	}
	return m
}

// apiTable is the dispatch table as the server reads it for every
// request: the entry of API key k at index k, so that finding it is an
// index rather than a map lookup. A key we do not serve has the zero
// entry: no handler, no traits.
type apiTable []apiEntry

// apiEntry is an api as the table holds it, with its first flexible
// version, whose requests carry tagged fields.
type apiEntry struct {
	api
	flexible int16
}

// newAPITable lays out the entries of m by key.
func newAPITable(m map[kmsg.Key]api) apiTable {
	var last kmsg.Key
	for k := range m {
		last = max(last, k)
	}
	t := make(apiTable, last+1)
	for k, api := range m {
		a := apiEntry{api: api, flexible: math.MaxInt16}
		req := kmsg.RequestForKey(int16(k))
		for v := req.MaxVersion(); v >= 0; v-- {
			req.SetVersion(v)
			if !req.IsFlexible() {
				break
			}
			a.flexible = v
		}
		t[k] = a
	}
	return t
}

// traitsOf returns the traits of the API with key; an unknown key has
// none (its request closes the connection once decoded).
func (s *Server) traitsOf(key int16) traits {
	if key < 0 || int(key) >= len(s.handlers) {
		return 0
	}
	return s.handlers[key].traits
}

// dispatch hands a decoded request to its handler: the one place every
// request passes between its decoding and its answer.
func (s *Server) dispatch(r *request, req kmsg.Request) kmsg.Response {
	if s.faults.live.Load() == 0 {
		return s.handle(r, req)
	}
	return s.dispatchFaulted(r, req) // fault_apply.go
}

// handle runs the request's handler.
func (s *Server) handle(r *request, req kmsg.Request) kmsg.Response {
	return s.handlers[r.key].handle(s, r, req)
}
