package loadgen

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMeasureSync(t *testing.T) {
	dir := t.TempDir()
	st, err := MeasureSync(dir, 169, 20)
	require.NoError(t, err)
	require.Equal(t, SyncStats{Size: 169, N: 20, Files: 1}, SyncStats{Size: st.Size, N: st.N, Files: st.Files})
	require.Positive(t, st.P50)
	require.GreaterOrEqual(t, st.P99, st.P50)
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, left, "the file is removed")
}

func TestMeasureSyncAtOnce(t *testing.T) {
	dir := t.TempDir()
	st, err := MeasureSyncAtOnce(dir, 169, 4, 3, 10)
	require.NoError(t, err)
	require.Equal(t, SyncStats{Size: 169, N: 40, Writers: 4, Files: 3},
		SyncStats{Size: st.Size, N: st.N, Writers: st.Writers, Files: st.Files})
	require.Positive(t, st.P50)
	require.GreaterOrEqual(t, st.P99, st.P50)
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, left, "the files are removed")

	_, err = MeasureSyncAtOnce(dir+"/missing", 169, 2, 2, 1)
	require.Error(t, err)
}
