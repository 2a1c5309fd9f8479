package admin

// A fault that names a member matches that member's requests only: once
// the member has left or expired, the fault matches nothing, and what a
// lesson cut off is gone rather than cut off. GET /v1/faults says so of
// each such fault (member_gone): whether the member is in a group the
// fault can match comes from the coordinator, and why and when it went
// from the rebalance timeline (GET /v1/events).

import (
	"slices"

	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/server"
)

// memberGoneJSON says that a fault names a member that no group the
// fault can match holds now (its group; every group for a fault without
// one), and, as far as the retained timeline tells, why and when it went.
type memberGoneJSON struct {
	// Reason is the reason of the rebalance that started without the
	// member: "leave", "expiry", "static member restarted" (another run
	// took its place), ... ; memberNotSeen when the timeline never listed
	// it (it never joined, or went before the timeline's oldest entry).
	Reason string `json:"reason"`
	// Group, Generation and Time: that rebalance's, absent with
	// memberNotSeen.
	Group      string `json:"group,omitzero"`
	Generation int32  `json:"generation,omitzero"`
	Time       string `json:"time,omitzero"`
	TimeMS     int64  `json:"time_ms,omitzero"`
}

// memberNotSeen is member_gone's reason for a member that the retained
// rebalance timeline never listed.
const memberNotSeen = "not seen"

// membersGone returns, by fault id, why each fault in list that names a
// member no longer finds it; faults whose member is in, or that name
// none, are absent, and so is "not seen" for a fault whose warnings
// (fault_targets.go in server) already say the member does not exist.
func (s *Server) membersGone(list []server.FaultStatus) map[string]*memberGoneJSON {
	out := map[string]*memberGoneJSON{}
	var everyone map[string]bool // every group's members, read once if a fault names no group
	var timeline []rebalanceEvent
	for _, st := range list {
		f := st.Fault
		if f.Member == "" {
			continue
		}
		if f.Group != "" {
			if v, ok := s.coord.Describe(f.Group); ok && slices.ContainsFunc(v.Members, func(m coordinator.MemberView) bool { return m.MemberID == f.Member }) {
				continue
			}
		} else {
			if everyone == nil {
				everyone = s.everyMember()
			}
			if everyone[f.Member] {
				continue
			}
		}
		if timeline == nil {
			timeline = s.recorder.events().Rebalances
		}
		d := departure(timeline, f.Group, f.Member)
		if d.Reason == memberNotSeen && len(st.Warnings) > 0 {
			continue // the fault's warning already says the member is not there
		}
		out[st.ID] = d
	}
	return out
}

// everyMember returns the member ids of every group.
func (s *Server) everyMember() map[string]bool {
	out := map[string]bool{}
	for _, l := range s.coord.Groups() {
		if v, ok := s.coord.Describe(l.Group); ok {
			for _, m := range v.Members {
				out[m.MemberID] = true
			}
		}
	}
	return out
}

// departure finds in timeline (oldest first) the latest rebalance of group
// (of any group when group is "") that no longer listed member though the
// group's previous one did, or that replaced it (a static member's
// restart); memberNotSeen when there is none.
func departure(timeline []rebalanceEvent, group, member string) *memberGoneJSON {
	had := map[string]bool{} // by group: its previous rebalance listed member
	out := &memberGoneJSON{Reason: memberNotSeen}
	for _, ev := range timeline {
		if group != "" && ev.Group != group {
			continue
		}
		has := slices.Contains(ev.Members, member)
		if (had[ev.Group] && !has) || ev.Replaced == member {
			out = &memberGoneJSON{Reason: ev.Reason, Group: ev.Group, Generation: ev.Generation, Time: ev.Time, TimeMS: ev.TimeMS}
		}
		had[ev.Group] = has
	}
	return out
}
