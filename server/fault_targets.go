package server

// A fault's warnings: what it names (a group, a member id, a topic, a
// partition) that does not exist now. A fault that names nothing real
// matches no request until something of that name appears, and hits 0
// for ever if it never does: the usual cause is a typo, or a member id
// copied from somewhere else (member ids carry the client's id and a
// sequence the broker hands out). Such a fault is still put in force,
// since a test may set one before its target exists on purpose; the
// warnings say what is missing, in the admin API's answers, on the live
// page, in the log and through InjectedFault.Warnings.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/minibroker/minibroker/coordinator"
)

// FaultTargets tells the fault registry whether what a fault names
// exists now. The coordinator and the topic catalog answer it
// (CoordinatorTargets).
type FaultTargets interface {
	// GroupExists reports whether a group of that id is known.
	GroupExists(group string) bool
	// MemberIDs returns the member ids of a group, sorted.
	MemberIDs(group string) []string
	// GroupsOfMember returns the groups that have a member of that id.
	GroupsOfMember(memberID string) []string
	// Partitions returns a topic's partition count, or false if there
	// is no such topic.
	Partitions(topic string) (int32, bool)
}

// maxWarnedMembers caps the member ids a warning lists.
const maxWarnedMembers = 5

// CoordinatorTargets returns the FaultTargets of a coordinator (groups
// and members) and a topic catalog.
func CoordinatorTargets(coord *coordinator.Coordinator, topics interface {
	Partitions(topic string) (int32, bool)
}) FaultTargets {
	return coordTargets{coord, topics}
}

type coordTargets struct {
	*coordinator.Coordinator
	topics interface {
		Partitions(topic string) (int32, bool)
	}
}

func (t coordTargets) Partitions(topic string) (int32, bool) { return t.topics.Partitions(topic) }

// faultWarnings returns what f names that targets does not know now, one
// sentence each; nil when everything it names exists (or targets is nil).
func faultWarnings(f *Fault, targets FaultTargets) []string {
	if targets == nil {
		return nil
	}
	var out []string
	switch {
	case f.Group != "" && !targets.GroupExists(f.Group):
		if f.Member != "" {
			out = append(out, fmt.Sprintf("no group %q now, so no member %q in it", f.Group, f.Member))
		} else {
			out = append(out, fmt.Sprintf("no group %q now", f.Group))
		}
	case f.Group != "" && f.Member != "":
		members := targets.MemberIDs(f.Group)
		if !slices.Contains(members, f.Member) {
			out = append(out, fmt.Sprintf("group %q has no member %q now (%s)", f.Group, f.Member, memberList(members)))
		}
	case f.Member != "":
		if len(targets.GroupsOfMember(f.Member)) == 0 {
			out = append(out, fmt.Sprintf("no member %q in any group now", f.Member))
		}
	}
	if f.Topic != "" {
		n, ok := targets.Partitions(f.Topic)
		if !ok {
			out = append(out, fmt.Sprintf("no topic %q now", f.Topic))
		}
		for _, p := range f.Partitions {
			if ok && p >= n {
				out = append(out, fmt.Sprintf("topic %q has %d partitions: %d is not one of them", f.Topic, n, p))
			}
		}
	}
	return out
}

// memberList names a group's members for a warning, the first few.
func memberList(ids []string) string {
	switch {
	case len(ids) == 0:
		return "it has no members"
	case len(ids) > maxWarnedMembers:
		return fmt.Sprintf("its members: %s and %d more", strings.Join(ids[:maxWarnedMembers], ", "), len(ids)-maxWarnedMembers)
	}
	return "its members: " + strings.Join(ids, ", ")
}
