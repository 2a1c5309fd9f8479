package records

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// crashDirEnv, when set, makes TestCrashChild the child of TestCrash: it
// appends to the log in that directory until it is killed.
const (
	crashDirEnv = "RECORDS_CRASH_DIR"
	crashRunEnv = "RECORDS_CRASH_RUN"
)

// crashBatch is the batch a child appends: its content follows from the
// run, appender and index, so the parent can rebuild it.
func crashBatch(t testing.TB, run, g, i int, pid int64, seq int32) []byte {
	n := 1 + (run+g+i)%4
	return build(t, spec{n: n, value: 20 + (i*37)%700, pid: pid, seq: seq, idem: true,
		codec: Codec((g + i) % 5), firstTS: testNowMs + int64(run*1000000+i)})
}

// TestCrash kills a child process that appends durably in a loop, four
// times, at a different moment each time, then reopens the log and checks
// that every batch the child was told is durable is there, byte for byte,
// at the offsets it was told, and that offsets run on without a gap. (A
// SIGKILL loses no page cache, so this checks what a process crash can
// do; a power loss is covered by the fsync ordering argued in flush.go.)
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	dir := t.TempDir()
	type ack struct {
		run, g, i, partition int
		pid                  int64
		seq                  int32
		base                 int64
	}
	var acks []ack
	for run := range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashRunEnv+"="+strconv.Itoa(run))
		cmd.Stderr = t.Output()
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		r := bufio.NewReader(out)
		want := 40 + run*30
		for n := 0; ; {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("run %d: child ended before the kill: %v (%q)", run, err, line)
			}
			if !strings.HasPrefix(line, "ack ") {
				continue
			}
			var a ack
			_, err = fmt.Sscanf(line, "ack %d %d %d %d %d %d %d", &a.run, &a.g, &a.i, &a.partition, &a.pid, &a.seq, &a.base)
			require.NoError(t, err, line)
			acks = append(acks, a)
			if n++; n == want {
				break
			}
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		// Acks printed before the kill landed count too.
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				break
			}
			var a ack
			if _, err := fmt.Sscanf(line, "ack %d %d %d %d %d %d %d", &a.run, &a.g, &a.i, &a.partition, &a.pid, &a.seq, &a.base); err == nil {
				acks = append(acks, a)
			}
		}
		_ = cmd.Wait()
	}

	l := open(t, testConfig(t, dir))
	for _, a := range acks {
		res, err := l.Read("c", int32(a.partition), a.base, 1, true, nil)
		require.NoError(t, err)
		want := withBase(crashBatch(t, a.run, a.g, a.i, a.pid, a.seq), a.base)
		require.Equal(t, want, res.Records[:len(want)], "run %d appender %d batch %d", a.run, a.g, a.i)
	}
	for p := range int32(2) {
		next := int64(0)
		for _, b := range readAll(t, l, "c", p) {
			h := parseHeader(b)
			require.Equal(t, next, h.baseOffset)
			next = h.nextOffset()
		}
	}
	t.Logf("%d acknowledged batches checked after 4 kills", len(acks))
}

// TestCrashChild is TestCrash's child: four appenders over two partitions,
// each printing "ack run appender index partition pid seq base" once its
// batch is durable, until killed.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("only run by TestCrash")
	}
	run, err := strconv.Atoi(os.Getenv(crashRunEnv))
	require.NoError(t, err)
	cfg := testConfig(t, dir)
	cfg.SegmentBytes = 16 << 10
	l, err := Open(cfg)
	require.NoError(t, err)
	require.NoError(t, l.CreatePartitions("c", 2))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			pid, _, err := l.InitProducerID()
			if err != nil {
				panic(err)
			}
			seq := int32(0)
			for i := 0; ; i++ {
				raw := crashBatch(t, run, g, i, pid, seq)
				a, err := tryProduce(l, "c", int32(g%2), raw)
				if err != nil {
					panic(err)
				}
				mu.Lock()
				fmt.Fprintf(os.Stdout, "ack %d %d %d %d %d %d %d\n", run, g, i, g%2, pid, seq, a.BaseOffset)
				mu.Unlock()
				seq += parseHeader(raw).recordCount
			}
		})
	}
	wg.Wait()
}
