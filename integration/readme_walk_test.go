package integration

// The README's walk-through, run as a reader runs it, against one broker
// binary with make run's topics: every transcript it shows is compared
// with what the programs print, then minicompare --broker and every lab
// with --broker run twice against the same broker, and must pass without
// touching what the walk-through made.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/testutil"
)

// readmeBlock is one fenced block of README.md.
type readmeBlock struct {
	line    int // the README line of its opening fence
	section string
	lang    string // "sh", "text", "go", ...
	lines   []string
}

// readmeBlocks returns README.md's fenced blocks, in order.
func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	var (
		out     []readmeBlock
		cur     *readmeBlock
		section string
	)
	for n, l := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(l, "```") && cur == nil:
			cur = &readmeBlock{line: n + 1, section: section, lang: strings.TrimPrefix(l, "```")}
		case strings.HasPrefix(l, "```"):
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, l)
		case strings.HasPrefix(l, "#"):
			section = strings.TrimSpace(strings.TrimLeft(l, "#"))
		}
	}
	require.Nil(t, cur, "README.md ends inside a fenced block")
	return out
}

// readmeTranscript returns the text block that follows the sh block whose
// first command (its trailing comment aside) is command: what the README
// says the command prints.
func readmeTranscript(t *testing.T, command string) readmeBlock {
	t.Helper()
	blocks := readmeBlocks(t)
	trailing := regexp.MustCompile(`\s{2,}#.*$`)
	for i, b := range blocks {
		if b.lang == "sh" && len(b.lines) > 0 && trailing.ReplaceAllString(b.lines[0], "") == command {
			require.Less(t, i+1, len(blocks), "README.md:%d: no transcript after %q", b.line, command)
			require.Equal(t, "text", blocks[i+1].lang, "README.md:%d: the block after %q", blocks[i+1].line, command)
			return blocks[i+1]
		}
	}
	t.Fatalf("README.md has no sh block starting with %q", command)
	return readmeBlock{}
}

// readmeTextAfter returns the first text block after the README line that
// contains marker.
func readmeTextAfter(t *testing.T, marker string) readmeBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	i := strings.Index(string(data), marker)
	require.GreaterOrEqual(t, i, 0, "README.md lacks %q", marker)
	line := strings.Count(string(data[:i]), "\n") + 1
	for _, b := range readmeBlocks(t) {
		if b.line > line && b.lang == "text" {
			return b
		}
	}
	t.Fatalf("no text block after %q", marker)
	return readmeBlock{}
}

// instanceID matches the part of a client id (and so of a member id) that
// is an example's instance: its start time in base 36.
var instanceID = regexp.MustCompile(`\b(hello-group|process-and-commit|quiet-members|exactly-once)-[0-9a-z]{8}\b`)

// sameInstances replaces every instance id with ID, so that a transcript
// from another run compares equal.
func sameInstances(s string) string { return instanceID.ReplaceAllString(s, "$1-ID") }

// walkBroker is "make run" for the walk-through: the minibroker binary on
// ports the kernel picks, make run's topics, its log kept whole.
type walkBroker struct {
	Kafka, HTTP, DataDir string
	log                  *testutil.Buffer
	cmd                  *exec.Cmd
}

func startWalkBroker(t *testing.T, bin string) *walkBroker {
	t.Helper()
	b := &walkBroker{DataDir: filepath.Join(t.TempDir(), "minibroker-data"), log: &testutil.Buffer{}}
	b.cmd = exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--data-dir", b.DataDir,
		"--topic", "orders:4", "--topic", "payments:1")
	b.cmd.Stderr = b.log
	require.NoError(t, b.cmd.Start())
	t.Cleanup(func() {
		b.cmd.Process.Signal(syscall.SIGINT)
		b.cmd.Wait()
		if t.Failed() {
			t.Logf("broker log:\n%s", b.log)
		}
	})
	addr := regexp.MustCompile(`msg="(admin|minibroker) ready" addr=(\S+)`)
	testutil.Eventually(t, waitTimeout, func() string {
		for _, m := range addr.FindAllStringSubmatch(b.log.String(), -1) {
			if m[1] == "admin" {
				b.HTTP = "http://" + m[2]
			} else {
				b.Kafka = m[2]
			}
		}
		return testutil.Holds(func() bool { return b.Kafka != "" && b.HTTP != "" }, "the broker is not ready")()
	})
	return b
}

