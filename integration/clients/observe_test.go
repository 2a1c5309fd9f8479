package clients

// What each client sends, recorded on the broker side. kfake-only: this file
// hooks kfake's request handling (Cluster.ControlKey, SleepControl) through
// the recorder in observe_recorder_test.go, which minibroker does not have,
// so it keeps calling startKfake after startBroker switches to minibroker.
// Per client it documents the request versions it sends (within kfake's
// advertised ranges), whether its default producer is idempotent, and what
// it commits after its fetch position falls out of range and it resets.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// oorMode is how a case puts a member's position out of range.
type oorMode int

const (
	// commitPastEnd: kadm commits offset pastEnd, above every log end,
	// before the member joins.
	commitPastEnd oorMode = iota
	// commitBelowStart: every log start moves to its end - 1 and kadm
	// commits offset 0, below it, before the member joins.
	commitBelowStart
	// movedUnderFetch: kadm commits each log start, in range when the
	// member reads it; the member's first fetches are held while the log
	// start moves to the end - 1, then answered: the fetch position falls
	// out of range under a running consumer, as when retention deletes
	// what it has not read yet.
	movedUnderFetch
)

// pastEnd is the commitPastEnd offset.
const pastEnd = 1000

// stallAttempts is how many fetches at the bad offset or offset listings of
// one partition, with nothing consumed, make a member stalled: the clients
// that reset do it within a few.
const stallAttempts = 10

// oorCase is one out-of-range case: a mode and the member's reset policy.
type oorCase struct {
	name   string
	mode   oorMode
	policy string
	// idle: the member leaves right after its reset, with no record to
	// read at its new position (latest: nothing is produced after it;
	// earliest: the log start moves to the end, emptying the partition).
	// Otherwise it reads one record per partition first.
	idle bool
}

var oorCases = []oorCase{
	{"past-end-earliest", commitPastEnd, "earliest", false},
	{"past-end-latest", commitPastEnd, "latest", false},
	{"past-end-latest-idle", commitPastEnd, "latest", true},
	{"below-start-earliest", commitBelowStart, "earliest", false},
	{"below-start-earliest-empty", commitBelowStart, "earliest", true},
	{"below-start-latest", commitBelowStart, "latest", false},
	{"below-start-latest-idle", commitBelowStart, "latest", true},
	{"moved-earliest", movedUnderFetch, "earliest", false},
	{"moved-earliest-empty", movedUnderFetch, "earliest", true},
	{"moved-latest", movedUnderFetch, "latest", false},
	{"moved-latest-idle", movedUnderFetch, "latest", true},
}

// oorResult is what one member did in one case.
type oorResult struct {
	stalled  bool // it kept retrying at the bad offset, consuming nothing
	consumed int  // records it handed over
	// fromStart: in a latest case, it handed over records written before
	// its reset (it read from the log start instead)
	fromStart bool
	bad       map[int32]int64      // the group's commits before it joined
	next      map[int32]int64      // per partition, last consumed + 1
	commits   []committedPartition // its OffsetCommit partitions
	after     map[int32]int64      // the group's commits once it left
}

// negative lists the partitions and offsets of the negative commits.
func (r oorResult) negative() []string {
	var out []string
	for _, c := range r.commits {
		if c.Offset < 0 {
			out = append(out, fmt.Sprintf("%d:%d", c.Partition, c.Offset))
		}
	}
	return out
}

func (r oorResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "stalled=%v consumed=%d commit before=%v after=%v", r.stalled, r.consumed, r.bad, r.after)
	for _, c := range r.commits {
		fmt.Fprintf(&b, "\n\t\t%s", c)
	}
	return b.String()
}

