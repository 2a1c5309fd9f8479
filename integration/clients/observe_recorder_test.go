package clients

// The request recorder of observe_test.go. kfake-only: it hooks kfake's
// request handling (Cluster.ControlKey, SleepControl), which minibroker does
// not have.

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// observedKeys are the requests the recorder keeps.
var observedKeys = []kmsg.Key{
	kmsg.Produce, kmsg.Fetch, kmsg.ListOffsets, kmsg.OffsetCommit,
	kmsg.JoinGroup, kmsg.InitProducerID, kmsg.ConsumerGroupHeartbeat,
}

// committedPartition is one partition of an OffsetCommit request, with the
// request fields around it.
type committedPartition struct {
	Version    int16
	Group      string
	Generation int32 // the member epoch on the consumer protocol
	MemberID   string
	Partition  int32
	Offset     int64
	Epoch      int32 // the committed leader epoch
	Metadata   string
}

func (c committedPartition) String() string {
	return fmt.Sprintf("OffsetCommit v%d group=%s generation=%d member=%q partition=%d offset=%d leaderEpoch=%d metadata=%q",
		c.Version, c.Group, c.Generation, c.MemberID, c.Partition, c.Offset, c.Epoch, c.Metadata)
}

// recorder keeps the observed requests of one cluster, each labelled with
// the phase the test was in when it arrived. Safe for concurrent use.
type recorder struct {
	mu       sync.Mutex // guards the fields below
	phase    string
	versions map[string][]int16 // "phase/request name" -> versions, in order
	commits  []committedPartition
	// partitions: "phase/request name" -> partition -> the fetch offsets
	// (Fetch) or timestamps (ListOffsets) asked for
	partitions map[string]map[int32][]int64
	hold       chan struct{}      // non-nil: fetches sleep until it closes
	acks       map[string][]int16 // phase -> the distinct Acks of its Produce requests
	produced   map[string]int     // phase -> records in its Produce requests
}

// record installs a recorder on c: one control function per observed key
// that records the request and returns not handled, so that kfake keeps the
// function and answers the request itself. While hold is set, fetches also
// sleep (SleepControl: other connections go on) until it is closed.
func record(c *kfake.Cluster) *recorder {
	r := &recorder{
		versions:   make(map[string][]int16),
		partitions: make(map[string]map[int32][]int64),
		acks:       make(map[string][]int16),
		produced:   make(map[string]int),
	}
	for _, key := range observedKeys {
		c.ControlKey(key.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
			if hold := r.add(req); hold != nil {
				c.SleepControl(func() { <-hold })
			}
			return nil, nil, false
		})
	}
	return r
}

func (r *recorder) setPhase(p string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phase = p
}

// holdFetches makes every fetch from now on wait; the returned release
// lets them go on.
func (r *recorder) holdFetches() (release func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hold := make(chan struct{})
	r.hold = hold
	return sync.OnceFunc(func() {
		r.mu.Lock()
		r.hold = nil
		r.mu.Unlock()
		close(hold)
	})
}

// add records req and returns the hold channel if req is a fetch to hold.
func (r *recorder) add(req kmsg.Request) chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.phase + "/" + kmsg.NameForKey(req.Key())
	r.versions[k] = append(r.versions[k], req.GetVersion())
	switch req := req.(type) {
	case *kmsg.ProduceRequest:
		if !slices.Contains(r.acks[r.phase], req.Acks) {
			r.acks[r.phase] = append(r.acks[r.phase], req.Acks)
		}
		for _, tp := range req.Topics {
			for _, p := range tp.Partitions {
				r.produced[r.phase] += countRecords(p.Records)
			}
		}
	case *kmsg.OffsetCommitRequest:
		for _, tp := range req.Topics {
			for _, p := range tp.Partitions {
				md := ""
				if p.Metadata != nil {
					md = *p.Metadata
				}
				r.commits = append(r.commits, committedPartition{
					req.Version, req.Group, req.Generation, req.MemberID,
					p.Partition, p.Offset, p.LeaderEpoch, md,
				})
			}
		}
	case *kmsg.FetchRequest:
		for _, tp := range req.Topics {
			for _, p := range tp.Partitions {
				r.addPartition(k, p.Partition, p.FetchOffset)
			}
		}
		return r.hold
	case *kmsg.ListOffsetsRequest:
		for _, tp := range req.Topics {
			for _, p := range tp.Partitions {
				r.addPartition(k, p.Partition, p.Timestamp)
			}
		}
	}
	return nil
}

func (r *recorder) addPartition(k string, p int32, v int64) {
	m := r.partitions[k]
	if m == nil {
		m = make(map[int32][]int64)
		r.partitions[k] = m
	}
	m[p] = append(m[p], v)
}

// versionsIn returns, per request name, the distinct versions sent in the
// phases keep accepts, sorted.
func (r *recorder) versionsIn(keep func(phase string) bool) map[string][]int16 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]int16)
	for k, vs := range r.versions {
		phase, name, _ := strings.Cut(k, "/")
		if !keep(phase) {
			continue
		}
		for _, v := range vs {
			if !slices.Contains(out[name], v) {
				out[name] = append(out[name], v)
			}
		}
		slices.Sort(out[name])
	}
	return out
}

// countRecords counts the records of the v2 record batches in raw.
func countRecords(raw []byte) int {
	n := 0
	for len(raw) > 0 {
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw); err != nil {
			return n
		}
		n += int(b.NumRecords)
		raw = raw[min(len(raw), 12+int(b.Length)):] // base offset and length precede Length bytes
	}
	return n
}

// producedIn is how many records phase's Produce requests carried.
func (r *recorder) producedIn(phase string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.produced[phase]
}

// acksIn returns the distinct Acks of phase's Produce requests.
func (r *recorder) acksIn(phase string) []int16 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.acks[phase])
}

// count is how many requests named name arrived in phase.
func (r *recorder) count(phase, name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.versions[phase+"/"+name])
}

// memberCommits returns the commits to group sent by a member (kadm's
// direct commits carry an empty member id).
func (r *recorder) memberCommits(group string) []committedPartition {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []committedPartition
	for _, c := range r.commits {
		if c.Group == group && c.MemberID != "" {
			out = append(out, c)
		}
	}
	return out
}

// fetched counts, per partition, the fetches of phase that pred accepts.
func (r *recorder) fetched(phase string, pred func(p int32, offset int64) bool) map[int32]int {
	return r.asked(phase, "Fetch", pred)
}

// asked counts, per partition, the partitions of name requests in phase
// that pred accepts.
func (r *recorder) asked(phase, name string, pred func(p int32, v int64) bool) map[int32]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[int32]int)
	for p, offs := range r.partitions[phase+"/"+name] {
		for _, o := range offs {
			if pred(p, o) {
				out[p]++
			}
		}
	}
	return out
}