// program is one run of an example or tool, its stdout and stderr in one
// buffer in the order written, as a terminal shows them.
type program struct {
	cmd *exec.Cmd
	out *testutil.Buffer
}

func startProgram(t *testing.T, bin string, env []string, args ...string) *program {
	t.Helper()
	p := &program{cmd: exec.Command(bin, args...), out: &testutil.Buffer{}}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	require.NoError(t, p.cmd.Start())
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

// wait waits for the program to exit and returns its exit code.
func (p *program) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		t.Fatalf("%s did not exit within %v; it printed:\n%s", p.cmd.Path, timeout, p.out)
		return -1
	}
}

// lines returns what the program printed so far, line by line.
func (p *program) lines() []string {
	return strings.Split(strings.TrimSuffix(p.out.String(), "\n"), "\n")
}

// waitLine waits until the program has printed a line equal to want (with
// instance ids as ID) at least n times.
func (p *program) waitLine(t *testing.T, want string, n int) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() string {
		count := 0
		for _, l := range p.lines() {
			if sameInstances(l) == want {
				count++
			}
		}
		if count >= n {
			return ""
		}
		return fmt.Sprintf("%q printed %d times of %d; output:\n%s", want, count, n, p.out)
	})
}

// runProgram runs a program to its end and returns its output and exit
// code.
func runProgram(t *testing.T, bin string, env []string, args ...string) (string, int) {
	t.Helper()
	p := startProgram(t, bin, env, args...)
	code := p.wait(t, 90*time.Second)
	return p.out.String(), code
}

// waitInOrder waits until want's lines have appeared in what the program
// printed, in order (others may come between).
func (p *program) waitInOrder(t *testing.T, want []string) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() string {
		i := 0
		for _, l := range p.lines() {
			if i < len(want) && sameInstances(l) == sameInstances(want[i]) {
				i++
			}
		}
		if i == len(want) {
			return ""
		}
		return fmt.Sprintf("%q and the rest, in order, not in:\n%s", want[i], p.out)
	})
}

// inOrder requires that want's lines appear in got's, in order (others
// may come between).
func inOrder(t *testing.T, want, got []string, msg string) {
	t.Helper()
	i := 0
	for _, l := range got {
		if i < len(want) && sameInstances(l) == sameInstances(want[i]) {
			i++
		}
	}
	require.Equal(t, len(want), i, "%s: %q and the rest, in order, in:\n%s", msg, want[min(i, len(want)-1)], strings.Join(got, "\n"))
}

// walkGroup is what GET /v1/groups/{group} says of one group.
type walkGroup struct {
	State      string `json:"state"`
	Generation int32  `json:"generation"`
	Members    []struct {
		MemberID string `json:"member_id"`
		ClientID string `json:"client_id"`
	} `json:"members"`
	Committed []struct {
		Partition int32 `json:"partition"`
		Offset    int64 `json:"offset"`
	} `json:"committed"`
	Partitions []struct {
		Partition      int32 `json:"partition"`
		FetchPositions []struct {
			MemberID     string `json:"member_id"`
			Unattributed string `json:"unattributed"`
			ClientID     string `json:"client_id"`
			Offset       int64  `json:"offset"`
		} `json:"fetch_positions"`
	} `json:"partitions"`
}

func (b *walkBroker) group(t *testing.T, name string) walkGroup {
	t.Helper()
	var g walkGroup
	adminGetJSON(t, b.HTTP+"/v1/groups/"+name, &g)
	return g
}

// committed returns the group's committed offsets by partition.
func (g walkGroup) committed() map[int32]int64 {
	out := map[int32]int64{}
	for _, c := range g.Committed {
		out[c.Partition] = c.Offset
	}
	return out
}