// observeOutOfRange runs one case for oc in a fresh group: it puts the
// position out of range as cs.mode says, starts one member with cs.policy,
// waits until the member has reset and consumed (earliest: what the log
// holds from its start; latest: one record per partition produced after the
// member fetched at the log end) or has stalled, stops it, and returns what
// it committed.
func observeOutOfRange(t *testing.T, oc observedClient, rec *recorder, adm *kadm.Client, addr string, cs oorCase) oorResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	admin, phase := "admin-"+cs.name, "oor-"+cs.name
	group := oc.name + "-" + cs.name
	rec.setPhase(admin)
	produceOnePerPartition(t, addr, "pad")
	produceOnePerPartition(t, addr, "pad")
	starts, ends := startOffsets(t, adm), endOffsets(t, adm, topic)
	empty := cs.idle && cs.policy == "earliest"
	moveStarts := func() {
		var del kadm.Offsets
		for p, end := range ends {
			if !empty {
				end--
			}
			del.Add(kadm.Offset{Topic: topic, Partition: p, At: end})
		}
		if _, err := adm.DeleteRecords(ctx, del); err != nil {
			t.Fatalf("DeleteRecords: %v", err)
		}
	}
	res := oorResult{bad: make(map[int32]int64)}
	want := 0                          // what an earliest reset reads
	newStarts := make(map[int32]int64) // the log starts the member resets against
	for p, end := range ends {
		newStarts[p] = end - 1
		if empty {
			newStarts[p] = end
		}
		switch cs.mode {
		case commitPastEnd:
			newStarts[p] = starts[p]
			res.bad[p] = pastEnd
			want += int(end - starts[p])
		case commitBelowStart:
			res.bad[p] = 0
			want++
		case movedUnderFetch:
			res.bad[p] = starts[p]
			want++
		}
	}
	if empty {
		want = 0
	}
	if cs.mode == commitBelowStart {
		moveStarts()
	}
	var commit kadm.Offsets
	for p, o := range res.bad {
		commit.Add(kadm.Offset{Topic: topic, Partition: p, At: o, LeaderEpoch: -1})
	}
	if err := adm.CommitAllOffsets(ctx, group, commit); err != nil {
		t.Fatalf("commit %v for %s: %v", res.bad, group, err)
	}

	rec.setPhase(phase)
	l := newLedger()
	release := func() {}
	if cs.mode == movedUnderFetch {
		rec.setPhase(phase + "-join")
		release = rec.holdFetches()
		defer release()
	}
	leave := oc.reset(cs.policy)(t, addr, group, topic, group, l)
	if cs.mode == movedUnderFetch {
		// Some clients have one fetch in flight per broker, with the
		// partitions that were ready: the rest fetch after the move.
		poll(t, group+" fetching at its commits", func(context.Context) (bool, string) {
			at := rec.fetched(phase+"-join", func(p int32, o int64) bool { return o == res.bad[p] })
			return len(at) > 0, fmt.Sprintf("fetches at %v: %v", res.bad, at)
		})
		rec.setPhase(admin)
		moveStarts()
		rec.setPhase(phase)
		release()
	}

	// Stalled: nothing consumed, and some partition asked about (fetched at
	// the bad offset, or listed) stallAttempts times since the position
	// went out of range, and never fetched where the reset puts it (the
	// new log start under earliest, the end under latest). A client that
	// resets retries more on a loaded machine (kafka-go lists offsets
	// again after each fetch that times out), but it gets there.
	resetTo := ends
	if cs.policy == "earliest" {
		resetTo = newStarts
	}
	stalled := func() bool {
		if len(l.all()) > 0 {
			return false
		}
		reset := rec.fetched(phase, func(p int32, o int64) bool { return o == resetTo[p] })
		n := rec.asked(phase, "ListOffsets", func(int32, int64) bool { return true })
		for p, c := range rec.fetched(phase, func(p int32, o int64) bool { return o == res.bad[p] }) {
			n[p] += c
		}
		for p, c := range n {
			if c >= stallAttempts && reset[p] == 0 {
				return true
			}
		}
		return false
	}
	if cs.policy == "earliest" && !cs.idle {
		poll(t, group+" reset to earliest, or stalled", func(context.Context) (bool, string) {
			res.stalled = stalled()
			return res.stalled || len(l.all()) >= want, fmt.Sprintf("consumed %d of %d", len(l.all()), want)
		})
	} else {
		// A reset with nothing to read shows only as fetches at the log
		// end. A member that fetched below the end after all (reading
		// from the log start) must also have handed those records over:
		// leaving while the client still delivers them would race its
		// commit with its delivery.
		poll(t, group+" reset to the log end, or stalled", func(context.Context) (bool, string) {
			res.stalled = stalled()
			at := rec.fetched(phase, func(p int32, o int64) bool { return o == ends[p] })
			next := nextOffsets(l.all())
			for p, end := range ends {
				read := rec.fetched(phase, func(q int32, o int64) bool { return q == p && o >= newStarts[p] && o < end })
				if read[p] > 0 && next[p] != end {
					return false, fmt.Sprintf("partition %d fetched from %d, handed over up to %d of %d", p, newStarts[p], next[p], end)
				}
			}
			return res.stalled || len(at) == len(ends), fmt.Sprintf("fetches at the ends %v: %v", ends, at)
		})
		if !res.stalled && !cs.idle {
			rec.setPhase(admin)
			produceOnePerPartition(t, addr, "late")
			rec.setPhase(phase)
			poll(t, group+" reading the late records", func(context.Context) (bool, string) {
				n := 0
				for _, r := range l.all() {
					if string(r.Key) == "late" {
						n++
					}
				}
				return n == len(ends), fmt.Sprintf("%d of %d late records", n, len(ends))
			})
		}
	}
	leave()
	got := l.all()
	res.consumed = len(got)
	res.next = nextOffsets(got)
	for _, r := range got {
		res.fromStart = res.fromStart || (cs.policy == "latest" && string(r.Key) != "late")
	}
	res.commits = rec.memberCommits(group)
	rec.setPhase(admin)
	res.after = committed(t, adm, group, topic)
	return res
}

