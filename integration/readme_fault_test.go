package integration

// The README's two fencing sections, run as a reader runs them: "Fence a
// member on demand" (the admin API's expire call) and "Cut a member off
// with a fault" (a fault that drops one instance's heartbeats until it is
// a zombie whose commit is fenced), and the Go example of the second,
// which is a file make test runs.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/testutil"
)

// readmeTextBlocks returns the text blocks of one README section, in
// order: what its commands print.
func readmeTextBlocks(t *testing.T, section string) [][]string {
	t.Helper()
	var out [][]string
	for _, b := range readmeBlocks(t) {
		if b.section == section && b.lang == "text" {
			out = append(out, b.lines)
		}
	}
	require.NotEmpty(t, out, "README section %q shows no output", section)
	return out
}

// goRunArgs returns the arguments a README "go run ./examples/NAME ..."
// command gives the program, checking that it runs pkg.
func goRunArgs(t *testing.T, c readmeCommand, pkg string) []string {
	t.Helper()
	args := strings.Fields(c.text)
	require.GreaterOrEqual(t, len(args), 3, "README.md:%d", c.line)
	require.Equal(t, []string{"go", "run", "./" + pkg}, args[:3], "README.md:%d", c.line)
	return args[3:]
}

// readmeMemberID matches a member id of process-and-commit in the README.
var readmeMemberID = regexp.MustCompile(`process-and-commit-[0-9a-z]{8}-[0-9]{6}`)

// faultGroup is what GET /v1/groups/{group} says of members, their
// assignments and the committed offsets with their metadata.
type faultGroup struct {
	Generation int32 `json:"generation"`
	Members    []struct {
		MemberID   string `json:"member_id"`
		ClientID   string `json:"client_id"`
		Assignment []struct {
			Topic      string  `json:"topic"`
			Partitions []int32 `json:"partitions"`
		} `json:"assignment"`
	} `json:"members"`
	Committed []struct {
		Partition int32  `json:"partition"`
		Offset    int64  `json:"offset"`
		Metadata  string `json:"metadata"`
	} `json:"committed"`
}

// committedBy returns the group's committed offsets, and who committed
// each (kgo's commit metadata is its member id), by partition: "3 by
// <member id>".
func (g faultGroup) committedBy() map[int32]string {
	out := map[int32]string{}
	for _, c := range g.Committed {
		out[c.Partition] = fmt.Sprintf("%d by %s", c.Offset, c.Metadata)
	}
	return out
}

// fencingEvent is one fencing rejection GET /v1/events lists.
type fencingEvent struct {
	MemberID   string `json:"member_id"`
	API        string `json:"api"`
	Generation int32  `json:"generation"`
	Error      string `json:"error"`
}