// requireAttributed: every fetch position the group shows is tied to one
// of its members, none unattributed, and member's are at the offsets in
// at, for exactly those partitions.
func (g walkGroup) requireAttributed(t *testing.T, member string, at map[int32]int64) {
	t.Helper()
	var members []string
	for _, m := range g.Members {
		members = append(members, m.MemberID)
	}
	seen := map[int32]int64{}
	for _, p := range g.Partitions {
		for _, f := range p.FetchPositions {
			require.Empty(t, f.Unattributed, "partition %d: %+v", p.Partition, f)
			require.Contains(t, members, f.MemberID, "partition %d: %+v", p.Partition, f)
			if f.MemberID == member {
				seen[p.Partition] = f.Offset
			}
		}
	}
	require.Equal(t, at, seen, "%s's fetch positions, as the page shows them", member)
}

// TestReadmeWalkThrough runs the README from "A group forms" to "Other
// clients" against one broker, as a reader would (but "Cut a member off
// with a fault", whose records would change the offsets "The committed
// offsets" shows: TestReadmeCutMemberOff runs it from the same point on a
// broker of its own), with every program the README runs built once: each transcript the README shows is what the
// program prints (instance ids aside), each exit status the one it says,
// and the page (GET /v1/groups) ties the demo's fetch positions to its
// members. Then the tools the README runs against the same broker,
// minicompare --broker and every lab with --broker, run twice each and
// pass, and the walk-through's groups, offsets and records are as they
// were.
func TestReadmeWalkThrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	t.Parallel()
	minibroker := testutil.BuildMain(t, "github.com/minibroker/minibroker/cmd/minibroker")
	hello := testutil.BuildMain(t, "github.com/minibroker/minibroker/examples/hello-group")
	produce := testutil.BuildMain(t, "github.com/minibroker/minibroker/examples/process-and-commit/produce")
	pac := testutil.BuildMain(t, "github.com/minibroker/minibroker/examples/process-and-commit")
	minicompare := testutil.BuildMain(t, "github.com/minibroker/minibroker/cmd/minicompare")
	b := startWalkBroker(t, minibroker)
	broker := []string{"--broker", b.Kafka}

	// A group forms.
	out, code := runProgram(t, hello, nil, broker...)
	require.Zero(t, code, out)
	require.Equal(t, sameInstances(strings.Join(readmeTranscript(t, "go run ./examples/hello-group").lines, "\n")+"\n"), sameInstances(out))

	// Records, commits and a replay: eight records, shown up to "...".
	out, code = runProgram(t, produce, nil, append(broker, "--count", "8")...)
	require.Zero(t, code, out)
	shown := readmeTranscript(t, "go run ./examples/process-and-commit/produce --count 8").lines
	require.Equal(t, "...", shown[len(shown)-1])
	printed := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, printed, 8)
	require.Equal(t, shown[:len(shown)-1], printed[:len(shown)-1])

	// The crash: the README's lines, then go run's report of exit status 3.
	// kgo takes the partitions in no fixed order, so which five records
	// come first varies: each partition's from its start, in order.
	out, code = runProgram(t, pac, nil, append(broker, "--crash-after", "5")...)
	require.Equal(t, 3, code, out)
	shown = readmeTranscript(t, "go run ./examples/process-and-commit --crash-after 5").lines
	require.Equal(t, "exit status 3", shown[len(shown)-1], "go run reports the exit status")
	shownRecords, shownOthers := splitRecords(t, shown[:len(shown)-1])
	gotRecords, gotOthers := splitRecords(t, strings.Split(strings.TrimSpace(out), "\n"))
	require.Equal(t, shownOthers, gotOthers)
	require.Len(t, gotRecords, len(shownRecords))
	requireFromStart(t, shownRecords)
	requireFromStart(t, gotRecords)

	// The second instance joins beside the crashed one, takes 1 and 3,
	// and, once the expiry step has removed the crashed member, all four.
	live := startProgram(t, pac, nil, broker...)
	live.waitLine(t, "assigned orders [1 3]", 1)
	testutil.Eventually(t, 30*time.Second, func() string {
		g := b.group(t, "process-and-commit")
		if c := g.committed(); c[1] != 2 || c[3] != 2 {
			return fmt.Sprintf("committed %v", c)
		}
		return ""
	})
	g := b.group(t, "process-and-commit")
	require.Len(t, g.Members, 2, "the crashed member is still there")
	var liveID string
	for _, m := range g.Members {
		if strings.HasPrefix(sameInstances(m.ClientID), "process-and-commit-ID") && m.MemberID > liveID {
			liveID = m.MemberID // the later instance sorts last
		}
	}
	// The page ties the live instance's positions to it (its client id is
	// its own); the crashed instance's connections are gone with it.
	g.requireAttributed(t, liveID, map[int32]int64{1: 2, 3: 2})

	shown = readmeTranscript(t, "go run ./examples/process-and-commit").lines
	live.waitLine(t, "assigned orders [0 1 2 3]", 1)
	testutil.Eventually(t, 30*time.Second, func() string {
		if c := b.group(t, "process-and-commit").committed(); len(c) != 4 || c[0] != 2 || c[2] != 2 {
			return fmt.Sprintf("committed %v", c)
		}
		return ""
	})
	g = b.group(t, "process-and-commit")
	g.requireAttributed(t, liveID, map[int32]int64{0: 2, 1: 2, 2: 2, 3: 2})
	// The same records, each partition's in order, and the same story
	// around them; the batches may differ, what they commit does not.
	var story, commits []string
	shownRecords, shownOthers = splitRecords(t, shown)
	for _, l := range shownOthers {
		if after, ok := strings.CutPrefix(l, "committed after batch: "); ok {
			commits = append(commits, strings.Fields(after)...)
		} else {
			story = append(story, l)
		}
	}
	gotRecords, gotOthers = splitRecords(t, live.lines())
	inOrder(t, story, gotOthers, "the second instance's story")
	slices.Sort(shownRecords)
	requireInOrderPerPartition(t, gotRecords)
	slices.Sort(gotRecords)
	require.Equal(t, shownRecords, gotRecords)
	var committedLines []string
	for _, l := range live.lines() {
		if after, ok := strings.CutPrefix(l, "committed after batch: "); ok {
			committedLines = append(committedLines, strings.Fields(after)...)
		}
	}
	slices.Sort(commits)
	slices.Sort(committedLines)
	require.Equal(t, commits, committedLines, "the batches may differ; what they commit does not")

	// Ctrl-C: it commits what it processed and leaves.
	require.NoError(t, live.cmd.Process.Signal(syscall.SIGINT))
	require.Zero(t, live.wait(t, 30*time.Second), live.out.String())

	// Fence a member on demand: a third instance, expired by the README's
	// curl call with the member id the GET showed.
	fenced := startProgram(t, pac, nil, broker...)
	fenced.waitLine(t, "assigned orders [0 1 2 3]", 1)
	cmds := readmeSection(t, "Fence a member on demand")
	got, _ := runCurl(t, cmds[0], b.HTTP)
	var listed walkGroup
	require.NoError(t, json.Unmarshal([]byte(got), &listed), got)
	require.Len(t, listed.Members, 1)
	member := listed.Members[0].MemberID
	shownExpire := readmeTextAfter(t, "/members/process-and-commit-").lines
	require.Len(t, shownExpire, 1)
	named := regexp.MustCompile(`process-and-commit-[0-9a-z]{8}-[0-9]{6}`).FindString(cmds[2].text)
	require.NotEmpty(t, named, cmds[2].text)
	require.Equal(t, sameInstances(named), sameInstances(member), "the README's member id is the one this walk-through gives")
	expire := cmds[2]
	expire.text = strings.Replace(expire.text, named, member, 1)
	got, _ = runCurl(t, expire, b.HTTP)
	require.Equal(t, sameInstances(shownExpire[0]), sameInstances(got))
	fenced.waitInOrder(t, readmeTextAfter(t, "The instance prints what the chapter predicts").lines)
	require.NoError(t, fenced.cmd.Process.Signal(syscall.SIGINT))
	require.Zero(t, fenced.wait(t, 30*time.Second), fenced.out.String())

	// The committed offsets, read from the data dir while the broker runs.
	offsets := func() string {
		out, code := runProgram(t, minibroker, nil, "offsets", "--data-dir", b.DataDir, "--group", "process-and-commit")
		require.Zero(t, code, out)
		return out
	}
	before := offsets()
	require.Equal(t, sameInstances(strings.Join(readmeTranscript(t, "./bin/minibroker offsets").lines, "\n")+"\n"), sameInstances(before))

	// Other clients: the kcat demo, as the README shows it.
	out, code = runProgram(t, "bash", []string{"BROKER=" + b.Kafka}, filepath.Join(repoRoot, "examples/kcat/demo.sh"))
	require.Zero(t, code, out)
	require.Equal(t, strings.Join(readmeTranscript(t, "examples/kcat/demo.sh").lines, "\n")+"\n", out)

	// The tools against the same broker, twice: in each round the labs at
	// once, then minicompare.
	var brokerLabs []string
	for _, l := range labNames(t, minibroker) {
		if l != "expiry" { // no --broker form
			brokerLabs = append(brokerLabs, l)
		}
	}
	for round := range 2 {
		var wg sync.WaitGroup
		results := make([]struct {
			out  string
			code int
		}, len(brokerLabs)+1)
		for i, name := range brokerLabs {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
				defer cancel()
				args := []string{"lab", name, "--broker", b.Kafka}
				if name == "partition" { // its fault goes through the admin API
					args = append(args, "--admin", strings.TrimPrefix(b.HTTP, "http://"))
				}
				o, err := exec.CommandContext(ctx, minibroker, args...).CombinedOutput()
				results[i].out, results[i].code = string(o), exitCode(err)
			})
		}
		wg.Wait()
		// The comparison after the labs: its scenarios time short sessions.
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		o, err := exec.CommandContext(ctx, minicompare, "--broker", b.Kafka).CombinedOutput()
		cancel()
		results[len(brokerLabs)].out, results[len(brokerLabs)].code = string(o), exitCode(err)
		for i, r := range results {
			what := "minicompare"
			if i < len(brokerLabs) {
				what = "lab " + brokerLabs[i]
			}
			require.Zero(t, r.code, "round %d, %s:\n%s", round+1, what, r.out)
			require.Regexp(t, `(stay on the broker \(every run of lab shares them\).*|deleted topics .+ of run [0-9a-z]+\.)\n$`, r.out, what)
		}
	}

	// What the walk-through made is as it was: its groups alone, the same
	// offsets, nobody else's commits on orders.
	var all struct {
		Groups []struct {
			Group string `json:"group"`
		} `json:"groups"`
	}
	adminGetJSON(t, b.HTTP+"/v1/groups", &all)
	var groups []string
	for _, g := range all.Groups {
		groups = append(groups, g.Group)
	}
	slices.Sort(groups)
	require.Equal(t, []string{"hello", "kcat-demo", "process-and-commit"}, groups, "the tools deleted their groups")
	require.Equal(t, before, offsets())
}