// startOffsets lists topic's log start offsets.
func startOffsets(t *testing.T, adm *kadm.Client) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	listed, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListStartOffsets: %v", err)
	}
	out := make(map[int32]int64)
	for p, o := range listed[topic] {
		out[p] = o.Offset
	}
	return out
}

// produceOnePerPartition writes one record, keyed key, to each partition of
// topic with kgo.
func produceOnePerPartition(t *testing.T, addr, key string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	var recs []*kgo.Record
	for p := range int32(partitions) {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(key), Value: fmt.Appendf(nil, "value-%03d", 900+p)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("kgo produce: %v", err)
	}
}

// observedClient is one client as the observation runs it.
type observedClient struct {
	client
	// produceIdempotent produces with the client's idempotent mode; nil if
	// the client has none.
	produceIdempotent func(t *testing.T, addr, topic string, recs []kv)
}

// observation is what observe recorded for one client.
type observation struct {
	versions            map[string][]int16 // the client's own phases, per request name
	idempotentByDefault bool               // the default producer sent InitProducerId
	acks                []int16            // the default producer's Acks
	results             map[string]oorResult
}

// observe runs the phases for one client: its default producer, its
// idempotent producer, a one-member group that reads everything, then every
// out-of-range case.
func observe(t *testing.T, oc observedClient) observation {
	c := startKfake(t, map[string]int32{topic: partitions})
	rec := record(c)
	addr := c.ListenAddrs()[0]
	adm := newAdmin(t, addr)

	// A phase ends once the broker has seen its records: an acks=0
	// producer returns before that.
	producePhase := func(phase string, produce func(t *testing.T, addr, topic string, recs []kv), recs []kv) {
		rec.setPhase(phase)
		produce(t, addr, topic, recs)
		poll(t, phase+" records reaching the broker", func(context.Context) (bool, string) {
			n := rec.producedIn(phase)
			return n >= len(recs), fmt.Sprintf("%d of %d", n, len(recs))
		})
	}
	total := 40
	producePhase("produce", oc.produce, makeRecords(0, 40))
	if oc.produceIdempotent != nil {
		producePhase("produce-idempotent", oc.produceIdempotent, makeRecords(40, 40))
		total += 40
	}
	rec.setPhase("consume")
	l := newLedger()
	leave := oc.join(t, addr, oc.name+"-observe", topic, oc.name+"-observe", l)
	l.wait(t, total)
	leave()
	for _, c := range rec.memberCommits(oc.name + "-observe") {
		if c.Offset < 0 {
			t.Errorf("a fresh group's member committed a negative offset: %s", c)
		}
	}

	o := observation{results: make(map[string]oorResult)}
	for _, cs := range oorCases {
		o.results[cs.name] = observeOutOfRange(t, oc, rec, adm, addr, cs)
	}
	o.versions = rec.versionsIn(func(phase string) bool { return !strings.HasPrefix(phase, "admin") })
	o.idempotentByDefault = rec.count("produce", "InitProducerID") > 0
	o.acks = rec.acksIn("produce")
	return o
}

// observedFacts is what TestObserveClients asserts about one client.
type observedFacts struct {
	// versions: per request name, the versions the client sent (against
	// kfake's ranges).
	versions map[string][]int16
	// idempotentByDefault: its default producer sent InitProducerId.
	idempotentByDefault bool
	// acks: the Acks of its default producer's Produce requests.
	acks int16
	// stalls: the out-of-range cases in which the member never resets and
	// keeps retrying at the bad offset.
	stalls []string
	// keepsCommit: the cases in which the member consumes after its reset
	// but never commits, leaving the out-of-range commit in place.
	keepsCommit []string
	// latestFromStart: the latest-policy cases in which the member reads
	// from the log start anyway.
	latestFromStart []string
}

