package integration

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/testutil"
)

// exactlyOnceSection is the README section TestReadmeExactlyOnce runs.
const exactlyOnceSection = "Exactly once: the fence reaches the output"

// readmeRun is one sh block of a README section and the text block that
// follows it, if any: a command and what the README says it prints.
type readmeRun struct {
	command readmeCommand
	shown   []string // nil: the README shows no output
}

// readmeRuns returns the commands of a README section, one sh block
// each, with the output shown after each.
func readmeRuns(t *testing.T, section string) []readmeRun {
	t.Helper()
	cmds := readmeSection(t, section)
	var runs []readmeRun
	blocks := readmeBlocks(t)
	for i, b := range blocks {
		if b.section != section || b.lang != "sh" {
			continue
		}
		var shown []string
		if i+1 < len(blocks) && blocks[i+1].lang == "text" && blocks[i+1].section == section {
			shown = blocks[i+1].lines
		}
		require.Less(t, len(runs), len(cmds))
		c := cmds[len(runs)]
		require.Equal(t, b.line+1, c.line, "README.md:%d: one command per sh block in %q", b.line, section)
		runs = append(runs, readmeRun{command: c, shown: shown})
	}
	require.Len(t, runs, len(cmds), "README.md %q: one command per sh block", section)
	return runs
}

// TestReadmeExactlyOnce runs "Exactly once: the fence reaches the output"
// as a reader would, after the eight records of "Records, commits and a
// replay": the example copies them and says what it committed; the
// read_committed kcat reader (the README's line, with this broker's
// address) prints the README's eight values; an instance that crashes
// inside its transaction leaves its write behind an abort marker, and
// another instance copies the eight new records once its session has
// ended; the reader then finds all sixteen, each once.
func TestReadmeExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Fatalf("kcat is not on PATH (%v): run scripts/kcat.sh (make test does) or use -short to skip", err)
	}
	t.Parallel()
	b := startWalkBroker(t, testutil.BuildMain(t, "github.com/minibroker/minibroker/cmd/minibroker"))
	bins := map[string]string{
		"./examples/exactly-once":               testutil.BuildMain(t, "github.com/minibroker/minibroker/examples/exactly-once"),
		"./examples/process-and-commit/produce": testutil.BuildMain(t, "github.com/minibroker/minibroker/examples/process-and-commit/produce"),
	}
	out, code := runProgram(t, bins["./examples/process-and-commit/produce"], nil, "--broker", b.Kafka, "--count", "8")
	require.Zero(t, code, out)

	runs := readmeRuns(t, exactlyOnceSection)
	var texts []string
	for _, r := range runs {
		texts = append(texts, r.command.text)
	}
	reader := "kcat -C -b 127.0.0.1:9092 -t orders-upper -X isolation.level=read_committed -e -q -f '%s\\n' | sort"
	require.Equal(t, []string{
		"go run ./examples/exactly-once --count 8",
		reader,
		"go run ./examples/process-and-commit/produce --count 8 --prefix more",
		"go run ./examples/exactly-once --crash-after 1 --session-timeout 3s",
		"go run ./examples/exactly-once --count 8",
	}, texts)
	goRun := func(r readmeRun) (string, int) {
		args := strings.Fields(r.command.text)
		return runProgram(t, bins[args[2]], nil, append([]string{"--broker", b.Kafka}, args[3:]...)...)
	}
	read := func(text string) string {
		ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
		defer cancel()
		line := strings.ReplaceAll(text, "127.0.0.1:9092", b.Kafka)
		o, err := exec.CommandContext(ctx, "bash", "-c", "set -o pipefail; "+line).Output()
		require.NoError(t, err, line)
		return string(o)
	}
	values := func(prefix string, n int) []string {
		var v []string
		for i := range n {
			v = append(v, prefix+"-"+strconv.Itoa(i))
		}
		return v
	}

	// Eight records copied, in as many transactions as the polls took.
	out, code = goRun(runs[0])
	require.Zero(t, code, out)
	requireCopied(t, runs[0].shown, 8)
	requireCopied(t, strings.Split(strings.TrimSuffix(out, "\n"), "\n"), 8)
	require.Equal(t, runs[0].shown[len(runs[0].shown)-1], lastLine(out))

	// The read_committed reader prints the README's eight values.
	require.Equal(t, values("RECORD", 8), runs[1].shown)
	require.Equal(t, strings.Join(runs[1].shown, "\n")+"\n", read(runs[1].command.text))

	// Eight more records; an instance that crashes inside its transaction.
	out, code = goRun(runs[2])
	require.Zero(t, code, out)
	out, code = goRun(runs[3])
	require.Equal(t, 3, code, out)
	require.Equal(t, "exit status 3", runs[3].shown[len(runs[3].shown)-1], "go run reports the exit status")
	require.Equal(t, strings.Join(runs[3].shown[:len(runs[3].shown)-1], "\n")+"\n", out)

	// Another instance copies the eight, all of them once the crashed
	// member's session has ended.
	out, code = goRun(runs[4])
	require.Zero(t, code, out)
	requireCopied(t, runs[4].shown, 8)
	requireCopied(t, strings.Split(strings.TrimSuffix(out, "\n"), "\n"), 8)
	require.Equal(t, runs[4].shown[len(runs[4].shown)-1], lastLine(out))

	// The reader again: sixteen values, each once, once the crashed
	// transaction is aborted (about a session timeout after the crash);
	// a read_uncommitted reader also finds its write.
	all := slices.Sorted(slices.Values(append(values("MORE", 8), values("RECORD", 8)...)))
	testutil.Eventually(t, 30*time.Second, func() string {
		if got := read(runs[1].command.text); got != strings.Join(all, "\n")+"\n" {
			return "the read_committed reader printed:\n" + got
		}
		return ""
	})
	uncommitted := read(strings.Replace(runs[1].command.text, "read_committed", "read_uncommitted", 1))
	require.Greater(t, strings.Count(uncommitted, "MORE-"), 8, "the aborted writes are in the log:\n%s", uncommitted)
}

// requireCopied: lines are "committed N records" and "aborted N records:
// ..." lines whose commits add up to n, then the --count line for n.
func requireCopied(t *testing.T, lines []string, n int) {
	t.Helper()
	require.NotEmpty(t, lines)
	require.Equal(t, fmt.Sprintf("copied %d records, as --count %d asked", n, n), lines[len(lines)-1])
	sum := 0
	for _, l := range lines[:len(lines)-1] {
		if m := regexp.MustCompile(`^committed (\d+) records$`).FindStringSubmatch(l); m != nil {
			k, _ := strconv.Atoi(m[1])
			sum += k
			continue
		}
		require.Regexp(t, `^aborted \d+ records: the group moved on; they will be read again by their owner$`, l)
	}
	require.Equal(t, n, sum, "%q", lines)
}

// lastLine is the last line s holds.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return lines[len(lines)-1]
}