// recordLine is a record as process-and-commit prints it: partition,
// offset, value.
var recordLine = regexp.MustCompile(`^(\d+) (\d+) record-(\d+)$`)

// splitRecords splits a transcript into its record lines and the others.
func splitRecords(t *testing.T, lines []string) (records, others []string) {
	t.Helper()
	for _, l := range lines {
		if recordLine.MatchString(l) {
			records = append(records, l)
		} else {
			others = append(others, l)
		}
	}
	return records, others
}

// requireInOrderPerPartition: produce's records (record-N at partition
// N mod 4, offset N/4), each partition's in offset order.
func requireInOrderPerPartition(t *testing.T, records []string) {
	t.Helper()
	next := map[int]int{}
	for _, l := range records {
		m := recordLine.FindStringSubmatch(l)
		var p, o, n int
		fmt.Sscan(m[1], &p)
		fmt.Sscan(m[2], &o)
		fmt.Sscan(m[3], &n)
		require.Equal(t, n, 4*o+p, "%q is produce's record", l)
		require.GreaterOrEqual(t, o, next[p], "%q comes in offset order", l)
		next[p] = o + 1
	}
}

// requireFromStart: requireInOrderPerPartition, each partition read from
// offset 0 without a gap (nothing was committed).
func requireFromStart(t *testing.T, records []string) {
	t.Helper()
	requireInOrderPerPartition(t, records)
	next := map[string]int{}
	for _, l := range records {
		m := recordLine.FindStringSubmatch(l)
		var o int
		fmt.Sscan(m[2], &o)
		require.Equal(t, next[m[1]], o, "%q: partition %s from its start", l, m[1])
		next[m[1]]++
	}
}

// exitCode is the exit status err reports, 0 for none.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if e, ok := err.(*exec.ExitError); ok {
		return e.ExitCode()
	}
	return -1
}
