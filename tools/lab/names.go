package lab

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Scope is what one run of a tool (a lab, the comparison) calls the
// groups and topics it makes. Every tool that runs against a broker it
// did not start (--broker) takes its names from here, so that it never
// touches a group or topic a user made, two runs never meet, and what a
// run leaves behind says which tool left it.
//
// On the tool's own broker (InProcess) the names are the chapter's:
// group "lab-fencing", topic "orders". On a user's broker (OnBroker) each
// says which tool made it, and groups carry the run's id: group
// "lab-fencing-mk2x9q0b1c", topic "lab-orders" (or, for a run that needs
// it empty, "lab-mk2x9q0b1c-orders").
type Scope struct {
	tool string
	run  string // "" on the tool's own broker
}

// InProcess returns the names of a run on a broker the tool started
// itself, which holds nothing else.
func InProcess(tool string) Scope { return Scope{tool: tool} }

// OnBroker returns the names of a run on a broker someone else runs:
// they end with an id no other run of this process has, and that a run
// of another process has only if it started in the same nanosecond.
func OnBroker(tool string) Scope { return Scope{tool: tool, run: newRunID()} }

var (
	runMu   sync.Mutex
	lastRun int64 // guarded by runMu
)

// newRunID returns the time in nanoseconds in base 36, later than any id
// returned before in this process.
func newRunID() string {
	runMu.Lock()
	defer runMu.Unlock()
	now := max(time.Now().UnixNano(), lastRun+1)
	lastRun = now
	return strconv.FormatInt(now, 36)
}

// Shared reports whether the names are for a broker the tool did not
// start.
func (n Scope) Shared() bool { return n.run != "" }

// Run is the run's id, "" on the tool's own broker.
func (n Scope) Run() string { return n.run }

// Group is the group the run calls name: "lab-fencing", or
// "lab-fencing-<run>" on a shared broker.
func (n Scope) Group(name string) string {
	if n.run == "" {
		return n.tool + "-" + name
	}
	return n.tool + "-" + name + "-" + n.run
}

// Topic is the topic the run uses for the chapter's topic name: name
// itself on the tool's own broker, "<tool>-<name>" on a shared one, the
// same for every run of the tool (a run that needs the topic empty takes
// RunTopic).
func (n Scope) Topic(name string) string {
	if n.run == "" {
		return name
	}
	return n.tool + "-" + name
}

// RunTopic is Topic for a run that needs a topic no other run has used
// (empty when it starts): "<tool>-<run>-<name>" on a shared broker.
func (n Scope) RunTopic(name string) string {
	if n.run == "" {
		return name
	}
	return n.tool + "-" + n.run + "-" + name
}

// Topics renames a catalog of the chapter's topics with Topic.
func (n Scope) Topics(catalog map[string]int32) map[string]int32 {
	return n.rename(catalog, n.Topic)
}

// RunTopics renames a catalog of the chapter's topics with RunTopic.
func (n Scope) RunTopics(catalog map[string]int32) map[string]int32 {
	return n.rename(catalog, n.RunTopic)
}

func (n Scope) rename(catalog map[string]int32, name func(string) string) map[string]int32 {
	out := make(map[string]int32, len(catalog))
	for t, parts := range catalog {
		out[name(t)] = parts
	}
	return out
}

// Chapter rewrites the run's names for the chapter's topics in s (Topic
// and RunTopic) back to the chapter's own ("lab-orders-1" reads
// "orders-1"), so that an answer reads the same on every broker.
func (n Scope) Chapter(s string, topics ...string) string {
	if n.run == "" {
		return s
	}
	for _, t := range topics {
		s = strings.ReplaceAll(s, n.RunTopic(t), t)
		s = strings.ReplaceAll(s, n.Topic(t), t)
	}
	return s
}

// owns reports whether group is one of the run's: the tool's prefix and
// the run's id, as Group makes them, and anything a tool derives from
// them by a suffix ("...-<run>-nobody").
func (n Scope) owns(group string) bool {
	return n.run != "" && strings.HasPrefix(group, n.tool+"-") &&
		(strings.HasSuffix(group, "-"+n.run) || strings.Contains(group, "-"+n.run+"-"))
}

// topicNames returns the names of a catalog, sorted.
func topicNames(catalog map[string]int32) []string { return slices.Sorted(maps.Keys(catalog)) }
