package server

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/testutil"
)

// fakeTargets is a FaultTargets over fixed groups (id -> member ids) and
// topics (name -> partitions).
type fakeTargets struct {
	groups map[string][]string
	topics map[string]int32
}

func (f fakeTargets) GroupExists(g string) bool         { _, ok := f.groups[g]; return ok }
func (f fakeTargets) MemberIDs(g string) []string       { return f.groups[g] }
func (f fakeTargets) Partitions(t string) (int32, bool) { n, ok := f.topics[t]; return n, ok }
func (f fakeTargets) GroupsOfMember(m string) []string {
	var out []string
	for g, ms := range f.groups {
		if slices.Contains(ms, m) {
			out = append(out, g)
		}
	}
	return out
}

// TestFaultWarnings: each thing a fault can name that does not exist is
// one sentence; a fault naming only what exists, or nothing, has none.
func TestFaultWarnings(t *testing.T) {
	t.Parallel()
	many := make([]string, 7)
	for i := range many {
		many[i] = fmt.Sprintf("big-%06d", i+1)
	}
	targets := fakeTargets{
		groups: map[string][]string{"billing": {"a-000001", "b-000002"}, "empty": nil, "big": many},
		topics: map[string]int32{"orders": 4},
	}
	for _, tc := range []struct {
		name  string
		fault Fault
		want  []string
	}{
		{"everything exists", Fault{Group: "billing", Member: "b-000002", Topic: "orders", Partitions: []int32{0, 3}}, nil},
		{"no filters", Fault{}, nil},
		{"a member in any group", Fault{Member: "a-000001"}, nil},
		{"partitions of any topic", Fault{Partitions: []int32{99}}, nil},
		{"no group", Fault{Group: "biling"}, []string{`no group "biling" now`}},
		{"no group, with a member", Fault{Group: "biling", Member: "a-000001"}, []string{`no group "biling" now, so no member "a-000001" in it`}},
		{"a member of another id", Fault{Group: "billing", Member: "kgo-000004"},
			[]string{`group "billing" has no member "kgo-000004" now (its members: a-000001, b-000002)`}},
		{"a group without members", Fault{Group: "empty", Member: "kgo-000004"},
			[]string{`group "empty" has no member "kgo-000004" now (it has no members)`}},
		{"a group of many members", Fault{Group: "big", Member: "kgo-000004"},
			[]string{`group "big" has no member "kgo-000004" now (its members: big-000001, big-000002, big-000003, big-000004, big-000005 and 2 more)`}},
		{"a member of no group", Fault{Member: "kgo-000004"}, []string{`no member "kgo-000004" in any group now`}},
		{"no topic", Fault{Topic: "order", Partitions: []int32{7}}, []string{`no topic "order" now`}},
		{"partitions past the count", Fault{Topic: "orders", Partitions: []int32{3, 4, 9}},
			[]string{`topic "orders" has 4 partitions: 4 is not one of them`, `topic "orders" has 4 partitions: 9 is not one of them`}},
		{"group and topic", Fault{Group: "biling", Topic: "order"}, []string{`no group "biling" now`, `no topic "order" now`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, faultWarnings(&tc.fault, targets))
		})
	}
	require.Nil(t, faultWarnings(&Fault{Group: "nobody"}, nil), "a registry without targets never warns")
}

// TestFaultWarningsThroughTheRegistry: Inject puts a fault naming what
// does not exist in force (a test may set it first), logs one Warn line
// that says what is missing, and its handle and List say it for as long
// as it is missing and the fault has not applied to a request; once it
// has, it warns no more, even if what it names is gone (a zombie's
// requests name a member the group no longer has), nor once used up.
func TestFaultWarningsThroughTheRegistry(t *testing.T) {
	t.Parallel()
	logs := testutil.NewLogRecorder(t.Output(), slog.LevelError)
	targets := fakeTargets{groups: map[string][]string{"billing": {"a-000001"}}}
	fs := NewFaults(logs.Logger(), targets)
	h, err := fs.Inject(Fault{Keys: []int16{12}, Group: "billing", Member: "b-000002", Drop: true, Count: -1})
	require.NoError(t, err)
	want := []string{`group "billing" has no member "b-000002" now (its members: a-000001)`}
	require.Equal(t, want, h.Warnings())
	require.Equal(t, want, fs.List()[0].Warnings)
	warned := logs.Find("fault names what does not exist")
	require.Len(t, warned, 1)
	require.Equal(t, slog.LevelWarn, warned[0].Level)
	require.Equal(t, h.ID(), warned[0].Attrs["fault"])

	ok, err := fs.Inject(Fault{Keys: []int16{12}, Group: "billing", Member: "a-000001", Close: true})
	require.NoError(t, err)
	require.Nil(t, ok.Warnings())
	require.Len(t, logs.Find("fault names what does not exist"), 1, "no line for a fault whose target exists")

	// b-000002 joins: the fault's target exists now.
	targets.groups["billing"] = []string{"a-000001", "b-000002"}
	require.Nil(t, h.Warnings())
	require.Nil(t, fs.List()[0].Warnings)

	// It is expired, and goes on heartbeating as a zombie: the fault
	// matches its requests, and says nothing of the member it names.
	targets.groups["billing"] = []string{"a-000001"}
	require.Equal(t, want, h.Warnings())
	hb := &faultTarget{groups: []string{"billing"}, members: []string{"b-000002"}}
	require.Same(t, h, fs.claim(kmsg.Heartbeat, "c", hb))
	require.Nil(t, h.Warnings())
	require.Equal(t, FaultStatus{ID: h.ID(), Fault: h.Fault(), Hits: 1, Remaining: -1}, fs.List()[0])

	// Used up: nothing to warn of either.
	once, err := fs.Inject(Fault{Keys: []int16{12}, Group: "gone", Delay: 1, Count: 2})
	require.NoError(t, err)
	require.Equal(t, []string{`no group "gone" now`}, once.Warnings())
	h.Remove()
	for range 2 {
		require.Same(t, once, fs.claim(kmsg.Heartbeat, "c", &faultTarget{groups: []string{"gone"}}))
	}
	require.Zero(t, once.Remaining())
	require.Nil(t, once.Warnings())
	require.Nil(t, fs.List()[1].Warnings)
}
