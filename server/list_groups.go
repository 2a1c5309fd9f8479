package server

// ListGroups (key 16), versions 0-5.
//
// v3 is flexible; v4 (KIP-518) adds a case-insensitive state filter and the
// state of each group; v5 (KIP-848) a case-insensitive type filter and each
// group's type, "classic" or "consumer", as Kafka's
// GroupMetadataManager.listGroups lists them. A consumer group's protocol
// type is "consumer" too, and its state Empty, Reconciling (some member's
// epoch lags the group epoch) or Stable. Groups known only by their
// committed offsets are listed as Empty classic groups.

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/coordinator"
)

func (s *Server) handleListGroups(_ *request, req *kmsg.ListGroupsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	for _, l := range s.coord.Groups() {
		state := l.State.String()
		if len(req.StatesFilter) > 0 && !slices.ContainsFunc(req.StatesFilter, func(f string) bool { return strings.EqualFold(f, state) }) {
			continue
		}
		typ := l.Type.String()
		if len(req.TypesFilter) > 0 && !slices.ContainsFunc(req.TypesFilter, func(f string) bool { return strings.EqualFold(f, typ) }) {
			continue
		}
		resp.Groups = append(resp.Groups, kmsg.ListGroupsResponseGroup{
			Group: l.Group, ProtocolType: coordinator.ConsumerProtocolType, GroupState: state, GroupType: typ,
		})
	}
	return resp
}
