package integration

// The chapter's exercise 3 as a user runs it against the real binary:
// "minibroker serve --clock manual --admin ADDR", a kgo program that joins
// two members with 100 ms sessions, and HTTP calls that move the clock and
// run the expiry step.

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// adminBinary is a running "minibroker serve" with its stderr read line by
// line.
type adminBinary struct {
	cmd   *exec.Cmd
	lines chan string // stderr, closed at EOF
	seen  []string    // lines read so far; owned by the test goroutine
	Kafka string
	HTTP  string
}

// startAdminBinary builds cmd/minibroker and runs "serve" with args on
// loopback ports picked by the kernel, then waits for its two ready lines.
// Cleanup kills it if the test did not stop it.
func startAdminBinary(t *testing.T, args ...string) *adminBinary {
	t.Helper()
	dir := t.TempDir()
	bin := testutil.BuildMain(t, "github.com/minibroker/minibroker/cmd/minibroker")

	args = append([]string{"serve", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data")}, args...)
	b := &adminBinary{cmd: exec.Command(bin, args...), lines: make(chan string, 1024)}
	stderr, err := b.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, b.cmd.Start())
	t.Cleanup(func() {
		if b.cmd.ProcessState == nil {
			b.cmd.Process.Kill()
			b.cmd.Wait()
		}
	})
	go func() { // owns stderr until EOF
		defer close(b.lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			b.lines <- sc.Text()
		}
		io.Copy(io.Discard, stderr)
	}()
	addr := regexp.MustCompile(`\baddr=(\S+)`)
	b.HTTP = "http://" + addr.FindStringSubmatch(b.waitFor(t, `msg="admin ready"`))[1]
	b.Kafka = addr.FindStringSubmatch(b.waitFor(t, `msg="minibroker ready"`))[1]
	return b
}

// waitFor returns the first stderr line, read now or before, that
// contains substr.
func (b *adminBinary) waitFor(t *testing.T, substr string) string {
	t.Helper()
	for _, l := range b.seen {
		if strings.Contains(l, substr) {
			return l
		}
	}
	timeout := time.NewTimer(waitTimeout)
	defer timeout.Stop()
	for {
		select {
		case l, ok := <-b.lines:
			if !ok {
				t.Fatalf("minibroker exited before logging %q; its log:\n%s", substr, strings.Join(b.seen, "\n"))
			}
			b.seen = append(b.seen, l)
			if strings.Contains(l, substr) {
				return l
			}
		case <-timeout.C:
			t.Fatalf("minibroker did not log %q within %v; its log:\n%s", substr, waitTimeout, strings.Join(b.seen, "\n"))
		}
	}
}

// TestAdminExercise3OverHTTP runs the chapter's exercise 3: ManualClock, a
// 100 ms session timeout, two members; advance to exactly 100 ms and
// expire (nobody: the deadline test is strict), then one more millisecond
// and expire again (both, in one rebalance that leaves the group Empty).
//
// The members are kgo clients that send JoinGroup, SyncGroup and
// OffsetCommit through kgo.Client.Request, not kgo group consumers: a
// group consumer heartbeats on its own timer in real time, and kgo
// requires a heartbeat interval no longer than the session (100 ms), so
// its heartbeats would renew each lease to manual now + 100 ms at
// whatever instant they happened to land, before or after an advance,
// and the outcome would depend on timing. These members send nothing
// between the calls the test makes, so every lease is exact.
func TestAdminExercise3OverHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel()
	b := startAdminBinary(t, "--clock", "manual", "--topic", "orders:4")
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	const group = "exercise3"

	// The kgo program: two members join with 100 ms sessions at manual
	// time 0 and sync; the second commits a partition it owns.
	type member struct {
		cl         *kgo.Client
		id         string
		generation int32
	}
	join := func() member {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Kafka), kgo.ClientID("exercise"))
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		m := member{cl: cl}
		for {
			// kgo sends the highest version both sides know, 9, which
			// asks a new member for its id first.
			req := wiretest.JoinRequest(9, group, m.id, 100*time.Millisecond, "orders")
			resp, err := req.RequestWith(ctx, cl)
			require.NoError(t, err)
			if resp.ErrorCode == 79 && m.id == "" { // MEMBER_ID_REQUIRED: join again with the id
				m.id = resp.MemberID
				continue
			}
			require.Zero(t, resp.ErrorCode)
			m.generation = resp.Generation
			sync := kmsg.NewPtrSyncGroupRequest()
			sync.Group, sync.MemberID, sync.Generation = group, m.id, m.generation
			sync.ProtocolType, sync.Protocol = resp.ProtocolType, resp.Protocol
			sresp, err := sync.RequestWith(ctx, cl)
			require.NoError(t, err)
			require.Zero(t, sresp.ErrorCode)
			return m
		}
	}
	m1, m2 := join(), join()
	require.Equal(t, []string{"exercise-000001", "exercise-000002"}, []string{m1.id, m2.id})
	require.Equal(t, []int32{1, 2}, []int32{m1.generation, m2.generation})
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.MemberID, commit.Generation = group, m2.id, m2.generation
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 1, Offset: 6}}}}
	cresp, err := commit.RequestWith(ctx, m2.cl)
	require.NoError(t, err)
	require.Zero(t, cresp.Topics[0].Partitions[0].ErrorCode)

	// The HTTP calls.
	type groupJSON struct {
		State      string `json:"state"`
		Generation int32  `json:"generation"`
		Members    []struct {
			MemberID   string `json:"member_id"`
			DeadlineMS int64  `json:"deadline_ms"`
		} `json:"members"`
		Committed []struct {
			Partition int32 `json:"partition"`
			Offset    int64 `json:"offset"`
		} `json:"committed"`
	}
	var g groupJSON
	adminGetJSON(t, b.HTTP+"/v1/groups/"+group, &g)
	require.Equal(t, "Stable", g.State)
	require.Equal(t, int32(2), g.Generation)
	require.Len(t, g.Members, 2)
	for _, m := range g.Members {
		require.Equal(t, int64(100), m.DeadlineMS, "joined at 0 with a 100 ms session: %s", m.MemberID)
	}

	post := func(path, body, want string) {
		t.Helper()
		code, got := adminHTTP(t, "POST", b.HTTP+path, body)
		require.Equal(t, http.StatusOK, code, got)
		require.Equal(t, want+"\n", got)
	}
	post("/v1/clock/advance", `{"ms":100}`, `{"now":"1970-01-01T00:00:00.1Z","now_ms":100}`)
	post("/v1/expire", "", `{"expired":[]}`)
	post("/v1/clock/advance", `{"ms":1}`, `{"now":"1970-01-01T00:00:00.101Z","now_ms":101}`)
	post("/v1/expire", "", `{"expired":[{"group":"exercise3","member":"exercise-000001"},{"group":"exercise3","member":"exercise-000002"}]}`)

	g = groupJSON{}
	adminGetJSON(t, b.HTTP+"/v1/groups/"+group, &g)
	require.Equal(t, "Empty", g.State)
	require.Equal(t, int32(3), g.Generation, "one rebalance for both expiries")
	require.Empty(t, g.Members)
	require.Len(t, g.Committed, 1, "an Empty group keeps its offsets")
	require.Equal(t, int64(6), g.Committed[0].Offset)

	// The wiring of cmd/minibroker: the rebalance hook, the observer and
	// the store's fsync hook feed the metrics.
	fams := adminScrape(t, b.HTTP)
	require.Equal(t, 3.0, adminMetric(fams, "minibroker_group_generation", "group", group))
	require.Equal(t, 0.0, adminMetric(fams, "minibroker_group_members", "group", group))
	require.Equal(t, 3.0, adminMetric(fams, "minibroker_rebalances_total", "group", group))
	require.Equal(t, 1.0, adminMetric(fams, "minibroker_requests_total", "api", "OffsetCommit", "error_code", "NONE"))
	require.Equal(t, 1.0, adminMetric(fams, "minibroker_commit_seconds"))
	require.GreaterOrEqual(t, adminMetric(fams, "minibroker_fsync_seconds"), 1.0, "the commit's journal fsync")

	// The log tells the same story, and SIGTERM stops it cleanly.
	b.waitFor(t, `msg="member expired" group=exercise3 member=exercise-000002`)
	b.waitFor(t, `msg="rebalance complete" group=exercise3 generation=3 reason=expiry state=Empty`)
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGTERM))
	b.waitFor(t, `msg="minibroker stopped"`)
	for range b.lines { // read stderr to its end before Wait closes it
	}
	require.NoError(t, b.cmd.Wait())
}