// TestReadmeCutMemberOff runs "Cut a member off with a fault" with the
// programs the README runs and its curl calls, against the broker binary,
// from where the README's walk-through stands (eight records in orders,
// all committed): instances A and B of process-and-commit, A's member id
// read from the README's GET (the first member listed, partitions 0 and
// 2) and put in the README's POST, whose answer is the README's and warns
// of nothing. B takes every partition after A's session; the four records
// produced then are processed by both, A's commit is refused with
// ILLEGAL_GENERATION (A prints it, and the broker's fencing events list
// it), and the committed offsets that stay are B's: 3 on each partition,
// B's member id as their metadata. The GET and DELETE of the fault print
// the README's samples (the hits aside), and A then joins again as a new
// member, with the README's lines, while B's offsets stay.
func TestReadmeCutMemberOff(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	t.Parallel()
	const section = "Cut a member off with a fault"
	cmds := readmeSection(t, section)
	require.Len(t, cmds, 7, "A, B, the GET, the POST, produce, GET and DELETE /v1/faults")
	shown := readmeTextBlocks(t, section)
	require.Len(t, shown, 5, "the POST's answer, B's takeover, A's fenced commit, the fault's listing and removal, A's return")
	minibroker := testutil.BuildMain(t, "github.com/minibroker/minibroker/cmd/minibroker")
	pac := testutil.BuildMain(t, "github.com/minibroker/minibroker/examples/process-and-commit")
	produce := testutil.BuildMain(t, "github.com/minibroker/minibroker/examples/process-and-commit/produce")
	b := startWalkBroker(t, minibroker)
	broker := []string{"--broker", b.Kafka}
	group := func() faultGroup {
		var g faultGroup
		adminGetJSON(t, b.HTTP+"/v1/groups/process-and-commit", &g)
		return g
	}
	waitCommitted := func(want func(offset int64, by string) bool) {
		t.Helper()
		testutil.Eventually(t, 30*time.Second, func() string {
			g := group()
			ok := len(g.Committed) == 4
			for _, c := range g.Committed {
				ok = ok && want(c.Offset, c.Metadata)
			}
			if !ok {
				return fmt.Sprintf("committed %v", g.committedBy())
			}
			return ""
		})
	}

	// Where the walk-through stands: eight records, two per partition.
	out, code := runProgram(t, produce, nil, append(broker, "--count", "8")...)
	require.Zero(t, code, out)

	// A, then B: A gets every partition, then 0 and 2 beside B.
	a := startProgram(t, pac, nil, append(broker, goRunArgs(t, cmds[0], "examples/process-and-commit")...)...)
	a.waitLine(t, "assigned orders [0 1 2 3]", 1)
	bArgs := goRunArgs(t, cmds[1], "examples/process-and-commit")
	require.Empty(t, bArgs, "B runs with the defaults")
	bInst := startProgram(t, pac, nil, broker...)
	bInst.waitLine(t, "assigned orders [1 3]", 1)
	a.waitLine(t, "assigned orders [0 2]", 1)

	// The README's GET: A is the first member listed, with 0 and 2.
	got, _ := runCurl(t, cmds[2], b.HTTP)
	var listed faultGroup
	require.NoError(t, json.Unmarshal([]byte(got), &listed), got)
	require.Len(t, listed.Members, 2, got)
	aID, bID := listed.Members[0].MemberID, listed.Members[1].MemberID
	require.Less(t, listed.Members[0].ClientID, listed.Members[1].ClientID, "A started first: its client id sorts first")
	require.Equal(t, []int32{0, 2}, listed.Members[0].Assignment[0].Partitions, got)
	waitCommitted(func(offset int64, _ string) bool { return offset == 2 })

	// The README's POST, with A's member id where the README has its own.
	post := cmds[3]
	named := readmeMemberID.FindString(post.text)
	require.NotEmpty(t, named, post.text)
	post.text = strings.Replace(post.text, named, aID, 1)
	got, _ = runCurl(t, post, b.HTTP)
	require.Len(t, shown[0], 1)
	require.Equal(t, strings.Replace(shown[0][0], named, aID, 1), got, "the README's answer: no warnings, since A is the group's")

	// B takes every partition once the expiry step has removed A.
	bInst.waitInOrder(t, shown[1])
	g := group()
	require.Len(t, g.Members, 1)
	require.Equal(t, bID, g.Members[0].MemberID)
	require.Equal(t, []int32{0, 1, 2, 3}, g.Members[0].Assignment[0].Partitions)
	fencedGeneration := g.Generation

	// Four more records: both process them; A's commit is refused, and
	// the offsets that stay are B's.
	produceArgs := goRunArgs(t, cmds[4], "examples/process-and-commit/produce")
	out, code = runProgram(t, produce, nil, append(broker, produceArgs...)...)
	require.Zero(t, code, out)
	require.Equal(t, "0 2 late-0\n1 2 late-1\n2 2 late-2\n3 2 late-3\n", out)
	records, others := splitLines(shown[2], regexp.MustCompile(`^\d+ \d+ late-\d+$`))
	require.Equal(t, []string{"0 2 late-0", "2 2 late-2"}, records)
	require.Equal(t, []string{"commit after batch failed, nothing forgotten: " + kerr.IllegalGeneration.Error()}, others)
	for _, l := range records {
		a.waitLine(t, l, 1)
	}
	a.waitLine(t, others[0], 1)
	for _, l := range []string{"0 2 late-0", "1 2 late-1", "2 2 late-2", "3 2 late-3"} {
		bInst.waitLine(t, l, 1)
	}
	waitCommitted(func(offset int64, by string) bool { return offset == 3 && by == bID })
	byB := map[int32]string{0: "3 by " + bID, 1: "3 by " + bID, 2: "3 by " + bID, 3: "3 by " + bID}
	require.Equal(t, byB, group().committedBy())
	var events struct {
		Fencing []fencingEvent `json:"fencing"`
	}
	adminGetJSON(t, b.HTTP+"/v1/events", &events)
	i := slices.IndexFunc(events.Fencing, func(e fencingEvent) bool { return e.MemberID == aID && e.API == "OffsetCommit" })
	require.GreaterOrEqual(t, i, 0, "the broker lists A's refused commit: %+v", events.Fencing)
	require.Equal(t, "ILLEGAL_GENERATION", events.Fencing[i].Error)
	require.Less(t, events.Fencing[i].Generation, fencedGeneration, "A committed at the generation it knew")

	// The fault, listed with its hits, then removed.
	require.Len(t, shown[3], 2)
	// The hits, and when A expired, differ from run to run.
	varying := regexp.MustCompile(`"hits":\d+|"time":"[^"]+"|"time_ms":\d+`)
	mask := func(s string) string {
		return varying.ReplaceAllStringFunc(s, func(m string) string { k, _, _ := strings.Cut(m, ":"); return k + ":N" })
	}
	got, _ = runCurl(t, cmds[5], b.HTTP)
	require.Regexp(t, `"hits":[1-9]\d*,`, got, "A's heartbeats were dropped")
	require.Contains(t, got, fmt.Sprintf(`"member_gone":{"reason":"expiry","group":"process-and-commit","generation":%d,`, fencedGeneration), "A's lease ran out")
	require.Equal(t, mask(strings.Replace(shown[3][0], named, aID, 1)), mask(got))
	got, _ = runCurl(t, cmds[6], b.HTTP)
	require.Equal(t, shown[3][1], got)

	// A learns, and joins again as a new member beside B; B's offsets
	// stay.
	a.waitInOrder(t, shown[4])
	bInst.waitLine(t, "assigned orders [1 3]", 2)
	testutil.Eventually(t, 30*time.Second, func() string {
		g := group()
		var ids []string
		for _, m := range g.Members {
			ids = append(ids, m.MemberID)
		}
		if len(ids) != 2 || slices.Contains(ids, aID) || !slices.Contains(ids, bID) {
			return fmt.Sprintf("members %v, want B and A's new member", ids)
		}
		return ""
	})
	require.Equal(t, byB, group().committedBy(), "nothing A processed was committed")

	for _, p := range []*program{a, bInst} {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
		require.Zero(t, p.wait(t, 30*time.Second), p.out.String())
	}
}

