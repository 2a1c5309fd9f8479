package server

// DeleteGroups (key 42), versions 0-2.
//
// v1 changes only the throttle's timing; v2 is flexible. (v3, KIP-1043,
// adds an error message per group and is not served.) Each distinct group
// named is answered once, in the order first named, as
// KafkaApis.handleDeleteGroupsRequest drops repeats: NONE when the group
// and its committed offsets are deleted, durably;
// GROUP_ID_NOT_FOUND when it has neither state nor offsets;
// NON_EMPTY_GROUP when it has members, classic or KIP-848 (pending member
// ids are not members); INVALID_GROUP_ID for an id no group can have
// (longer than --max-id-bytes, or not text; the empty id names a group
// like any other, as in Kafka); KAFKA_STORAGE_ERROR when the disk refuses
// the deletion. The coordinator's DeleteGroups has the rules.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleDeleteGroups(r *request, req *kmsg.DeleteGroupsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	groups := make([]string, 0, len(req.Groups))
	seen := make(map[string]bool, len(req.Groups))
	for _, g := range req.Groups {
		if !seen[g] {
			seen[g] = true
			groups = append(groups, g)
		}
	}
	errs := s.coord.DeleteGroups(groups...)
	for i, g := range groups {
		code := s.code(errs[i])
		if code == 0 {
			r.logger.Info("group deleted on request", "group", g)
		}
		rg := kmsg.DeleteGroupsResponseGroup{Group: g}
		r.setCode(&rg.ErrorCode, code)
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
