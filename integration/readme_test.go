package integration

// The README's commands, checked. Every line of its sh blocks must be a
// command that something in make test exercises: a Makefile target or
// variable, an example with its own test and the flags the README gives
// it, a minibroker subcommand and its flags, a script with its test, or a
// curl call that these tests run against the real binary, comparing what
// it prints with the sample the README shows.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// repoRoot is the repository's root, seen from this package's directory.
const repoRoot = ".."

// readmeCommand is one command of a README sh block: continuation lines
// joined, the trailing comment (two spaces or more, then #) split off.
type readmeCommand struct {
	line    int    // the README line it starts on
	section string // the heading above it
	text    string
	comment string
}

// readmeCommands returns every command in README.md's sh blocks, in order.
func readmeCommands(t *testing.T) []readmeCommand {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	defer f.Close()
	var (
		out     []readmeCommand
		inSh    bool
		fenced  bool
		section string
		pending *readmeCommand
	)
	trailing := regexp.MustCompile(`\s{2,}#\s?`)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "```"):
			if fenced {
				fenced, inSh = false, false
			} else {
				fenced, inSh = true, l == "```sh"
			}
			continue
		case !fenced && strings.HasPrefix(l, "#"):
			section = strings.TrimSpace(strings.TrimLeft(l, "#"))
			continue
		case !inSh:
			continue
		}
		if pending != nil {
			pending.text += " " + strings.TrimSpace(strings.TrimSuffix(l, "\\"))
		} else {
			if s := strings.TrimSpace(l); s == "" || strings.HasPrefix(s, "#") {
				continue
			}
			text, comment := l, ""
			if loc := trailing.FindStringIndex(l); loc != nil {
				text, comment = l[:loc[0]], strings.TrimSpace(l[loc[1]:])
			}
			pending = &readmeCommand{line: n, section: section, text: strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(text), "\\")), comment: comment}
		}
		if !strings.HasSuffix(l, "\\") {
			out = append(out, *pending)
			pending = nil
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out, "README.md has sh blocks")
	return out
}

// makefile returns the Makefile's targets and variables.
func makefile(t *testing.T) (targets, vars map[string]bool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	require.NoError(t, err)
	targets, vars = map[string]bool{}, map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z][a-z-]*):`).FindAllStringSubmatch(string(data), -1) {
		targets[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z_]+)\s*\?=`).FindAllStringSubmatch(string(data), -1) {
		vars[m[1]] = true
	}
	return targets, vars
}

// goFlags returns the flags a Go main package defines with the flag
// package (flag.String, or a FlagSet's).
func goFlags(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, dir, "main.go"))
	require.NoError(t, err)
	var flags []string
	for _, m := range regexp.MustCompile(`\.(?:String|Int|Int64|Uint|Bool|Duration|Float64)\("([a-z-]+)"`).FindAllStringSubmatch(string(data), -1) {
		flags = append(flags, m[1])
	}
	return flags
}

// commandFlags returns the --flags of args.
func commandFlags(args []string) []string {
	var flags []string
	for _, a := range args {
		if name, ok := strings.CutPrefix(a, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			flags = append(flags, name)
		}
	}
	return flags
}

