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

// handlers returns the dispatch table: one handler per API in protocol's
// version table, and nothing else.
func handlers() map[kmsg.Key]handler {
	m := map[kmsg.Key]handler{
		kmsg.ApiVersions:     typed((*Server).handleApiVersions),
		kmsg.Metadata:        typed((*Server).handleMetadata),
		kmsg.FindCoordinator: typed((*Server).handleFindCoordinator),
		kmsg.JoinGroup:       typed((*Server).handleJoinGroup),
		kmsg.SyncGroup:       typed((*Server).handleSyncGroup),
		kmsg.Heartbeat:       typed((*Server).handleHeartbeat),
		kmsg.LeaveGroup:      typed((*Server).handleLeaveGroup),
		kmsg.OffsetCommit:    typed((*Server).handleOffsetCommit),
		kmsg.OffsetFetch:     typed((*Server).handleOffsetFetch),
		kmsg.DescribeGroups:  typed((*Server).handleDescribeGroups),
		kmsg.ListGroups:      typed((*Server).handleListGroups),
		kmsg.CreateTopics:    typed((*Server).handleCreateTopics),
		kmsg.DeleteTopics:    typed((*Server).handleDeleteTopics),
		kmsg.ListOffsets:     typed((*Server).handleListOffsets),
		kmsg.Fetch:           typed((*Server).handleFetch),
		kmsg.Produce:         typed((*Server).handleProduce),
		kmsg.InitProducerID:  typed((*Server).handleInitProducerID),
		kmsg.DeleteGroups:    typed((*Server).handleDeleteGroups),
		kmsg.OffsetDelete:    typed((*Server).handleOffsetDelete),

		kmsg.CreatePartitions: typed((*Server).handleCreatePartitions),
		kmsg.DeleteRecords:    typed((*Server).handleDeleteRecords),

		kmsg.ConsumerGroupHeartbeat: typed((*Server).handleConsumerGroupHeartbeat),
		kmsg.ConsumerGroupDescribe:  typed((*Server).handleConsumerGroupDescribe),
	}
	for _, v := range protocol.SupportedVersions() {
		if m[kmsg.Key(v.Key)] == nil {
			panic(fmt.Sprintf("server: no handler for advertised API %s", kmsg.NameForKey(v.Key)))
		}
	}
	if len(m) != len(protocol.SupportedVersions()) {
		panic("server: a handler exists for an API that is not advertised")
	}
	return m
}
