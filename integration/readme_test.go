package integration

// The README's commands, checked. Every line of its sh blocks must be a
// command that something in make test exercises: a Makefile target or
// variable, an example with its own test and the flags the README gives
// it, a minibroker subcommand and its flags, a script with its test, or a
// curl call that these tests run against the real binary, comparing what
// it prints with the sample the README shows. The sections' own runs are
// in readme_walk_test.go (the walk-through), readme_fault_test.go (the
// fencing sections), readme_make_test.go (make run and make reset) and
// readme_claims_test.go (what the README quotes or promises).

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/testutil"
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
	labs := labNames(t, bin)
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
		case args[0] == "kcat":
			require.Equal(t, exactlyOnceSection, c.section, "%s: TestReadmeExactlyOnce runs the kcat commands of its section", where)
		case args[0] == "examples/kcat/demo.sh":
			require.FileExists(t, filepath.Join(repoRoot, "examples/kcat/demo_test.go"), where)
		case args[0] == "curl":
			require.Regexp(t, `^curl -s( -H "\$J" -X(POST|DELETE))? 127\.0\.0\.1:964[45]/(v1/|metrics)`, c.text, where)
		case strings.HasPrefix(c.text, "J='Content-Type: application/json'"):
		default:
			t.Errorf("%s: nothing in make test exercises this command", where)
		}
	}

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
	require.Len(t, printed, 2)
	require.Equal(t, "member quiet-members-ID-000001 generation 1 session 100ms", sameInstances(printed[0]))
	require.Equal(t, "member quiet-members-ID-000002 generation 2 session 100ms", sameInstances(printed[1]))
	require.True(t, strings.HasPrefix(sameInstances(cmds[1].comment), "member quiet-members-ID-000001 generation 1 "), "the README's sample: %s", cmds[1].comment)

	calls := cmds[2:]
	require.Len(t, calls, 5, "J=, then four curl calls")
	for _, c := range calls[1:] {
		out, named := runCurl(t, c, b.HTTP)
		require.Equal(t, adminFlag, named, "README.md:%d calls the broker the serve line starts", c.line)
		require.Equal(t, sameInstances(c.comment), sameInstances(out), "README.md:%d", c.line)
	}
}