// minibrokerHelp returns the flags "minibroker SUB -h" lists, or names
// in its usage line.
func minibrokerHelp(t *testing.T, bin string, sub ...string) []string {
	t.Helper()
	out, _ := exec.Command(bin, append(sub, "-h")...).CombinedOutput() // -h exits 0 or 2
	// The flag list, or else the usage line's [--flag ARG]s.
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z-]+)|\[--([a-z-]+)`).FindAllStringSubmatch(string(out), -1) {
		flags = append(flags, m[1]+m[2])
	}
	require.NotEmpty(t, flags, "minibroker %v -h:\n%s", sub, out)
	return flags
}

// labs are the names "minibroker lab" accepts.
var labs = []string{"rebalance", "fencing", "expiry", "rebalance-848", "fencing-848", "replay", "zombie", "exactly-once", "partition", "identity"}

// TestReadmeCommandsAreExercised: every README command is one that make
// test exercises, with names and flags that exist.
func TestReadmeCommandsAreExercised(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	t.Parallel()
	bin := testutil.BuildMain(t, "github.com/minibroker/minibroker/cmd/minibroker")
	targets, vars := makefile(t)
	serveFlags := minibrokerHelp(t, bin, "serve")
	for _, c := range readmeCommands(t) {
		where := fmt.Sprintf("README.md:%d %q", c.line, c.text)
		args := strings.Fields(c.text)
		switch {
		case args[0] == "make":
			require.True(t, targets[args[1]], "%s: no make target %s", where, args[1])
			for _, a := range args[2:] {
				name, _, ok := strings.Cut(a, "=")
				require.True(t, ok && vars[name], "%s: no Makefile variable %s", where, a)
			}
		case args[0] == "go" && args[1] == "run":
			dir := strings.TrimPrefix(args[2], "./")
			require.FileExists(t, filepath.Join(repoRoot, dir, "main_test.go"), "%s: %s has no test", where, dir)
			for _, f := range commandFlags(args[3:]) {
				require.Contains(t, goFlags(t, dir), f, "%s: %s has no flag --%s", where, dir, f)
			}
		case args[0] == "./bin/minibroker":
			switch args[1] {
			case "serve":
				for _, f := range commandFlags(args[2:]) {
					require.Contains(t, serveFlags, f, "%s: serve has no flag --%s", where, f)
				}
			case "lab":
				require.Contains(t, labs, args[2], "%s: no such lab", where)
				for _, f := range commandFlags(args[3:]) {
					require.Contains(t, minibrokerHelp(t, bin, "lab", "rebalance"), f, "%s", where)
				}
			case "offsets":
				for _, f := range commandFlags(args[2:]) {
					require.Contains(t, minibrokerHelp(t, bin, "offsets"), f, "%s", where)
				}
			default:
				t.Errorf("%s: minibroker has no subcommand %s", where, args[1])
			}
		case args[0] == "./bin/minicompare":
			require.Subset(t, goFlags(t, "cmd/minicompare"), commandFlags(args[1:]), where)
		case args[0] == "examples/kcat/demo.sh":
			require.FileExists(t, filepath.Join(repoRoot, "examples/kcat/demo_test.go"), where)
		case args[0] == "curl":
			require.Regexp(t, `^curl -s( -H "\$J" -X(POST|DELETE))? 127\.0\.0\.1:964[45]/(v1/|metrics)`, c.text, where)
		case strings.HasPrefix(c.text, "J='Content-Type: application/json'"):
		default:
			t.Errorf("%s: nothing in make test exercises this command", where)
		}
	}

	// The lab list in the README is the one the binary has.
	out, _ := exec.Command(bin, "lab").CombinedOutput()
	require.Contains(t, string(out), strings.Join(labs, "|"))
}

// TestReadmeServeFlagsTable: the README's table of serve flags lists
// exactly the flags "minibroker serve -h" prints.
func TestReadmeServeFlagsTable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	t.Parallel()
	bin := testutil.BuildMain(t, "github.com/minibroker/minibroker/cmd/minibroker")
	data, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(data), "## `minibroker serve` flags")
	require.True(t, ok)
	table, _, _ = strings.Cut(table, "\n## ")
	var documented []string
	flagName := regexp.MustCompile("`--([a-z-]+)")
	for _, row := range strings.Split(table, "\n") {
		if cells := strings.Split(row, "|"); len(cells) > 2 {
			for _, m := range flagName.FindAllStringSubmatch(cells[1], -1) {
				documented = append(documented, m[1])
			}
		}
	}
	have := minibrokerHelp(t, bin, "serve")
	slices.Sort(documented)
	slices.Sort(have)
	require.Equal(t, have, documented)
}

// readmeSection returns the commands of one README section.
func readmeSection(t *testing.T, section string) []readmeCommand {
	t.Helper()
	var out []readmeCommand
	for _, c := range readmeCommands(t) {
		if c.section == section {
			out = append(out, c)
		}
	}
	require.NotEmpty(t, out, "README section %q", section)
	return out
}

// readmeAdmin matches the admin address a README curl command names.
var readmeAdmin = regexp.MustCompile(`127\.0\.0\.1:\d+`)

// runCurl runs a README curl command through sh, with the admin address
// it names replaced by addr and J set as the README sets it. It returns
// what the command printed and the address the README named.
func runCurl(t *testing.T, c readmeCommand, addr string) (out, named string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	named = readmeAdmin.FindString(c.text)
	require.NotEmpty(t, named, "README.md:%d names no admin address", c.line)
	line := strings.ReplaceAll(c.text, named, strings.TrimPrefix(addr, "http://"))
	stdout, err := exec.CommandContext(ctx, "sh", "-c", "J='Content-Type: application/json'; "+line).Output()
	require.NoError(t, err, "README.md:%d: %s", c.line, line)
	return strings.TrimSpace(string(stdout)), named
}

