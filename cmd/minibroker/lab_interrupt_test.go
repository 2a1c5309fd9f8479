package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/broker/adminapi"
	"github.com/minibroker/minibroker/internal/testutil"
	labs "github.com/minibroker/minibroker/tools/lab"
)

// stopWithin bounds how long an interrupted tool may take to stop: a
// second or two on an idle machine, with room for a loaded one.
const stopWithin = 10 * time.Second

// sharedLabTopics are the topics every run of a lab shares, which stay
// on the broker by design (the README says so).
var sharedLabTopics = []string{"lab-orders", "lab-identity-orders"}

// leftOnBroker lists, through kadm, the broker's groups and topics, and,
// through its admin API, its faults.
func leftOnBroker(t *testing.T, b *broker.Broker) (groups, topics []string, faults int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	listed, err := adm.ListGroups(ctx)
	require.NoError(t, err)
	groups = listed.Groups()
	slices.Sort(groups)
	details, err := adm.ListTopics(ctx)
	require.NoError(t, err)
	topics = details.Names()
	slices.Sort(topics)

	resp, err := http.Get("http://" + b.AdminAddr() + "/v1/faults")
	require.NoError(t, err)
	defer resp.Body.Close()
	var list struct {
		Faults []json.RawMessage `json:"faults"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	return groups, topics, len(list.Faults)
}

// requireNothingOfTheRun: the broker holds the user's topic, the topics
// every lab run shares, no group and no fault, and no name with the run's
// id.
func requireNothingOfTheRun(t *testing.T, b *broker.Broker, run string) {
	t.Helper()
	groups, topics, faults := leftOnBroker(t, b)
	require.Empty(t, groups, "the run's groups are gone")
	for _, topic := range topics {
		require.NotContains(t, topic, run, "a topic of the run stays")
		require.True(t, topic == "orders" || slices.Contains(sharedLabTopics, topic), "topic %s", topic)
	}
	require.Zero(t, faults, "the run's fault is gone")
}

// runInterrupted runs "minibroker" with args and cancels its context the
// moment its stdout matches at (a point mid-run), as Ctrl-C does; it
// returns the exit code, stdout and stderr, failing unless the run stops
// within stopWithin of the interrupt.
func runInterrupted(t *testing.T, args []string, at *regexp.Regexp) (int, string, string) {
	t.Helper()
	ctx, interrupt := context.WithCancel(t.Context())
	defer interrupt()
	interrupted := make(chan struct{})
	stdout := testutil.NewTrigger(at, func() { close(interrupted); interrupt() })
	var stderr testutil.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, stdout, &stderr) }()
	select {
	case <-interrupted:
	case code := <-done:
		select {
		case <-interrupted: // it stopped at once: both were ready
			return code, stdout.String(), stderr.String()
		default:
		}
		t.Fatalf("%v ended (%d) before its output matched %s:\n%s\n%s", args, code, at, stdout.String(), stderr.String())
	}
	stop, cancel := context.WithTimeout(t.Context(), stopWithin)
	defer cancel()
	select {
	case code := <-done:
		return code, stdout.String(), stderr.String()
	case <-stop.Done():
		t.Fatalf("%v did not stop within %v of the interrupt:\n%s", args, stopWithin, stdout.String())
		return -1, "", ""
	}
}

// interruptedRun matches the line an interrupted lab prints, and its run.
var interruptedRun = regexp.MustCompile(`\nlab ([a-z0-9-]+): interrupted; removing what run ([0-9a-z]+) made on the broker\.\n`)

// TestLabCommandInterrupted: every lab with --broker, interrupted in its
// second step (partition in its fourth, its fault in force): it says it
// was interrupted, exits 130 (128 + SIGINT, as a shell and Kafka's tools
// report Ctrl-C) within a second or two, says what it removed, and the
// broker holds nothing of the run: no group, no topic of its own, no
// fault.
func TestLabCommandInterrupted(t *testing.T) {
	t.Parallel()
	for _, name := range labs.Names() {
		if name == "expiry" {
			continue // no --broker form
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, err := broker.Start(t.Context(), broker.Config{Admin: "127.0.0.1:0", AdminAPI: adminapi.New, ExpiryInterval: 10 * time.Millisecond,
				Topics: map[string]int32{"orders": 4}})
			require.NoError(t, err)
			t.Cleanup(func() { b.Close() })
			at := regexp.MustCompile(`\n2\. `)
			switch name {
			case "fencing":
				at = regexp.MustCompile(`\nExercise 2a\. `)
			case "partition":
				at = regexp.MustCompile(`\n4\. `)
			}
			code, stdout, stderr := runInterrupted(t, []string{"lab", name, "--broker", b.Addr(), "--admin", b.AdminAddr()}, at)
			require.Equal(t, 130, code, "%s\n%s", stdout, stderr)
			require.Equal(t, "minibroker lab "+name+": interrupted\n", stderr, stdout)
			m := interruptedRun.FindStringSubmatch(stdout)
			require.NotNil(t, m, stdout)
			require.Equal(t, name, m[1])
			require.Regexp(t, `\nlab: deleted \d+ groups? of run `+m[2]+`, with their committed offsets\.\n`, stdout)
			require.NotContains(t, stdout, "could not")
			if name == "partition" {
				require.Regexp(t, `\nlab: removed fault 1 \(the heartbeats of a-\d+ in lab-partition-`+m[2]+`\) from the broker\.\n`, stdout)
			}
			requireNothingOfTheRun(t, b, m[2])
		})
	}
}

// TestLabBinaryInterrupted: the minibroker binary, running "lab zombie
// --broker" against a broker on the real clock, gets SIGINT while it waits
// for the broker's expiry step: it exits 130 within a second or two,
// saying it was interrupted (and not blaming a manual clock), and leaves
// nothing of the run on the broker.
func TestLabBinaryInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel()
	bin := testutil.BuildMain(t, "github.com/minibroker/minibroker/cmd/minibroker")
	b, err := broker.Start(t.Context(), broker.Config{Admin: "127.0.0.1:0", AdminAPI: adminapi.New, Topics: map[string]int32{"orders": 4}})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })

	waiting := make(chan struct{})
	stdout := testutil.NewTrigger(regexp.MustCompile(`the lab waits for its expiry step\.\n`), func() { close(waiting) })
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "lab", "zombie", "--broker", b.Addr())
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	})
	wait, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	select {
	case <-waiting:
	case err := <-done:
		t.Fatalf("the lab ended (%v) before it waited for the expiry step:\n%s\n%s", err, stdout.String(), stderr.String())
	case <-wait.Done():
		t.Fatalf("the lab never waited for the expiry step:\n%s", stdout.String())
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	stop, cancelStop := context.WithTimeout(t.Context(), stopWithin)
	defer cancelStop()
	select {
	case err := <-done:
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		require.Equal(t, 130, exit.ExitCode(), "%s\n%s", stdout.String(), stderr.String())
	case <-stop.Done():
		t.Fatalf("no exit within %v of SIGINT:\n%s", stopWithin, stdout.String())
	}
	require.Equal(t, "minibroker lab zombie: interrupted\n", stderr.String())
	require.NotContains(t, stdout.String(), "manual clock")
	m := interruptedRun.FindStringSubmatch(stdout.String())
	require.NotNil(t, m, stdout.String())
	require.Contains(t, stdout.String(), "lab: deleted topics lab-"+m[2]+"-payments of run "+m[2]+".\n")
	requireNothingOfTheRun(t, b, m[2])
}
