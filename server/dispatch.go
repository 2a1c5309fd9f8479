package server

import (
	"fmt"

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

// oversizedHandler answers a request whose frame is over MaxFrameBytes
// (oversize.go) from what it reads of the body through sk, which must
// not keep the body's bulk; size is the frame's. An error closes the
// connection.
type oversizedHandler func(s *Server, r *request, sk *protocol.Skimmer, size int32) (kmsg.Response, error)

// api is one entry of the dispatch table: the handler and what the
// connection loop must know of it (its traits), so that the loop itself
// knows no API, and for the one API whose frame may rightly pass
// MaxFrameBytes, its answer to such a frame.
type api struct {
	handle    handler
	traits    traits
	oversized oversizedHandler
	// holds is what an element of each array of a request of the API
	// holds beyond its decoded struct, in bytes, by the array's path of
	// kmsg field names (an array not named: nothing more): its answer's
	// element, the answer encoded, what the handler keeps for it
	// (amplification.go), measured on the worst shapes by
	// TestRequestBoundsHoldHostileShapes.
	holds holds
}

// holds is what an element of an array holds beyond its decoded struct,
// by the array's path of kmsg field names (elements.go).
type holds map[string]elementHolds

// elementHolds is what an element of an array holds beyond its decoded
// struct: each, and copies per byte of its strings (names in error
// messages, in the answer, in the handler's maps), beyond stringCopies.
type elementHolds struct{ each, copies int32 }

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
		kmsg.ApiVersions:     {typed((*Server).handleApiVersions), versionProbe, nil, nil},
		kmsg.Metadata:        {typed((*Server).handleMetadata), largeAnswer, nil, holds{"Topics": {1600, 3}}},
		kmsg.FindCoordinator: {typed((*Server).handleFindCoordinator), 0, nil, holds{"CoordinatorKeys": {592, 2}}},
		kmsg.JoinGroup:       {typed((*Server).handleJoinGroup), largeAnswer, nil, holds{"Protocols": {368, 2}}},
		kmsg.SyncGroup:       {typed((*Server).handleSyncGroup), 0, nil, nil},
		kmsg.Heartbeat:       {typed((*Server).handleHeartbeat), 0, nil, nil},
		kmsg.LeaveGroup:      {typed((*Server).handleLeaveGroup), 0, nil, nil},
		kmsg.OffsetCommit:    {typed((*Server).handleOffsetCommit), 0, nil, holds{"Topics": {128, 3}, "Topics.Partitions": {160, 2}}},
		kmsg.OffsetFetch:     {typed((*Server).handleOffsetFetch), 0, nil, holds{"Groups": {384, 2}, "Groups.Topics": {1104, 3}, "Groups.Topics.Partitions": {688, 0}, "Topics": {1040, 3}, "Topics.Partitions": {688, 0}}},
		kmsg.DescribeGroups:  {typed((*Server).handleDescribeGroups), largeAnswer, nil, holds{"Groups": {1008, 2}}},
		kmsg.ListGroups:      {typed((*Server).handleListGroups), 0, nil, nil},
		kmsg.CreateTopics:    {typed((*Server).handleCreateTopics), 0, nil, holds{"Topics": {2288, 2}}},
		kmsg.DeleteTopics:    {typed((*Server).handleDeleteTopics), 0, nil, holds{"TopicNames": {896, 9}, "Topics": {1424, 7}}},
		kmsg.ListOffsets:     {typed((*Server).handleListOffsets), decompresses, nil, holds{"Topics": {336, 3}, "Topics.Partitions": {592, 0}}},
		kmsg.Fetch:           {typed((*Server).handleFetch), mayWait | largeAnswer, nil, holds{"Topics": {432, 2}, "Topics.Partitions": {1104, 0}}},
		kmsg.Produce:         {typed((*Server).handleProduce), pooledFrame | decompresses, (*Server).answerOversizedProduce, holds{"Topics": {432, 2}, "Topics.Partitions": {608, 0}}},
		kmsg.InitProducerID:  {typed((*Server).handleInitProducerID), 0, nil, nil},
		kmsg.DeleteGroups:    {typed((*Server).handleDeleteGroups), 0, nil, holds{"Groups": {592, 3}}},
		kmsg.OffsetDelete:    {typed((*Server).handleOffsetDelete), 0, nil, holds{"Topics": {32, 2}, "Topics.Partitions": {144, 0}}},

		kmsg.CreatePartitions: {typed((*Server).handleCreatePartitions), 0, nil, holds{"Topics": {672, 8}}},
		kmsg.DeleteRecords:    {typed((*Server).handleDeleteRecords), 0, nil, holds{"Topics": {336, 3}, "Topics.Partitions": {384, 0}}},

		kmsg.DescribeConfigs:         {typed((*Server).handleDescribeConfigs), largeAnswer, nil, holds{"Resources": {2688, 2}}},
		kmsg.AlterConfigs:            {typed((*Server).handleAlterConfigs), largeAnswer, nil, holds{"Resources": {2784, 1}, "Resources.Configs": {272, 1}}},
		kmsg.IncrementalAlterConfigs: {typed((*Server).handleIncrementalAlterConfigs), largeAnswer, nil, holds{"Resources": {2784, 1}, "Resources.Configs": {272, 1}}},

		kmsg.SASLHandshake:    {typed((*Server).handleSASLHandshake), 0, nil, nil},
		kmsg.SASLAuthenticate: {typed((*Server).handleSASLAuthenticate), 0, nil, nil},
		kmsg.DescribeCluster:  {typed((*Server).handleDescribeCluster), 0, nil, nil},

		kmsg.AddPartitionsToTxn: {typed((*Server).handleAddPartitionsToTxn), 0, nil, holds{"Topics": {336, 3}, "Topics.Partitions": {272, 0}}},
		kmsg.AddOffsetsToTxn:    {typed((*Server).handleAddOffsetsToTxn), 0, nil, nil},
		kmsg.EndTxn:             {typed((*Server).handleEndTxn), 0, nil, nil},
		kmsg.TxnOffsetCommit:    {typed((*Server).handleTxnOffsetCommit), 0, nil, holds{"Topics": {432, 2}, "Topics.Partitions": {464, 0}}},

		kmsg.DescribeTransactions: {typed((*Server).handleDescribeTransactions), largeAnswer, nil, holds{"TransactionalIDs": {960, 2}}},
		kmsg.ListTransactions:     {typed((*Server).handleListTransactions), largeAnswer, nil, holds{"StateFilters": {128, 3}}},

		kmsg.ConsumerGroupHeartbeat: {typed((*Server).handleConsumerGroupHeartbeat), 0, nil, holds{"Topics": {64, 0}}},
		kmsg.ConsumerGroupDescribe:  {typed((*Server).handleConsumerGroupDescribe), largeAnswer, nil, holds{"Groups": {1280, 9}}},
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

// apiEntry is an api as the table holds it, with the layout of its
// requests at each version served (elements.go), nil at the others.
type apiEntry struct {
	api
	layouts []*requestLayout
}

// newAPITable lays out the entries of m by key.
func newAPITable(m map[kmsg.Key]api) apiTable {
	var last kmsg.Key
	for k := range m {
		last = max(last, k)
	}
	t := make(apiTable, last+1)
	for k, api := range m {
		a := apiEntry{api: api}
		vr, _ := protocol.VersionsFor(int16(k))
		a.layouts = make([]*requestLayout, vr.Max+1)
		for v := vr.Min; v <= vr.Max; v++ {
			l, err := layoutOf(int16(k), v, a.holds)
			if err != nil {
				panic(fmt.Sprintf("server: %v", err)) // kmsg's structs, not a peer's bytes
			}
			l.perByte = l.costliestByte()
			a.layouts[v] = l
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
	if s.faults.idle() {
		return s.handle(r, req)
	}
	return s.dispatchFaulted(r, req) // fault_apply.go
}

// handle runs the request's handler.
func (s *Server) handle(r *request, req kmsg.Request) kmsg.Response {
	return s.handlers[r.key].handle(s, r, req)
}