// TestReadmeManualClockExercise runs "Exercise 3 by hand" as written:
// the serve line (on ports the kernel picks), the quiet-members example,
// and the four curl calls, each printing the README's sample.
func TestReadmeManualClockExercise(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	t.Parallel()
	cmds := readmeSection(t, "Exercise 3 by hand, on a manual clock")
	require.True(t, strings.HasPrefix(cmds[0].text, "./bin/minibroker serve "), cmds[0].text)
	var args []string
	var adminFlag string // the serve line's --admin
	serve := strings.Fields(cmds[0].text)[2:]
	for i := 0; i < len(serve); i++ {
		switch serve[i] {
		case "--listen", "--admin", "--data-dir": // startAdminBinary picks its own
			if serve[i] == "--admin" {
				adminFlag = serve[i+1]
			}
			i++
		default:
			args = append(args, serve[i])
		}
	}
	require.Equal(t, []string{"--clock", "manual", "--topic", "orders:4"}, args)
	b := startAdminBinary(t, args...)

	quiet := strings.Fields(cmds[1].text)
	require.Equal(t, []string{"go", "run", "./examples/quiet-members", "--broker", "127.0.0.1:9093"}, quiet)
	members := exec.Command(testutil.BuildMain(t, "github.com/minibroker/minibroker/examples/quiet-members"), "--broker", b.Kafka)
	stdout, err := members.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, members.Start())
	t.Cleanup(func() {
		members.Process.Signal(syscall.SIGINT)
		members.Wait()
	})
	lines := bufio.NewScanner(stdout)
	var printed []string
	for lines.Scan() && lines.Text() != "quiet until Ctrl-C" {
		printed = append(printed, lines.Text())
	}
	require.Equal(t, []string{"member quiet-000001 generation 1 session 100ms", "member quiet-000002 generation 2 session 100ms"}, printed)
	require.True(t, strings.HasPrefix(cmds[1].comment, "member quiet-000001 generation 1 "), "the README's sample: %s", cmds[1].comment)

	calls := cmds[2:]
	require.Len(t, calls, 5, "J=, then four curl calls")
	for _, c := range calls[1:] {
		out, named := runCurl(t, c, b.HTTP)
		require.Equal(t, adminFlag, named, "README.md:%d calls the broker the serve line starts", c.line)
		require.Equal(t, c.comment, out, "README.md:%d", c.line)
	}
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

// TestReadmeMakeRun runs "make run" as a terminal would, on ports the
// kernel picks and its own directories, and stops it with Ctrl-C (SIGINT
// to the whole process group): the broker stops cleanly and make reports
// no error. A broker that exits non-zero on SIGINT shows as make's
// "*** [Makefile:N: run] Error 1", whatever else make does.
//
// GNU make has a race of its own here: when the broker exits on the
// SIGINT before make's handler for it runs, make's main loop may have
// reaped the broker (wait returned its pid) when the handler interrupts
// it and waits again for a child make still counts (commands.c
// fatal_error_signal, job.c reap_children): that wait fails with ECHILD,
// make says "*** wait: No child processes.  Stop." (with, at times,
// "*** Waiting for unfinished jobs...." and the same line again from its
// exit path) and exits 2, and the broker's exit status is lost with the
// interrupted frame. A loaded
// machine makes it likely (make is scheduled after the broker has
// exited). Such a run tells nothing of the broker's status, so it is run
// again; every run must still show the broker's clean stop.
func TestReadmeMakeRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel()
	dir := t.TempDir()
	const attempts = 5
	for attempt := 1; ; attempt++ {
		log, ws := readmeMakeRunOnce(t, filepath.Join(dir, "bin"), filepath.Join(dir, fmt.Sprintf("data-%d", attempt)))
		require.Contains(t, log, `msg="minibroker stopped"`, "the broker stops cleanly:\n%s", log)
		raced := ws.Exited() && ws.ExitStatus() == 2 && makeWaitRace(makeErrors(log))
		if raced && attempt < attempts {
			t.Logf("run %d: make lost the broker's exit status to its own SIGINT race; again", attempt)
			continue
		}
		require.False(t, raced, "make lost the broker's exit status to its own SIGINT race %d times in a row:\n%s", attempts, log)
		require.Empty(t, makeErrors(log), "make reports no error:\n%s", log)
		if !ws.Exited() || ws.ExitStatus() != 0 { // make itself was interrupted too, as in a terminal (the shell says 130)
			require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGINT, "make: %v\n%s", ws, log)
		}
		return
	}
}

