package loadgen

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Kind is what a scenario's workers do.
type Kind int

// The scenario kinds.
const (
	// Heartbeat: each connection heartbeats its members in turn.
	Heartbeat Kind = iota
	// Commit: each connection commits the next offset of one of its
	// member's partitions (a durable commit on a server that has a disk).
	Commit
	// Fetch: each connection fetches one committed offset of its member's
	// group.
	Fetch
	// Churn: every connection is one member of one group that leaves and
	// joins again, over and over: rebalances/s and join latency.
	Churn
	// Members: join Groups x Members members once and measure the
	// server's memory afterwards.
	Members
	// Produce: Producers goroutines produce records of ValueBytes random
	// bytes through one stock kgo client (idempotent, acks all, snappy,
	// its default linger and batch size), each as fast as the client takes
	// them; latency is from Produce to the record's promise.
	Produce
	// ProduceSync: Producers goroutines, each producing one record and
	// waiting for it (kgo's ProduceSync) before the next.
	ProduceSync
	// Consume: the topic is filled with Prefill records once; each window
	// a new kgo consumer reads them all from the start.
	Consume
	// EndToEnd: a producer at Rate records/s (no linger) and a consumer
	// group member reading them; latency is from produce to poll.
	EndToEnd
)

// Records reports whether the kind drives a kgo client over the topic's
// records rather than raw group requests.
func (k Kind) Records() bool { return k >= Produce }

func (k Kind) String() string {
	switch k {
	case Heartbeat:
		return "heartbeat"
	case Commit:
		return "commit"
	case Fetch:
		return "fetch"
	case Churn:
		return "churn"
	case Members:
		return "members"
	case Produce:
		return "produce"
	case ProduceSync:
		return "produce-sync"
	case Consume:
		return "consume"
	case EndToEnd:
		return "end-to-end"
	}
	if name, ok := txnKindName(k); ok {
		return name
	}
	return fmt.Sprintf("kind%d", int(k))
}

// Scenario is one workload. Zero fields take the defaults of Normalize.
type Scenario struct {
	Name  string
	Kind  Kind
	Conns int // connections, one worker goroutine each
	// Groups and Members: Groups groups of Members members each. During
	// the run, connection c drives members c, c+Conns, ... (and shares
	// members with other connections when there are fewer members than
	// connections).
	Groups  int
	Members int
	// Partitions of Topic, the topic every member subscribes to.
	Partitions int
	Topic      string
	// InFlight is how many requests each connection keeps in flight
	// (pipelining depth); default 1.
	InFlight int
	Warmup   time.Duration
	Duration time.Duration
	// SessionTimeout of every member; default 60 s, so that nobody
	// expires during a run.
	SessionTimeout time.Duration
	// GroupPrefix names the groups: <prefix>-<n>; default the Name.
	GroupPrefix string
	// Servers, if set, restricts the scenario to these target names.
	Servers []string
	// The records kinds: ValueBytes is each record's value (default
	// 100), Producers the goroutines producing through one client
	// (default 8; EndToEnd uses one), Prefill the records Consume reads
	// (default 100,000), Rate the records per second EndToEnd produces
	// (default 1,000).
	ValueBytes int
	Producers  int
	Prefill    int
	Rate       int
	// TxnRecords is the records per transaction of the transactional
	// kinds (default 1).
	TxnRecords int
}

// Normalize fills defaults and checks the shape.
func (sc *Scenario) Normalize() error {
	if sc.Conns <= 0 {
		sc.Conns = 1
	}
	if sc.Groups <= 0 {
		sc.Groups = 1
	}
	if sc.Members <= 0 {
		sc.Members = 1
	}
	if sc.Partitions <= 0 {
		sc.Partitions = 16
	}
	if sc.Topic == "" {
		sc.Topic = "bench"
	}
	if sc.InFlight <= 0 {
		sc.InFlight = 1
	}
	if sc.Duration <= 0 {
		sc.Duration = 2 * time.Second
	}
	if sc.Warmup < 0 {
		sc.Warmup = 0
	}
	if sc.SessionTimeout <= 0 {
		sc.SessionTimeout = 60 * time.Second
	}
	if sc.GroupPrefix == "" {
		sc.GroupPrefix = sc.Name
	}
	if sc.ValueBytes <= 0 {
		sc.ValueBytes = 100
	}
	if sc.Producers <= 0 {
		sc.Producers = 8
	}
	if sc.Prefill <= 0 {
		sc.Prefill = 100_000
	}
	if sc.Rate <= 0 {
		sc.Rate = 1_000
	}
	if sc.TxnRecords <= 0 {
		sc.TxnRecords = 1
	}
	if sc.Kind == EndToEnd && sc.ValueBytes < e2eHeader {
		return fmt.Errorf("loadgen: %s: end-to-end values carry a %d-byte header", sc.Name, e2eHeader)
	}
	if sc.ValueBytes > valueRegionBytes {
		return fmt.Errorf("loadgen: %s: values of at most %d bytes", sc.Name, valueRegionBytes)
	}
	if sc.Kind != Members && sc.Kind != Churn && sc.Members > sc.Conns {
		return fmt.Errorf("loadgen: %s: %d members per group need as many connections to join at once, have %d", sc.Name, sc.Members, sc.Conns)
	}
	if sc.Kind == Commit && sc.Members > sc.Partitions {
		return fmt.Errorf("loadgen: %s: every member needs a partition to commit", sc.Name)
	}
	return nil
}

// group returns the name of group i.
func (sc *Scenario) group(i int) string { return fmt.Sprintf("%s-%d", sc.GroupPrefix, i) }

// expected reports whether code is part of the scenario's normal flow.
// Everything else is counted as unexpected.
func (sc *Scenario) expected(code int16) bool {
	if sc.Kind != Churn {
		return false
	}
	switch code {
	case kerr.MemberIDRequired.Code, kerr.RebalanceInProgress.Code, kerr.IllegalGeneration.Code:
		return true
	}
	return false
}

// RunsOn reports whether the scenario runs against the named server.
func (sc *Scenario) RunsOn(server string) bool {
	if len(sc.Servers) == 0 {
		return true
	}
	for _, s := range sc.Servers {
		if s == server {
			return true
		}
	}
	return false
}
