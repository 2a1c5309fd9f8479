package clients

// A wire tap for minibroker: a loopback proxy in front of the embedded
// broker that decodes every request a client sends (protocol.ParseHeader,
// protocol.DecodeRequest: the broker's own reader) and keeps the
// OffsetCommit partitions and Fetch offsets, then forwards the bytes
// unchanged. The broker advertises the tap's address, so clients reach it
// only through the tap. It is how a test shows what a client put on the
// wire where the client's own account is not evidence.

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/protocol"
)

// tappedCommit is one partition of an OffsetCommit request, with the client
// id of its request header.
type tappedCommit struct {
	ClientID string
	committedPartition
}

// tappedFetch is one partition of a Fetch request.
type tappedFetch struct {
	ClientID    string
	Topic       string
	Partition   int32
	FetchOffset int64
}

// wireTap is the proxy. Safe for concurrent use.
type wireTap struct {
	ln     net.Listener
	target string

	mu      sync.Mutex // guards the fields below
	commits []tappedCommit
	fetches []tappedFetch
	conns   []net.Conn
	closed  bool
}

// startTappedBroker starts minibroker (as startBroker does, with topics)
// behind a wire tap and returns the tap. The tap's address is the
// bootstrap address, and the one Metadata and FindCoordinator advertise.
func startTappedBroker(t *testing.T, topics map[string]int32) *wireTap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &wireTap{ln: ln}
	target := startBrokerWith(t, broker.Config{Topics: topics, Advertise: ln.Addr().String()})
	w.target = target
	v, _ := brokers.Load(target)
	brokers.Store(w.addr(), v) // laggingMembers by the address clients use
	done := make(chan struct{})
	go w.accept(t, done)
	t.Cleanup(func() {
		brokers.Delete(w.addr())
		_ = ln.Close()
		w.mu.Lock()
		w.closed = true
		for _, c := range w.conns {
			_ = c.Close()
		}
		w.mu.Unlock()
		<-done
	})
	return w
}

func (w *wireTap) addr() string { return w.ln.Addr().String() }

func (w *wireTap) accept(t *testing.T, done chan struct{}) {
	defer close(done)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		client, err := w.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.DialTimeout("tcp", w.target, waitTimeout)
		if err != nil {
			t.Errorf("wire tap: dialing the broker: %v", err)
			_ = client.Close()
			continue
		}
		w.mu.Lock()
		closed := w.closed
		w.conns = append(w.conns, client, server)
		w.mu.Unlock()
		if closed {
			_ = client.Close()
			_ = server.Close()
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, _ = io.Copy(client, server)
			_ = client.Close()
		}()
		go func() {
			defer wg.Done()
			if err := w.forward(server, client); err != nil {
				t.Errorf("wire tap: %v", err)
			}
			_ = server.Close()
		}()
	}
}

// forward copies client's requests to server frame by frame, recording
// each. It returns nil when either side closes.
func (w *wireTap) forward(server, client net.Conn) error {
	r := bufio.NewReader(client)
	for {
		frame, err := protocol.ReadFrame(r, 0, nil)
		if err != nil {
			return nil // the client went away, or the test is over
		}
		if err := w.record(frame); err != nil {
			return err
		}
		out := make([]byte, 4, 4+len(frame))
		out[0], out[1], out[2], out[3] = byte(len(frame)>>24), byte(len(frame)>>16), byte(len(frame)>>8), byte(len(frame))
		if _, err := server.Write(append(out, frame...)); err != nil {
			return nil
		}
	}
}

// record decodes one request frame and keeps what the tap keeps of it.
func (w *wireTap) record(frame []byte) error {
	h, body, err := protocol.ParseHeader(frame)
	if err != nil {
		return err
	}
	if h.APIKey != kmsg.OffsetCommit.Int16() && h.APIKey != kmsg.Fetch.Int16() {
		return nil
	}
	req, err := protocol.DecodeRequest(h, body)
	if err != nil {
		var unsupported *protocol.UnsupportedVersionError
		if errors.As(err, &unsupported) {
			return nil // the broker answers it
		}
		return err
	}
	client := ""
	if h.ClientID != nil {
		client = *h.ClientID
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch req := req.(type) {
	case *kmsg.OffsetCommitRequest:
		for _, tp := range req.Topics {
			for _, p := range tp.Partitions {
				md := ""
				if p.Metadata != nil {
					md = *p.Metadata
				}
				w.commits = append(w.commits, tappedCommit{client, committedPartition{
					Version: req.Version, Group: req.Group, Generation: req.Generation, MemberID: req.MemberID,
					Partition: p.Partition, Offset: p.Offset, Epoch: p.LeaderEpoch, Metadata: md,
				}})
			}
		}
	case *kmsg.FetchRequest:
		for _, tp := range req.Topics {
			for _, p := range tp.Partitions {
				w.fetches = append(w.fetches, tappedFetch{client, tp.Topic, p.Partition, p.FetchOffset})
			}
		}
	}
	return nil
}

// commitsBy returns the OffsetCommit partitions client sent so far.
func (w *wireTap) commitsBy(client string) []tappedCommit {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []tappedCommit
	for _, c := range w.commits {
		if c.ClientID == client {
			out = append(out, c)
		}
	}
	return out
}

// fetchedAt reports whether client has sent a Fetch for topic's partition
// at offset.
func (w *wireTap) fetchedAt(client, topic string, partition int32, offset int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, f := range w.fetches {
		if f.ClientID == client && f.Topic == topic && f.Partition == partition && f.FetchOffset == offset {
			return true
		}
	}
	return false
}
