package clients

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kv is one record a test produces.
type kv struct{ Key, Value []byte }

// makeRecords returns n records numbered from: key "key-NNN", value
// "value-NNN", so that every record is unique and its value names its index.
func makeRecords(from, n int) []kv {
	out := make([]kv, n)
	for i := range out {
		out[i] = kv{
			Key:   fmt.Appendf(nil, "key-%03d", from+i),
			Value: fmt.Appendf(nil, "value-%03d", from+i),
		}
	}
	return out
}

// indexOf is the index a value of makeRecords carries, or -1.
func indexOf(value []byte) int {
	n, err := strconv.Atoi(strings.TrimPrefix(string(value), "value-"))
	if err != nil {
		return -1
	}
	return n
}

// stored is one record as a plain kgo consumer reads it back.
type stored struct {
	Partition  int32
	Offset     int64
	Key, Value []byte
	// ProducerID is the batch's producer id: -1 unless the producer was
	// idempotent (or transactional).
	ProducerID int64
}

// readTopic waits until topic's end offsets add up to total (a producer
// with acks=0 returns before the broker has appended), then reads every
// record up to them with a plain kgo consumer (no group, no commits): the
// neutral view of what a producer wrote. Records come back sorted by
// partition, then offset.
func readTopic(t *testing.T, addr string, adm *kadm.Client, topic string, total int) []stored {
	t.Helper()
	var ends map[int32]int64
	poll(t, fmt.Sprintf("%d records in %s", total, topic), func(context.Context) (bool, string) {
		ends = endOffsets(t, adm, topic)
		sum := int64(0)
		for _, o := range ends {
			sum += o
		}
		return sum >= int64(total), fmt.Sprintf("end offsets %v", ends)
	})
	from := make(map[int32]kgo.Offset)
	left := 0
	for p, end := range ends {
		if end > 0 {
			from[p] = kgo.NewOffset().AtStart()
			left++
		}
	}
	var out []stored
	if left == 0 {
		return out
	}
	log := newClientLog(t, "kgo reader")
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.WithLogger(kgoLogger(log, kgo.LogLevelInfo)),
	)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	for left > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s back: %v; have %d records, ends %v", topic, ctx.Err(), len(out), ends)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("reading %s/%d back: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= ends[r.Partition] {
				return
			}
			out = append(out, stored{r.Partition, r.Offset, r.Key, r.Value, r.ProducerID})
			if r.Offset == ends[r.Partition]-1 {
				left--
			}
		})
	}
	slices.SortFunc(out, func(a, b stored) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	return out
}

// checkStored checks that topic holds exactly want: every record once with
// its value byte-identical, and within each partition in the order produced.
// It returns the records by key.
func checkStored(t *testing.T, got []stored, want []kv) map[string]stored {
	t.Helper()
	wantValue := make(map[string][]byte, len(want))
	for _, r := range want {
		wantValue[string(r.Key)] = r.Value
	}
	byKey := make(map[string]stored, len(got))
	last := make(map[int32]int)
	for _, s := range got {
		v, ok := wantValue[string(s.Key)]
		switch {
		case !ok:
			t.Fatalf("%d/%d holds key %q that was not produced", s.Partition, s.Offset, s.Key)
		case !bytes.Equal(v, s.Value):
			t.Fatalf("%d/%d key %q holds value %q, produced %q", s.Partition, s.Offset, s.Key, s.Value, v)
		}
		if prev, dup := byKey[string(s.Key)]; dup {
			t.Fatalf("key %q stored twice: %d/%d and %d/%d", s.Key, prev.Partition, prev.Offset, s.Partition, s.Offset)
		}
		byKey[string(s.Key)] = s
		if i, ok := last[s.Partition]; ok && indexOf(s.Value) < i {
			t.Fatalf("partition %d: %q stored after value-%03d", s.Partition, s.Value, i)
		}
		last[s.Partition] = indexOf(s.Value)
	}
	if len(byKey) != len(want) {
		t.Fatalf("topic holds %d of the %d records produced", len(byKey), len(want))
	}
	return byKey
}