// TestObserveClients records what each client sends and asserts the facts
// below. In every case and for every client it also asserts that no member
// commits a negative offset: none of these clients commits the reset
// sentinel (-1 or -2) after a reset, in any of the out-of-range cases. A
// member that reads after its reset commits the last offset read + 1; one
// that reads nothing commits nothing, leaving the out-of-range commit.
// kfake-only (see the file comment).
func TestObserveClients(t *testing.T) {
	t.Parallel()
	idempotent := kafka.ConfigMap{"enable.idempotence": true}
	for _, tc := range []struct {
		oc   observedClient
		want observedFacts
	}{
		{observedClient{kgoClient(), kgoProduce}, observedFacts{
			versions: map[string][]int16{
				"Produce": {13}, "InitProducerID": {5}, "Fetch": {18}, "ListOffsets": {10},
				"OffsetCommit": {10}, "JoinGroup": {9},
			},
			idempotentByDefault: true,
			acks:                -1,
		}},
		{observedClient{saramaClient(), saramaProduce(saramaIdempotent)}, observedFacts{
			versions: map[string][]int16{
				"Produce": {9}, "InitProducerID": {4}, "Fetch": {12}, "ListOffsets": {6},
				"OffsetCommit": {8}, "JoinGroup": {7},
			},
			// sarama's offset manager marks only offsets above the one
			// it fetched (1000): it reads everything again and commits
			// none of it.
			keepsCommit: []string{"past-end-earliest", "past-end-latest"},
			acks:        1,
		}},
		{observedClient{kafkagoClient(), nil}, observedFacts{
			// No InitProducerId: kafka-go has no idempotent producer.
			versions: map[string][]int16{
				"Produce": {8}, "Fetch": {10}, "ListOffsets": {1}, "OffsetCommit": {2}, "JoinGroup": {2},
			},
			// Past the end, kafka-go's reader lists offsets and retries
			// forever ("reading beyond the last offset"); below the
			// start it skips to the first offset, whatever StartOffset
			// says (StartOffset only applies without a commit).
			stalls:          []string{"past-end-earliest", "past-end-latest", "past-end-latest-idle"},
			latestFromStart: []string{"below-start-latest", "below-start-latest-idle", "moved-latest", "moved-latest-idle"},
			acks:            0,
		}},
		{observedClient{rdkafkaClient(), rdkafkaProduce(idempotent)}, observedFacts{
			versions: map[string][]int16{
				"Produce": {10}, "InitProducerID": {4}, "Fetch": {16}, "ListOffsets": {7},
				"OffsetCommit": {9}, "JoinGroup": {5},
			},
			acks: -1,
		}},
		{observedClient{rdkafka848Client(), rdkafkaProduce(idempotent)}, observedFacts{
			// KIP-848: ConsumerGroupHeartbeat instead of JoinGroup.
			versions: map[string][]int16{
				"Produce": {10}, "InitProducerID": {4}, "Fetch": {16}, "ListOffsets": {7},
				"OffsetCommit": {9}, "ConsumerGroupHeartbeat": {1},
			},
			acks: -1,
		}},
		{observedClient{kcatClient(), kcatProduce("enable.idempotence=true")}, observedFacts{
			// kcat's librdkafka is 2.0.2: older versions than 2.11's.
			versions: map[string][]int16{
				"Produce": {7}, "InitProducerID": {4}, "Fetch": {11}, "ListOffsets": {2},
				"OffsetCommit": {7}, "JoinGroup": {5},
			},
			acks: -1,
		}},
	} {
		t.Run(tc.oc.name, func(t *testing.T) {
			t.Parallel()
			if tc.oc.name == "kcat" {
				kcatPath(t)
			}
			o := observe(t, tc.oc)
			results := o.results
			if !maps.EqualFunc(o.versions, tc.want.versions, slices.Equal) {
				t.Errorf("versions %v, want %v", o.versions, tc.want.versions)
			}
			if o.idempotentByDefault != tc.want.idempotentByDefault {
				t.Errorf("default producer sent InitProducerId: %v, want %v", o.idempotentByDefault, tc.want.idempotentByDefault)
			}
			if !slices.Equal(o.acks, []int16{tc.want.acks}) {
				t.Errorf("default producer's acks %v, want %d", o.acks, tc.want.acks)
			}
			var stalls, keeps, fromStart []string
			for _, cs := range oorCases {
				r := results[cs.name]
				t.Logf("%s: %s", cs.name, r)
				if neg := r.negative(); len(neg) > 0 {
					t.Errorf("%s: negative commits (partition:offset) %v:\n%s", cs.name, neg, r)
				}
				if r.stalled {
					stalls = append(stalls, cs.name)
				}
				if r.fromStart {
					fromStart = append(fromStart, cs.name)
				}
				switch {
				case r.consumed > 0 && maps.Equal(r.after, r.bad):
					keeps = append(keeps, cs.name)
				case r.consumed > 0 && !maps.Equal(r.after, r.next):
					t.Errorf("%s: committed %v after reading up to %v", cs.name, r.after, r.next)
				case r.consumed == 0 && !maps.Equal(r.after, r.bad):
					t.Errorf("%s: committed %v after reading nothing, had %v", cs.name, r.after, r.bad)
				}
			}
			for _, c := range []struct {
				what      string
				got, want []string
			}{
				{"stalls", stalls, tc.want.stalls},
				{"keeps the out-of-range commit", keeps, tc.want.keepsCommit},
				{"reads from the start under latest", fromStart, tc.want.latestFromStart},
			} {
				if !slices.Equal(c.got, c.want) {
					t.Errorf("%s in %v, want %v", c.what, c.got, c.want)
				}
			}
		})
	}
}