// makeWaitRace reports whether make's error lines are those of its SIGINT
// race alone: the failed wait, and, when make's exit path (main.c die)
// waits for the child it still counts, "Waiting for unfinished jobs" and
// the same failed wait again.
func makeWaitRace(errs []string) bool {
	const failed, waiting = "*** wait: No child processes.  Stop.", "*** Waiting for unfinished jobs...."
	return len(errs) > 0 && errs[0] == failed && !slices.ContainsFunc(errs, func(e string) bool { return e != failed && e != waiting })
}

// makeErrorLine matches what make prints for an error, at any MAKELEVEL
// ("make: ***" or "make[1]: ***").
var makeErrorLine = regexp.MustCompile(`(?m)\bmake(?:\[\d+\])?: (\*\*\*.*)$`)

// makeErrors returns make's error lines in log, from the "***" on.
func makeErrors(log string) []string {
	var out []string
	for _, m := range makeErrorLine.FindAllStringSubmatch(log, -1) {
		out = append(out, m[1])
	}
	return out
}

// readmeMakeRunOnce runs "make run" with BIN=bin and DATA_DIR=data until
// the broker is ready, sends SIGINT to make's process group, and returns
// everything make and the broker printed and how make ended. make runs
// with the environment of a terminal's shell: none of the MAKE variables
// a make running these tests (make test) passes down.
func readmeMakeRunOnce(t *testing.T, bin, data string) (string, syscall.WaitStatus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "-C", repoRoot, "run",
		"BIN="+bin, "LISTEN=127.0.0.1:0", "ADMIN=127.0.0.1:0", "DATA_DIR="+data, "TOPICS=orders:4 audit:1")
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "MAKELEVEL" || name == "MAKEFLAGS" || name == "MFLAGS" || name == "MAKEOVERRIDES"
	})
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out := &testutil.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	testutil.Eventually(t, 2*time.Minute, func() string { // make builds first
		select {
		case err := <-exited:
			exited <- err
			return "" // reported below
		default:
		}
		if !strings.Contains(out.String(), `msg="minibroker ready"`) {
			return "make run is not ready:\n" + out.String()
		}
		return ""
	})
	select {
	case err := <-exited:
		t.Fatalf("make run ended before Ctrl-C: %v\n%s", err, out)
	default:
	}
	require.Contains(t, out.String(), `msg="topic created" topic=audit partitions=1`)
	require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGINT))
	<-exited
	return out.String(), cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// TestReadmeEmbeddingExampleIsTheTestedFile: the README's go test example
