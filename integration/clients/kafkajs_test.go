package clients

// kafkajs 2.2.4 (testdata/kafkajs/package-lock.json pins it), on Node.js,
// as a child process per group member: testdata/kafkajs/member.js, which
// prints one JSON line per record and per event kafkajs reports. make test
// installs it first (scripts/kafkajs.sh, into .cache/kafkajs); the test
// runs the script itself too, which does nothing when it is installed.
// Without node on PATH the test skips, and under -short.
//
// kafkajs speaks the classic protocol only. Its members commit after
// every batch they hand over, and once more, if anything is left, when
// they disconnect. When a fetch position falls out of range it commits
// the reset sentinel for the partition (OffsetManager.setDefaultOffset:
// -2 for fromBeginning, -1 otherwise), reads it back with OffsetFetch,
// takes the negative offset for no commit and resets by its policy. A
// broker that refuses that commit with OFFSET_OUT_OF_RANGE stops the
// consumer: kafkajs takes the code for non-retriable and crashes
// (KafkaJSNonRetriableError).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/coordinator"
)

// kafkajsVersion is the version testdata/kafkajs/package-lock.json pins.
const kafkajsVersion = "2.2.4"

// repoRoot is the repository, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// kafkajsInstall runs scripts/kafkajs.sh once per test binary.
var kafkajsInstall = sync.OnceValues(func() ([]byte, error) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return exec.CommandContext(ctx, filepath.Join(root, "scripts", "kafkajs.sh")).CombinedOutput()
})

// kafkajsNode returns node's path and the member script, with kafkajs
// installed beside it, or skips without node.
func kafkajsNode(t *testing.T) (node, script string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs kafkajs on node")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("node is not on PATH (%v): the kafkajs tests need Node.js 14 or later and npm (Debian: apt-get install nodejs npm)", err)
	}
	if out, err := kafkajsInstall(); err != nil {
		t.Fatalf("scripts/kafkajs.sh: %v\n%s", err, out)
	}
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, ".cache", "kafkajs", "node_modules", "kafkajs", "package.json"))
	if err != nil {
		t.Fatalf("kafkajs is not installed in .cache/kafkajs (%v): run scripts/kafkajs.sh", err)
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(raw, &pkg); err != nil || pkg.Version != kafkajsVersion {
		t.Fatalf("installed kafkajs is %q (%v), want %s: run scripts/kafkajs.sh", pkg.Version, err, kafkajsVersion)
	}
	return node, filepath.Join(root, "integration", "clients", "testdata", "kafkajs", "member.js")
}

// kafkajsEvent is one line member.js prints.
type kafkajsEvent struct {
	Event      string             `json:"event"`
	MemberID   string             `json:"memberId"`
	LeaderID   string             `json:"leaderId"`
	Assignment map[string][]int32 `json:"assignment"`
	Partition  int32              `json:"partition"`
	Offset     string             `json:"offset"`
	Key        *string            `json:"key"`
	Value      *string            `json:"value"`
	Generation int32              `json:"generation"`
	Name       string             `json:"name"`
	Error      string             `json:"error"`
}

// kafkajsMember is one running member.js.
type kafkajsMember struct {
	id     string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	log    *clientLog
	exited chan error // receives the process's end once

	mu      sync.Mutex // guards the fields below
	joins   []kafkajsEvent
	resets  []int32
	crash   *kafkajsEvent
	stopped bool
}

// startKafkajs starts a member of group with client id id, subscribed to
// topic, resetting to reset ("earliest" or "latest"), reporting records
// to l. It is stopped at cleanup if the test has not stopped it.
func startKafkajs(t *testing.T, addr, group, id, reset string, l *ledger) *kafkajsMember {
	t.Helper()
	node, script := kafkajsNode(t)
	m := &kafkajsMember{id: id, log: newClientLog(t, "kafkajs "+id), exited: make(chan error, 1)}
	m.cmd = exec.Command(node, script, addr, group, topic, id, reset)
	m.cmd.Dir = filepath.Join(repoRoot(t), ".cache", "kafkajs") // require finds node_modules here
	m.cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(m.cmd.Dir, "node_modules"))
	m.cmd.Stderr = m.log
	stdout, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if m.stdin, err = m.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("node %s: %v", script, err)
	}
	go func() {
		err := m.read(stdout, l)
		if werr := m.cmd.Wait(); err == nil {
			err = werr
		}
		m.exited <- err
	}()
	t.Cleanup(func() { m.stop(t) })
	return m
}

