package admin

// GET /v1/storage and the minibroker_offsets_* series: what the offsets
// store has done, failures included, so that a refused commit, a fold that
// keeps failing or a tail cut at start-up is never silent.

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/records"
)

// storageJSON answers GET /v1/storage.
type storageJSON struct {
	Offsets offsetsStorageJSON `json:"offsets"`
}

// offsetsStorageJSON is offsets.Stats.
type offsetsStorageJSON struct {
	Commits          int64  `json:"commits"`
	JournalBytes     int64  `json:"journal_bytes"`
	JournalSegments  int    `json:"journal_segments"`
	SnapshotBytes    int64  `json:"snapshot_bytes"`
	Folds            int64  `json:"folds"`
	FailedFolds      int64  `json:"failed_folds"`
	LastFoldError    string `json:"last_fold_error,omitempty"`
	RefusedCommits   int64  `json:"refused_commits"`
	CutTails         int64  `json:"cut_tails"`
	TempFilesRemoved int64  `json:"temp_files_removed"`
}

func offsetsStorage(st offsets.Stats) offsetsStorageJSON {
	out := offsetsStorageJSON{
		Commits: st.Commits, JournalBytes: st.JournalBytes, JournalSegments: st.Segments,
		SnapshotBytes: st.SnapshotBytes, Folds: st.Compactions, FailedFolds: st.FailedFolds,
		RefusedCommits: st.RefusedCommits, CutTails: st.CutTails, TempFilesRemoved: st.TempFilesRemoved,
	}
	if st.LastFoldError != nil {
		out.LastFoldError = st.LastFoldError.Error()
	}
	return out
}

func (s *Server) handleStorage(w http.ResponseWriter, _ *http.Request) {
	var out storageJSON
	if s.offsetStats != nil {
		out.Offsets = offsetsStorage(s.offsetStats())
	}
	writeJSON(w, http.StatusOK, out)
}

// WatchOffsets adds the offsets store's counters to the series, read from
// stats at every scrape:
//
//	minibroker_offsets_commits_total          counter
//	minibroker_offsets_refused_commits_total  counter
//	minibroker_offsets_failed_folds_total     counter
//	minibroker_offsets_cut_tails_total        counter
//	minibroker_offsets_journal_bytes          gauge
//	minibroker_offsets_journal_segments       gauge
func (m *Metrics) WatchOffsets(stats func() offsets.Stats) {
	counter := func(name, help string, v func(offsets.Stats) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(v(stats())) })
	}
	gauge := func(name, help string, v func(offsets.Stats) int64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
			func() float64 { return float64(v(stats())) })
	}
	m.registry.MustRegister(
		counter("minibroker_offsets_commits_total", "Commits the offsets store made durable.",
			func(s offsets.Stats) int64 { return s.Commits }),
		counter("minibroker_offsets_refused_commits_total", "Commits refused because the disk failed them (KAFKA_STORAGE_ERROR).",
			func(s offsets.Stats) int64 { return s.RefusedCommits }),
		counter("minibroker_offsets_failed_folds_total", "Folds of the journal into offsets.json that failed (the journal stays; nothing is lost).",
			func(s offsets.Stats) int64 { return s.FailedFolds }),
		counter("minibroker_offsets_cut_tails_total", "Torn journal tails cut at start-up (kept beside the segment as .cut-<n>).",
			func(s offsets.Stats) int64 { return s.CutTails }),
		gauge("minibroker_offsets_journal_bytes", "Journal bytes not yet folded into offsets.json.",
			func(s offsets.Stats) int64 { return s.JournalBytes }),
		gauge("minibroker_offsets_journal_segments", "Journal segments not yet folded into offsets.json.",
			func(s offsets.Stats) int64 { return int64(s.Segments) }),
	)
}

// WatchRecords adds the partition logs' failure counters to the series,
// read from stats at every scrape:
//
//	minibroker_records_corrupt_reads_total   counter
//	minibroker_records_cut_tails_total       counter
//	minibroker_records_storage_errors_total  counter
func (m *Metrics) WatchRecords(stats func() records.Stats) {
	counter := func(name, help string, v func(records.Stats) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(v(stats())) })
	}
	m.registry.MustRegister(
		counter("minibroker_records_corrupt_reads_total", "Reads that met a stored batch whose CRC does not match (answered CORRUPT_MESSAGE).",
			func(s records.Stats) int64 { return s.CorruptReads }),
		counter("minibroker_records_cut_tails_total", "Torn or corrupt tails cut off the newest segments at start-up.",
			func(s records.Stats) int64 { return s.CutTails }),
		counter("minibroker_records_storage_errors_total", "Failed writes, syncs and rolls of the partition logs.",
			func(s records.Stats) int64 { return s.StorageErrors }),
	)
}