// consumed is one record as a client under test handed it to the
// application.
type consumed struct {
	Member     string // client id of the member that received it
	Partition  int32
	Offset     int64
	Key, Value []byte
}

// ledger collects what the members of one group consume, in the order they
// hand records over. Safe for concurrent use.
type ledger struct {
	mu      sync.Mutex // guards recs and changed
	recs    []consumed
	changed chan struct{} // closed and replaced on every add
}

func newLedger() *ledger { return &ledger{changed: make(chan struct{})} }

func (l *ledger) add(c consumed) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, c)
	close(l.changed)
	l.changed = make(chan struct{})
}

// all returns a copy of every record so far.
func (l *ledger) all() []consumed {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.recs)
}

// wait waits until the ledger holds at least n records and returns them.
func (l *ledger) wait(t *testing.T, n int) []consumed {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	for {
		l.mu.Lock()
		have, changed := len(l.recs), l.changed
		l.mu.Unlock()
		if have >= n {
			return l.all()
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("consumed %d of %d records within %v", have, n, waitTimeout)
		}
	}
}

// checkConsumed checks every-record-exactly-once delivery: within each
// partition the records came in offset order, each stored record exactly
// once, no gap, none extra, keys and values byte-identical to what the
// broker stores.
func checkConsumed(t *testing.T, got []consumed, want []stored) {
	t.Helper()
	wantByPart := make(map[int32][]stored)
	for _, s := range want {
		wantByPart[s.Partition] = append(wantByPart[s.Partition], s)
	}
	gotByPart := make(map[int32][]consumed)
	for _, c := range got {
		gotByPart[c.Partition] = append(gotByPart[c.Partition], c)
	}
	for p, cs := range gotByPart {
		if _, ok := wantByPart[p]; !ok {
			t.Errorf("partition %d: consumed %d records from a partition that holds none", p, len(cs))
		}
	}
	for p, ws := range wantByPart {
		cs := gotByPart[p]
		for i, w := range ws {
			if i >= len(cs) {
				t.Errorf("partition %d: consumed %d of %d records; first missing offset %d", p, len(cs), len(ws), w.Offset)
				break
			}
			c := cs[i]
			if c.Offset != w.Offset {
				t.Errorf("partition %d: record %d has offset %d, want %d (duplicate, gap or reorder); offsets %v", p, i, c.Offset, w.Offset, offsetsOf(cs))
				break
			}
			if !bytes.Equal(c.Key, w.Key) || !bytes.Equal(c.Value, w.Value) {
				t.Errorf("partition %d offset %d: consumed %q=%q, stored %q=%q", p, c.Offset, c.Key, c.Value, w.Key, w.Value)
			}
		}
		if len(cs) > len(ws) {
			t.Errorf("partition %d: consumed %d records, the partition holds %d; offsets %v", p, len(cs), len(ws), offsetsOf(cs))
		}
	}
}

func offsetsOf(cs []consumed) []int64 {
	out := make([]int64, len(cs))
	for i, c := range cs {
		out[i] = c.Offset
	}
	return out
}

// nextOffsets is, per partition, the last consumed offset + 1: what a
// consumer that commits what it consumed leaves committed.
func nextOffsets(got []consumed) map[int32]int64 {
	out := make(map[int32]int64)
	for _, c := range got {
		out[c.Partition] = max(out[c.Partition], c.Offset+1)
	}
	return out
}

// checkOwners checks that every record of recs from index from on was
// consumed by the member that split assigns its partition to.
func checkOwners(t *testing.T, recs []consumed, split map[string][]int32, from int) {
	t.Helper()
	owner := make(map[int32]string)
	for id, ps := range split {
		for _, p := range ps {
			owner[p] = id
		}
	}
	for _, c := range recs {
		if indexOf(c.Value) < from {
			continue
		}
		if owner[c.Partition] != c.Member {
			t.Errorf("%s (partition %d) consumed by %s, assigned to %s (split %v)", c.Value, c.Partition, c.Member, owner[c.Partition], split)
		}
	}
}
