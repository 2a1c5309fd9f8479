package admin

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/minibroker/minibroker/txn"
)

// Transactions is what the API reads of the transaction coordinator.
// *txn.Coordinator implements it.
type Transactions interface {
	Views() []txn.View
	Stats() txn.Stats
}

var _ Transactions = (*txn.Coordinator)(nil)

// transactionsJSON answers GET /v1/transactions.
type transactionsJSON struct {
	Now          string            `json:"now"`
	NowMS        int64             `json:"now_ms"`
	Transactions []transactionJSON `json:"transactions"`
	Open         int               `json:"open"`
	Committed    int64             `json:"committed"`
	Aborted      int64             `json:"aborted"`
	TimedOut     int64             `json:"timed_out"`
}

// transactionJSON is one transactional id: its producer, its state, and
// the open transaction's partitions, groups and staged offsets.
type transactionJSON struct {
	TransactionalID string             `json:"transactional_id"`
	ProducerID      int64              `json:"producer_id"`
	Epoch           int16              `json:"epoch"`
	State           string             `json:"state"`
	TimeoutMS       int64              `json:"timeout_ms"`
	Partitions      []txnPartitionJSON `json:"partitions"`
	Groups          []string           `json:"groups"`
	Staged          []stagedOffsetJSON `json:"staged_offsets"`
	AgeMS           *int64             `json:"age_ms"` // of the open transaction; null with none
	UpdatedMS       int64              `json:"updated_ms"`
}

type txnPartitionJSON struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

type stagedOffsetJSON struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// handleTransactions answers GET /v1/transactions: every transactional
// id, sorted, and the coordinator's counters. Without a transaction
// coordinator the list is empty.
func (s *Server) handleTransactions(w http.ResponseWriter, _ *http.Request) {
	now := s.now()
	out := transactionsJSON{Transactions: []transactionJSON{}}
	out.Now, out.NowMS = stamp(now)
	if s.txns == nil {
		writeJSON(w, http.StatusOK, out)
		return
	}
	staged := map[int64][]stagedOffsetJSON{}
	for _, v := range s.coord.TxnStagedViews() {
		for _, e := range v.Entries {
			staged[v.ProducerID] = append(staged[v.ProducerID], stagedOffsetJSON{Group: v.Group, Topic: e.Topic, Partition: e.Partition, Offset: e.Offset})
		}
	}
	for _, v := range s.txns.Views() {
		tj := transactionJSON{TransactionalID: v.TransactionalID, ProducerID: v.ProducerID, Epoch: v.Epoch,
			State: v.State.String(), TimeoutMS: v.Timeout.Milliseconds(), Groups: v.Groups,
			Partitions: []txnPartitionJSON{}, Staged: []stagedOffsetJSON{}, UpdatedMS: v.Updated.UnixMilli()}
		for _, tp := range v.Partitions {
			tj.Partitions = append(tj.Partitions, txnPartitionJSON{Topic: tp.Topic, Partition: tp.Partition})
		}
		if st := staged[v.ProducerID]; st != nil {
			tj.Staged = st
		}
		if !v.Started.IsZero() {
			age := max(now.Sub(v.Started), 0) / time.Millisecond
			ms := int64(age)
			tj.AgeMS = &ms
		}
		out.Transactions = append(out.Transactions, tj)
	}
	st := s.txns.Stats()
	out.Open, out.Committed, out.Aborted, out.TimedOut = st.Open, st.Committed, st.Aborted, st.TimedOut
	writeJSON(w, http.StatusOK, out)
}

// WatchTransactions adds the transaction coordinator's counters to the
// series, read at every scrape (one series per state: bounded labels):
//
//	minibroker_transactions_open              gauge
//	minibroker_transactions_total{outcome}    counter: committed, aborted, timed_out
func (m *Metrics) WatchTransactions(stats func() txn.Stats) {
	outcome := func(name string, v func(txn.Stats) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "minibroker_transactions_total",
			Help:        "Transactions ended, by outcome (timed_out: aborted by the expiry step, also counted as aborted).",
			ConstLabels: prometheus.Labels{"outcome": name}},
			func() float64 { return float64(v(stats())) })
	}
	m.registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "minibroker_transactions_open", Help: "Transactions Ongoing now."},
			func() float64 { return float64(stats().Open) }),
		outcome("committed", func(s txn.Stats) int64 { return s.Committed }),
		outcome("aborted", func(s txn.Stats) int64 { return s.Aborted }),
		outcome("timed_out", func(s txn.Stats) int64 { return s.TimedOut }),
	)
}