// is examples/embedded/readme_test.go to the byte, which make test runs
// in a module of its own.
func TestReadmeEmbeddingExampleIsTheTestedFile(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	file, err := os.ReadFile(filepath.Join(repoRoot, "examples/embedded/readme_test.go"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "## Inside your own go test")
	require.True(t, ok)
	_, block, ok := strings.Cut(section, "```go\n")
	require.True(t, ok)
	block, _, ok = strings.Cut(block, "```\n")
	require.True(t, ok)
	require.Equal(t, string(file), block)
}

// TestReadmeCutMemberOff runs "Cut a member off with a fault": a member
// of process-and-commit (joined over the wire, its id put where the
// README has kgo-000004), the README's POST, one heartbeat of that member
// (dropped), the GET and the DELETE, each printing the README's sample.
func TestReadmeCutMemberOff(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel()
	cmds := readmeSection(t, "Cut a member off with a fault")
	require.Len(t, cmds, 3)
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	_, section, _ := strings.Cut(string(readme), "## Cut a member off with a fault")
	_, sample, ok := strings.Cut(section, "```text\n")
	require.True(t, ok)
	sample, _, _ = strings.Cut(sample, "```")
	want := strings.Split(strings.TrimSpace(sample), "\n")
	require.Len(t, want, 3)

	b := startAdminBinary(t, "--topic", "orders:4")
	c := wiretest.Dial(t, b.Kafka, "kgo")
	j := adminJoin(t, c, "process-and-commit", "", 10*time.Second, "orders")
	adminSync(t, c, "process-and-commit", j)
	run := func(i int) string {
		cmd := cmds[i]
		cmd.text = strings.ReplaceAll(cmd.text, "kgo-000004", j.MemberID)
		out, _ := runCurl(t, cmd, b.HTTP)
		return out
	}
	require.Equal(t, strings.ReplaceAll(want[0], "kgo-000004", j.MemberID), run(0))
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.Generation = 4, "process-and-commit", j.MemberID, j.Generation
	require.NoError(t, c.Send(kmsg.NewRequestFormatter(kmsg.FormatterClientID("kgo")).AppendRequest(nil, hb, 99)))
	listed := strings.ReplaceAll(want[1], "kgo-000004", j.MemberID)
	deadline := time.Now().Add(waitTimeout)
	for got := run(1); got != listed; got = run(1) {
		require.True(t, time.Now().Before(deadline), "GET never showed the hit: %s", got)
		time.Sleep(20 * time.Millisecond) // poll, bounded by the deadline above
	}
	require.Equal(t, want[2], run(2))
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

// TestReadmeMakeReset: make reset removes the data dir, but not while a
// broker holds it.
func TestReadmeMakeReset(t *testing.T) {
	if testing.Short() {
		t.Skip("runs make")
	}
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "minibroker-data")
	b, err := broker.Start(t.Context(), broker.Config{DataDir: dir, Topics: map[string]int32{"orders": 4}})
	require.NoError(t, err)
	reset := func() (string, error) {
		out, err := exec.Command("make", "--no-print-directory", "-C", repoRoot, "reset", "DATA_DIR="+dir).CombinedOutput()
		return string(out), err
	}
	out, err := reset()
	require.Error(t, err, out)
	require.Contains(t, out, "make reset: a running broker holds "+dir+"; stop it (Ctrl-C make run) first")
	require.DirExists(t, filepath.Join(dir, "logs", "orders-0"), "the refused reset removed nothing")

	require.NoError(t, b.Close())
	out, err = reset()
	require.NoError(t, err, out)
	require.NoDirExists(t, dir)
}

// TestReadmeDependOnMinibroker: the module path the README tells another
// module to require is this module's, and examples/embedded (a module of
// its own, which make test runs) depends on it with the README's require
// and a replace directive, as the README says (TestReadmeEmbeddingRoute
// runs the route from a fresh module).
func TestReadmeDependOnMinibroker(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	mod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	require.NoError(t, err)
	embedded, err := os.ReadFile(filepath.Join(repoRoot, "examples/embedded/go.mod"))
	require.NoError(t, err)
	path := regexp.MustCompile(`(?m)^module (\S+)$`).FindSubmatch(mod)[1]
	require.Contains(t, string(readme), "`go get "+string(path)+"@latest` finds nothing")
	require.Contains(t, string(readme), "\nrequire "+string(path)+" v0.0.0\nreplace "+string(path)+" => ../minibroker\n")
	require.Contains(t, string(embedded), "\t"+string(path)+" v0.0.0\n")
	require.Contains(t, string(embedded), "\nreplace "+string(path)+" => ../..\n")
}

// TestReadmeHelloGroupExcerpt: the code the README shows from
// examples/hello-group is the program's, line for line (one indent less).
func TestReadmeHelloGroupExcerpt(t *testing.T) {
	t.Parallel()
	var excerpt []string
	for _, b := range readmeBlocks(t) {
		if b.section == "A group forms" && b.lang == "go" {
			excerpt = b.lines
		}
	}
	require.NotEmpty(t, excerpt, "README.md shows hello-group's code under \"A group forms\"")
	program, err := os.ReadFile(filepath.Join(repoRoot, "examples/hello-group/main.go"))
	require.NoError(t, err)
	indented := make([]string, len(excerpt))
	for i, l := range excerpt {
		indented[i] = "\t" + l
	}
	require.Contains(t, string(program), strings.Join(indented, "\n")+"\n")
}

// TestReadmeBadFlagValuesExitTwo: what the README says of a bad flag
// value, run with the binary: one line, status 2, no data dir created,
// for each kind it names; the duration's message is the one it quotes.
func TestReadmeBadFlagValuesExitTwo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	flat := strings.Join(strings.Fields(string(readme)), " ")
	require.Contains(t, flat, "A bad flag value prints one line saying what is wrong and exits with status 2, before anything is created on disk")
	quoted := regexp.MustCompile("`--expiry-interval 10` says \"([^\"]+)\"").FindStringSubmatch(flat)
	require.NotNil(t, quoted, "the README quotes the duration's message")
	bin := testutil.BuildMain(t, "github.com/minibroker/minibroker/cmd/minibroker")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "127.0.0.1:99999"}, "the port must be a number from 0 to 65535"},
		{[]string{"--admin", "0.0.0.0:9644"}, "needs an AdminToken (--admin-token)"},
		{[]string{"--expiry-interval", "10"}, quoted[1]},
	} {
		dir := filepath.Join(t.TempDir(), "data")
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, append([]string{"serve", "--data-dir", dir}, tc.args...)...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		require.Equal(t, 2, exitCode(err), "%v: %s", tc.args, stderr.String())
		require.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %s", stderr.String())
		require.Contains(t, stderr.String(), tc.want)
		require.Empty(t, stdout.String())
		require.NoDirExists(t, dir)
	}
}
