package server

// FindCoordinator (key 10), versions 0-6.
//
// This broker coordinates every group and every transactional id (key
// type 1: the transaction coordinator, package txn). v0-3 take one key and answer one node; v1 adds the
// key type; v3 is flexible; v4 (KIP-699) batches keys and answers one entry
// per key; v6 adds share-group keys, treated the same.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleFindCoordinator(_ *request, req *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	host, port := s.address()
	if req.Version < 4 {
		resp.NodeID, resp.Host, resp.Port = NodeID, host, port
		return resp
	}
	for _, key := range req.CoordinatorKeys {
		resp.Coordinators = append(resp.Coordinators, kmsg.FindCoordinatorResponseCoordinator{
			Key: key, NodeID: NodeID, Host: host, Port: port,
		})
	}
	return resp
}
