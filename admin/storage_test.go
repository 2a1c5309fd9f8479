package admin

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/records"
)

// TestStorageFailuresAreShown: the offsets store's failures reach GET
// /v1/storage and the minibroker_offsets_* series, read at each request.
func TestStorageFailuresAreShown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	st := offsets.Stats{Commits: 7, JournalBytes: 4096, Segments: 3, SnapshotBytes: 90, Compactions: 1,
		FailedFolds: 2, LastFoldError: errors.New("no space left on device"), RefusedCommits: 5, CutTails: 1, TempFilesRemoved: 2}
	stats := func() offsets.Stats { return st }
	f.rec.Metrics().WatchOffsets(stats)
	srv, err := New(Config{Coordinator: f.coord, Catalog: f.catalog, Recorder: f.rec, Clock: f.clock, OffsetStats: stats})
	require.NoError(t, err)

	f.srv = srv
	code, body := f.do(t, "GET", "/v1/storage", "")
	require.Equal(t, http.StatusOK, code)
	requireJSON(t, `{"offsets":{"commits":7,"journal_bytes":4096,"journal_segments":3,"snapshot_bytes":90,"folds":1,
		"failed_folds":2,"last_fold_error":"no space left on device","refused_commits":5,"cut_tails":1,"temp_files_removed":2}}`, body)

	fams := scrape(t, srv.Handler())
	require.Equal(t, 7.0, value(fams, "minibroker_offsets_commits_total"))
	require.Equal(t, 5.0, value(fams, "minibroker_offsets_refused_commits_total"))
	require.Equal(t, 2.0, value(fams, "minibroker_offsets_failed_folds_total"))
	require.Equal(t, 1.0, value(fams, "minibroker_offsets_cut_tails_total"))
	require.Equal(t, 4096.0, value(fams, "minibroker_offsets_journal_bytes"))
	require.Equal(t, 3.0, value(fams, "minibroker_offsets_journal_segments"))

	st.RefusedCommits = 6
	require.Equal(t, 6.0, value(scrape(t, srv.Handler()), "minibroker_offsets_refused_commits_total"), "read at every scrape")
}

// TestRecordsFailuresAreShown: the partition logs' failure counters reach
// the minibroker_records_* series, read at each scrape.
func TestRecordsFailuresAreShown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	st := records.Stats{CorruptReads: 3, CutTails: 1, StorageErrors: 2}
	f.rec.Metrics().WatchRecords(func() records.Stats { return st })
	srv, err := New(Config{Coordinator: f.coord, Catalog: f.catalog, Recorder: f.rec, Clock: f.clock})
	require.NoError(t, err)
	fams := scrape(t, srv.Handler())
	require.Equal(t, 3.0, value(fams, "minibroker_records_corrupt_reads_total"))
	require.Equal(t, 1.0, value(fams, "minibroker_records_cut_tails_total"))
	require.Equal(t, 2.0, value(fams, "minibroker_records_storage_errors_total"))
	st.CorruptReads = 4
	require.Equal(t, 4.0, value(scrape(t, srv.Handler()), "minibroker_records_corrupt_reads_total"), "read at every scrape")
}