// read parses member.js's lines until it closes stdout.
func (m *kafkajsMember) read(stdout io.Reader, l *ledger) error {
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		m.log.Printf("event %s", sc.Text())
		var e kafkajsEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("kafkajs %s printed %q: %w", m.id, sc.Text(), err)
		}
		m.mu.Lock()
		switch e.Event {
		case "record":
			off, err := strconv.ParseInt(e.Offset, 10, 64)
			if err != nil || e.Key == nil || e.Value == nil {
				m.mu.Unlock()
				return fmt.Errorf("kafkajs %s printed %q", m.id, sc.Text())
			}
			l.add(consumed{m.id, e.Partition, off, []byte(*e.Key), []byte(*e.Value)})
		case "join":
			m.joins = append(m.joins, e)
		case "reset":
			m.resets = append(m.resets, e.Partition)
		case "crash":
			m.crash = &e
		case "stopped":
			m.stopped = true
		}
		m.mu.Unlock()
	}
	return sc.Err()
}

// stop closes the member's stdin, on which it disconnects (a last commit,
// LeaveGroup) and exits, and fails the test unless it did so cleanly
// within waitTimeout. Stopping twice is stopping once.
func (m *kafkajsMember) stop(t *testing.T) {
	t.Helper()
	if m.stdin == nil {
		return
	}
	_ = m.stdin.Close()
	m.stdin = nil
	select {
	case err := <-m.exited:
		if err != nil {
			t.Errorf("kafkajs %s: %v", m.id, err)
		}
	case <-time.After(waitTimeout):
		_ = m.cmd.Process.Kill()
		t.Errorf("kafkajs %s did not exit within %v of its stdin closing", m.id, waitTimeout)
		<-m.exited
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.crash != nil {
		t.Errorf("kafkajs %s crashed: %s: %s", m.id, m.crash.Name, m.crash.Error)
	} else if !m.stopped {
		t.Errorf("kafkajs %s exited without disconnecting", m.id)
	}
}

// alive fails the test at once if the member crashed.
func (m *kafkajsMember) alive(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.crash != nil {
		t.Fatalf("kafkajs %s crashed: %s: %s", m.id, m.crash.Name, m.crash.Error)
	}
}

// waitJoins waits until the member has joined n times and returns its
// last join.
func (m *kafkajsMember) waitJoins(t *testing.T, n int) kafkajsEvent {
	t.Helper()
	var last kafkajsEvent
	poll(t, fmt.Sprintf("kafkajs %s joining %d times", m.id, n), func(context.Context) (bool, string) {
		m.alive(t)
		m.mu.Lock()
		defer m.mu.Unlock()
		if len(m.joins) < n {
			return false, fmt.Sprintf("%d joins", len(m.joins))
		}
		last = m.joins[len(m.joins)-1]
		return true, ""
	})
	return last
}

// kafkajsView reads group's coordinator view on the broker behind addr.
func kafkajsView(t *testing.T, addr, group string) coordinator.GroupView {
	t.Helper()
	v, ok := brokers.Load(addr)
	if !ok {
		t.Fatalf("no minibroker at %s", addr)
	}
	view, ok := v.(*broker.Broker).Coordinator().Describe(group)
	if !ok {
		t.Fatalf("no group %s", group)
	}
	return view
}

// kafkajsProduce produces recs with kgo, uncompressed: kafkajs reads
// batches compressed with gzip only, unless the application registers a
// codec, and kgo compresses with snappy by default.
func kafkajsProduce(t *testing.T, addr string, recs []kv) {
	t.Helper()
	kgoProduceWith(t, addr, topic, recs, kgo.ProducerBatchCompression(kgo.NoCompression()))
}

// recordsOf returns the records of st on partitions ps, and those with an
// index of from or more on the others.
func recordsOf(st []stored, ps []int32, from int) []stored {
	var out []stored
	for _, s := range st {
		if slices.Contains(ps, s.Partition) || indexOf(s.Value) >= from {
			out = append(out, s)
		}
	}
	return out
}

// TestKafkajsGroup: a kafkajs member consumes alone; a second joins and
// the coordinator's round-robin over the sorted member ids splits the
// partitions (the first id 0 and 2, the second 1 and 3), each member
// consuming its own; both leave. Then partitions 1 and 3 are committed
// past the log end, and a third member fetches there, gets
// OFFSET_OUT_OF_RANGE, commits -2 for exactly those partitions (seen on the
// wire, at its generation), which minibroker stores, re-reads them from
// offset 0 and keeps consuming what is produced next. Last, partition 0
// committed past the end makes a fourth member, resetting to latest,
// commit -1 and read only what is produced after it fetches at the log
// end. Every record is checked by partition, offset, key and value.
func TestKafkajsGroup(t *testing.T) {
	t.Parallel()
	kafkajsNode(t) // skip early without node
	tap := startTappedBroker(t, map[string]int32{topic: partitions})
	addr := tap.addr()
	adm := newAdmin(t, addr)
	const group = "kafkajs-group"
	l := newLedger()

	// a alone holds every partition and reads the first 40 records.
	a := startKafkajs(t, addr, group, "kafkajs-a", "earliest", l)
	waitSplit(t, addr, adm, false, group, topic, partitions, "kafkajs-a")
	if j := a.waitJoins(t, 1); !maps.EqualFunc(j.Assignment, map[string][]int32{topic: {0, 1, 2, 3}}, slices.Equal) {
		t.Fatalf("kafkajs-a alone was assigned %v", j.Assignment)
	}
	gen1 := kafkajsView(t, addr, group).Generation
	kafkajsProduce(t, addr, makeRecords(0, 40))
	st := readTopic(t, addr, adm, topic, 40)
	l.wait(t, 40)
	checkConsumed(t, l.all(), st)
	waitCommitted(t, adm, group, topic, endOffsets(t, adm, topic))

	// b joins: one rebalance, round-robin over the sorted member ids.
	b := startKafkajs(t, addr, group, "kafkajs-b", "earliest", l)
	split := waitSplit(t, addr, adm, false, group, topic, partitions, "kafkajs-a", "kafkajs-b")
	aj, bj := a.waitJoins(t, 2), b.waitJoins(t, 1)
	ids := slices.Sorted(slices.Values([]string{aj.MemberID, bj.MemberID}))
	want := map[string][]int32{ids[0]: {0, 2}, ids[1]: {1, 3}}
	got := map[string][]int32{aj.MemberID: slices.Sorted(slices.Values(aj.Assignment[topic])), bj.MemberID: slices.Sorted(slices.Values(bj.Assignment[topic]))}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("kafkajs was assigned %v, want round-robin over sorted member ids %v", got, want)
	}
	view := kafkajsView(t, addr, group)
	if view.Generation != gen1+1 || len(view.Members) != 2 || view.Members[0].MemberID != ids[0] || view.Members[1].MemberID != ids[1] {
		t.Errorf("group at generation %d with %v, want generation %d with %v", view.Generation, view.Members, gen1+1, ids)
	}
	kafkajsProduce(t, addr, makeRecords(40, 40))
	st = readTopic(t, addr, adm, topic, 80)
	l.wait(t, 80)
	checkConsumed(t, l.all(), st)
	checkOwners(t, l.all(), split, 40)
	waitCommitted(t, adm, group, topic, endOffsets(t, adm, topic))
	for _, c := range tap.commitsBy("kafkajs-b") {
		if c.Generation != gen1+1 || c.MemberID != bj.MemberID || c.Offset < 0 {
			t.Errorf("kafkajs-b: %s, want generation %d, member %s, an offset of 0 or more", c, gen1+1, bj.MemberID)
		}
	}
	a.stop(t)
	b.stop(t)

	// Partitions 1 and 3 committed past the log end: c's positions there
	// are out of range, and it resets them to the log start.
	beyond := kadm.Offsets{}
	beyond.AddOffset(topic, 1, 1000, -1)
	beyond.AddOffset(topic, 3, 1000, -1)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	if resp, err := adm.CommitOffsets(ctx, group, beyond); err != nil || resp.Error() != nil {
		t.Fatalf("committing past the log end: %v %v", err, resp.Error())
	}
	before := len(l.all())
	c := startKafkajs(t, addr, group, "kafkajs-c", "earliest", l)
	waitSplit(t, addr, adm, false, group, topic, partitions, "kafkajs-c")
	cj := c.waitJoins(t, 1)
	genC := kafkajsView(t, addr, group).Generation
	var sentinels []tappedCommit
	poll(t, "kafkajs-c committing -2 for partitions 1 and 3", func(context.Context) (bool, string) {
		c.alive(t)
		sentinels = nil
		for _, cm := range tap.commitsBy("kafkajs-c") {
			if cm.Offset < 0 {
				sentinels = append(sentinels, cm)
			}
		}
		return len(sentinels) >= 2, fmt.Sprintf("negative commits %v", sentinels)
	})
	for _, s := range sentinels {
		t.Logf("on the wire: %s", s)
	}
	if len(sentinels) != 2 || sentinels[0].Partition == sentinels[1].Partition {
		t.Errorf("kafkajs-c's negative commits: %v, want one -2 each for partitions 1 and 3", sentinels)
	}
	for _, s := range sentinels {
		if s.Offset != -2 || (s.Partition != 1 && s.Partition != 3) || s.Group != group || s.Generation != genC || s.MemberID != cj.MemberID {
			t.Errorf("%s, want offset -2 for partition 1 or 3, group %s, generation %d, member %s", s, group, genC, cj.MemberID)
		}
	}
	reread := recordsOf(st, []int32{1, 3}, 80)
	l.wait(t, before+len(reread))
	checkConsumed(t, l.all()[before:], reread)
	c.mu.Lock()
	resets := slices.Sorted(slices.Values(c.resets))
	c.mu.Unlock()
	if !slices.Equal(resets, []int32{1, 3}) {
		t.Errorf("kafkajs-c logged resets of partitions %v, want [1 3]", resets)
	}

	// c keeps consuming: the next 20 records, every partition.
	kafkajsProduce(t, addr, makeRecords(80, 20))
	st = readTopic(t, addr, adm, topic, 100)
	reread = recordsOf(st, []int32{1, 3}, 80)
	l.wait(t, before+len(reread))
	checkConsumed(t, l.all()[before:], reread)
	checkOwners(t, l.all()[before:], map[string][]int32{"kafkajs-c": {0, 1, 2, 3}}, 0)
	waitCommitted(t, adm, group, topic, endOffsets(t, adm, topic))
	c.stop(t)

	// With fromBeginning false the sentinel is -1: d resets partition 0,
	// committed past the log end, to the log end, and reads only what is
	// produced once it fetches there.
	ends := endOffsets(t, adm, topic)
	beyond = kadm.Offsets{}
	beyond.AddOffset(topic, 0, 1000, -1)
	if resp, err := adm.CommitOffsets(ctx, group, beyond); err != nil || resp.Error() != nil {
		t.Fatalf("committing past the log end: %v %v", err, resp.Error())
	}
	before = len(l.all())
	d := startKafkajs(t, addr, group, "kafkajs-d", "latest", l)
	waitSplit(t, addr, adm, false, group, topic, partitions, "kafkajs-d")
	dj := d.waitJoins(t, 1)
	genD := kafkajsView(t, addr, group).Generation
	poll(t, "kafkajs-d fetching every partition at its log end", func(context.Context) (bool, string) {
		d.alive(t)
		for p := range int32(partitions) {
			if !tap.fetchedAt("kafkajs-d", topic, p, ends[p]) {
				return false, fmt.Sprintf("no fetch of partition %d at %d yet", p, ends[p])
			}
		}
		return true, ""
	})
	sentinels = nil
	for _, cm := range tap.commitsBy("kafkajs-d") {
		if cm.Offset < 0 {
			t.Logf("on the wire: %s", cm)
			sentinels = append(sentinels, cm)
		}
	}
	if len(sentinels) != 1 || sentinels[0].Offset != -1 || sentinels[0].Partition != 0 || sentinels[0].Generation != genD || sentinels[0].MemberID != dj.MemberID {
		t.Errorf("kafkajs-d's negative commits: %v, want one -1 for partition 0 at generation %d by %s", sentinels, genD, dj.MemberID)
	}
	kafkajsProduce(t, addr, makeRecords(100, 20))
	st = readTopic(t, addr, adm, topic, 120)
	fresh := recordsOf(st, nil, 100)
	l.wait(t, before+len(fresh))
	checkConsumed(t, l.all()[before:], fresh)
	waitCommitted(t, adm, group, topic, endOffsets(t, adm, topic))
	d.stop(t)
}