// splitLines splits lines into those that match re and the others.
func splitLines(lines []string, re *regexp.Regexp) (matched, others []string) {
	for _, l := range lines {
		if re.MatchString(l) {
			matched = append(matched, l)
		} else {
			others = append(others, l)
		}
	}
	return matched, others
}

// TestReadmeFaultExampleIsTheTestedFile: the Go example of "Cut a member
// off with a fault" is examples/embedded/zombie_test.go, whole.
func TestReadmeFaultExampleIsTheTestedFile(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	file, err := os.ReadFile(filepath.Join(repoRoot, "examples/embedded/zombie_test.go"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "## Cut a member off with a fault")
	require.True(t, ok)
	_, block, ok := strings.Cut(section, "```go\n")
	require.True(t, ok)
	block, _, ok = strings.Cut(block, "```\n")
	require.True(t, ok)
	require.Equal(t, string(file), block)
}

// TestReadmeFenceOnDemand runs "Fence a member on demand": a kgo
// consumer in group process-and-commit, the README's GET of the group,
// then its expire call with the member id the GET showed. The answer has
// the README's shape, and the consumer loses its partitions.
func TestReadmeFenceOnDemand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel()
	cmds := readmeSection(t, "Fence a member on demand")
	require.Len(t, cmds, 3)
	b := startAdminBinary(t, "--topic", "orders:4")

	lost := make(chan struct{}, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Kafka), kgo.ConsumerGroup("process-and-commit"), kgo.ConsumeTopics("orders"),
		kgo.HeartbeatInterval(100*time.Millisecond),
		kgo.OnPartitionsLost(func(context.Context, *kgo.Client, map[string][]int32) {
			select {
			case lost <- struct{}{}:
			default:
			}
		}))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	go func() {
		for !cl.PollFetches(t.Context()).IsClientClosed() && t.Context().Err() == nil {
		}
	}()

	var group struct {
		Generation int32 `json:"generation"`
		Members    []struct {
			MemberID string `json:"member_id"`
		} `json:"members"`
	}
	deadline := time.Now().Add(waitTimeout)
	for len(group.Members) == 0 {
		require.True(t, time.Now().Before(deadline), "the consumer never joined")
		if out, _ := runCurl(t, cmds[0], b.HTTP); strings.HasPrefix(out, "{") {
			require.NoError(t, json.Unmarshal([]byte(out), &group), out)
		}
		time.Sleep(20 * time.Millisecond) // poll, bounded by the deadline above
	}
	member := group.Members[0].MemberID

	named := regexp.MustCompile(`/members/(process-and-commit-[0-9a-z]{8}-[0-9]{6})/expire`).FindStringSubmatch(cmds[2].text)
	require.NotNil(t, named, cmds[2].text)
	expire := cmds[2]
	expire.text = strings.Replace(expire.text, named[1], member, 1)
	got, _ := runCurl(t, expire, b.HTTP)
	require.Equal(t, fmt.Sprintf(`{"group":"process-and-commit","member":%q,"generation":%d}`, member, group.Generation+1), got)
	select {
	case <-lost:
	case <-time.After(waitTimeout):
		t.Fatal("the consumer never learned it was fenced")
	}
}
