package topics_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/topics"
)

// The child of TestDeleteCrash: the data directory, and the step after
// which it kills itself.
const (
	crashDirEnv  = "TOPICS_CRASH_DIR"
	crashStepEnv = "TOPICS_CRASH_STEP"
)

func start(t *testing.T, dir string) *broker.Broker {
	t.Helper()
	b, err := broker.Start(t.Context(), broker.Config{DataDir: dir, Listen: "127.0.0.1:0", NoAutoCreateTopics: true})
	require.NoError(t, err)
	return b
}

func produce(t *testing.T, log *records.Log, topic string, partition int32, n int) {
	t.Helper()
	spec := records.BatchSpec{FirstTimestamp: 1}
	for i := range n {
		spec.Records = append(spec.Records, records.Record{Value: []byte{byte('a' + i)}})
	}
	batch, err := log.Validate(records.EncodeBatch(spec))
	require.NoError(t, err)
	pending, err := log.Append(topic, partition, batch)
	require.NoError(t, err)
	_, err = pending.Wait()
	require.NoError(t, err)
}

// prepare makes a data directory with "doomed" (3 partitions, records in
// each, offsets committed by group g) and "keep" (1 partition, records,
// offsets), stopped cleanly.
func prepare(t *testing.T) (dir string, doomed catalog.Topic) {
	t.Helper()
	dir = t.TempDir()
	b := start(t, dir)
	require.NoError(t, b.CreateTopic("doomed", 3, nil))
	require.NoError(t, b.CreateTopic("keep", 1, nil))
	for p := range int32(3) {
		produce(t, b.Log(), "doomed", p, 2+int(p))
	}
	produce(t, b.Log(), "keep", 0, 4)
	require.NoError(t, b.Coordinator().CommitDirect("g", []offsets.Entry{
		{Topic: "doomed", Partition: 1, Offset: 3, LeaderEpoch: -1}, {Topic: "keep", Partition: 0, Offset: 4, LeaderEpoch: -1}}))
	doomed, _ = b.Catalog().Lookup("doomed")
	require.NoError(t, b.Close())
	return dir, doomed
}

// requireGone checks a broker on dir after a delete of "doomed": no trace
// of it in the catalog, the logs or the offsets, "keep" whole, and
// "doomed" created again new and empty.
func requireGone(t *testing.T, dir string, old catalog.Topic) {
	t.Helper()
	b := start(t, dir)
	defer func() { require.NoError(t, b.Close()) }()
	_, ok := b.Catalog().Lookup("doomed")
	require.False(t, ok)
	require.Empty(t, b.Catalog().Deleting(), "the start finished the delete")
	entries, err := os.ReadDir(filepath.Join(dir, broker.LogsDir))
	require.NoError(t, err)
	for _, e := range entries {
		require.False(t, strings.HasPrefix(e.Name(), "doomed"), "left on disk: %s", e.Name())
	}
	require.Equal(t, []string{"keep-0@4"}, committed(b, "g"))
	start, end, err := b.Log().Offsets("keep", 0)
	require.NoError(t, err)
	require.Equal(t, [2]int64{0, 4}, [2]int64{start, end})

	require.NoError(t, b.CreateTopic("doomed", 2, nil))
	fresh, _ := b.Catalog().Lookup("doomed")
	require.NotEqual(t, old.ID, fresh.ID, "made again: a new topic id")
	_, end, err = b.Log().Offsets("doomed", 1)
	require.NoError(t, err)
	require.Zero(t, end, "made again: an empty log")
}

// TestDeleteCrash kills a child broker process (SIGKILL) at each step of
// a topic delete and restarts on its data directory: killed before the
// catalog's journal line, the whole topic is there, records and offsets;
// killed after it, at any later step, the restart finishes the delete and
// none of the topic is left.
func TestDeleteCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	for _, step := range []string{"start", "journaled", "logs", "offsets"} {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			dir, doomed := prepare(t)
			cmd := exec.Command(os.Args[0], "-test.run=^TestDeleteCrashChild$")
			cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashStepEnv+"="+step)
			cmd.Stderr = t.Output()
			err := cmd.Run()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "the child must be killed, not finish")
			ws, _ := exit.Sys().(syscall.WaitStatus)
			require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "child: %v", err)

			if step != "start" {
				requireGone(t, dir, doomed)
				return
			}
			b := start(t, dir)
			defer func() { require.NoError(t, b.Close()) }()
			got, ok := b.Catalog().Lookup("doomed")
			require.True(t, ok)
			require.Equal(t, doomed, got, "the whole topic")
			for p := range int32(3) {
				_, end, err := b.Log().Offsets("doomed", p)
				require.NoError(t, err)
				require.Equal(t, int64(2+p), end)
			}
			require.Equal(t, []string{"doomed-1@3", "keep-0@4"}, committed(b, "g"))
		})
	}
}

// TestDeleteCrashChild deletes "doomed" and is killed at the step its
// parent names. Run alone, it does nothing.
func TestDeleteCrashChild(t *testing.T) {
	dir, step := os.Getenv(crashDirEnv), os.Getenv(crashStepEnv)
	if dir == "" {
		t.Skip("the child of TestDeleteCrash")
	}
	kill := func(s string) {
		if s == step {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(time.Hour) // the signal is on its way
		}
	}
	topics.SetStep(kill)
	b := start(t, dir)
	_ = b.DeleteTopic("doomed")
	t.Fatalf("not killed at step %q", step)
}

// TestDeleteRebalancesAndFrees: a delete through a running broker moves
// the subscribing group to a new generation, reason "topic deleted",
// removes the topic's offsets, and a second delete is
// catalog.ErrUnknownTopic.
func TestDeleteRebalancesAndFrees(t *testing.T) {
	t.Parallel()
	dir, doomed := prepare(t)
	b := start(t, dir)
	res, err := b.Coordinator().Join(coordinator.JoinRequest{Group: "sub", MemberID: "m", Topics: []string{"doomed", "keep"}, SessionTimeout: time.Minute})
	require.NoError(t, err)
	require.NoError(t, b.DeleteTopic("doomed"))
	v, ok := b.Coordinator().Describe("sub")
	require.True(t, ok)
	require.Equal(t, res.Generation+1, v.Generation)
	require.Equal(t, []string{"keep-0"}, assigned(v, "m"))
	require.ErrorIs(t, b.DeleteTopic("doomed"), catalog.ErrUnknownTopic)
	require.ErrorIs(t, b.DeleteTopic("../keep"), catalog.ErrInvalidTopic)
	require.NoError(t, b.Close())
	requireGone(t, dir, doomed)
}

func assigned(v coordinator.GroupView, member string) []string {
	for _, m := range v.Members {
		if m.MemberID == member {
			var out []string
			for _, tp := range m.Assignment {
				out = append(out, tp.String())
			}
			return out
		}
	}
	return nil
}

// committed renders group's committed offsets as topic-partition@offset.
func committed(b *broker.Broker, group string) []string {
	var out []string
	for _, e := range b.Committed(group) {
		out = append(out, fmt.Sprintf("%s-%d@%d", e.Topic, e.Partition, e.Offset))
	}
	return out
}
