package integration

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/internal/testutil"
)

// TestEveryExampleHasAClientIDOfItsOwn runs every example program twice
// against a broker, through a proxy that reads the client id of every
// request its clients send to their seed broker, as the README promises:
// every instance's client id is the example's name and its start time in
// base 36 (with a suffix of its own where one run has several clients),
// and no two runs share one.
func TestEveryExampleHasAClientIDOfItsOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the examples")
	}
	t.Parallel()
	b, err := broker.Start(t.Context(), broker.Config{Topics: map[string]int32{"orders": 4, "payments": 1}})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	p := startIDProxy(t, b.Addr())

	programs := examplePrograms(t)
	require.Subset(t, programs, []string{"exactly-once", "hello-group", "process-and-commit", "process-and-commit/produce", "quiet-members", "three-consumers"})
	for _, prog := range programs {
		bin := testutil.BuildMain(t, "github.com/minibroker/minibroker/examples/"+prog)
		name := strings.ReplaceAll(prog, "/", "-")
		own := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `-([0-9a-z]+)(-[a-z0-9-]+)?$`)
		var runs []string // each run's instance part
		for range 2 {
			start := time.Now().UnixMilli()
			ids := runThroughProxy(t, b, p, bin)
			require.NotEmpty(t, ids, "%s: no request reached the broker", prog)
			var instance string
			for _, id := range ids {
				m := own.FindStringSubmatch(id)
				require.NotNil(t, m, "%s sent client id %q, not %s-<start time in base 36>", prog, id, name)
				at, err := strconv.ParseInt(m[1], 36, 64)
				require.NoError(t, err)
				require.GreaterOrEqual(t, at, start, "%s: client id %q: the run's start time, in milliseconds", prog, id)
				require.True(t, instance == "" || instance == m[1], "%s: one run, one start time: %v", prog, ids)
				instance = m[1]
			}
			require.NotContains(t, runs, instance, "%s: two runs with one client id", prog)
			runs = append(runs, instance)
		}
	}
}

// examplePrograms returns the example programs, by their path under
// examples/: every directory there with a main.go.
func examplePrograms(t *testing.T) []string {
	t.Helper()
	var out []string
	root := filepath.Join(repoRoot, "examples")
	require.NoError(t, filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "main.go" {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		out = append(out, filepath.ToSlash(rel))
		return err
	}))
	slices.Sort(out)
	return out
}

// runThroughProxy runs bin with --broker the proxy until it exits, or
// until one of the groups on b has a member whose client id the run sent
// (it is up), then interrupts it, and returns the client ids its requests
// to the proxy carried.
func runThroughProxy(t *testing.T, b *broker.Broker, p *idProxy, bin string) []string {
	t.Helper()
	p.reset()
	cmd := exec.Command(bin, "--broker", p.addr)
	out := &testutil.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	testutil.Eventually(t, 30*time.Second, func() string {
		select {
		case <-exited:
			return ""
		default:
		}
		sent := p.seen()
		for _, g := range b.Coordinator().Groups() {
			v, _ := b.Coordinator().Describe(g.Group)
			for _, m := range v.Members {
				if slices.Contains(sent, m.ClientID) {
					return ""
				}
			}
		}
		return "not up yet; it printed:\n" + out.String()
	})
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not exit after SIGINT; it printed:\n%s", bin, out)
	}
	return p.seen()
}

// idProxy forwards TCP connections to a broker and notes the client id
// of every request header that passes (Kafka's request header v1/v2:
// key, version, correlation id, then the client id as an int16-length
// string).
type idProxy struct {
	addr, target string

	mu  sync.Mutex
	ids []string // guarded by mu: distinct, in the order first seen
}

func startIDProxy(t *testing.T, target string) *idProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	p := &idProxy{addr: ln.Addr().String(), target: target}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
	return p
}

func (p *idProxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ids = nil
}

func (p *idProxy) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.ids)
}

// pipe forwards c to the broker, frame by frame from the client's side.
func (p *idProxy) pipe(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer up.Close()
	go func() {
		_, _ = io.Copy(c, up)
		c.Close()
	}()
	r := bufio.NewReader(c)
	var size [4]byte
	for {
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(size[:])
		if n > 1<<20 { // the examples send nothing near it
			return
		}
		frame := make([]byte, n)
		if _, err := io.ReadFull(r, frame); err != nil {
			return
		}
		if len(frame) >= 10 {
			if l := int16(binary.BigEndian.Uint16(frame[8:10])); l >= 0 && 10+int(l) <= len(frame) {
				p.note(string(frame[10 : 10+int(l)]))
			}
		}
		if _, err := up.Write(append(size[:], frame...)); err != nil {
			return
		}
	}
}

func (p *idProxy) note(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Contains(p.ids, id) {
		p.ids = append(p.ids, id)
	}
}
