package records

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckpointAtClose writes every partition's log start and high
// watermark at Close, sorted, and Open takes the same logs back.
func TestCheckpointAtClose(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, err := openAnyPID(testConfig(t, dir))
	require.NoError(t, err)
	require.NoError(t, l.CreatePartitions("t", 2))
	produce(t, l, "t", 1, build(t, spec{n: 3}))
	require.NoError(t, l.Close())
	data, err := os.ReadFile(filepath.Join(dir, checkpointFile))
	require.NoError(t, err)
	require.Equal(t, "minibroker-log-checkpoint 1\nt 0 0 0\nt 1 0 3\n", string(data))
	open(t, testConfig(t, dir))
}

// TestCheckpointLosses: each way of losing acknowledged records while the
// broker is down fails Open with ErrDataLoss naming the partition, file
// and offsets, and changes nothing; AcceptDataLoss opens the log as found
// with an Error line.
func TestCheckpointLosses(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		damage func(t *testing.T, fx *fixture)
		want   string
	}{
		"newest segment deleted": {
			damage: func(t *testing.T, fx *fixture) { require.NoError(t, os.Remove(fx.newest())) },
			want:   "but offsets up to %[2]d were acknowledged (newest segment deleted or truncated)",
		},
		"newest segment truncated to 0": {
			damage: func(t *testing.T, fx *fixture) { require.NoError(t, os.Truncate(fx.newest(), 0)) },
			want:   "partition t-0: the log ends at offset %[3]d in %[4]s, but offsets up to %[2]d were acknowledged",
		},
		"oldest segment deleted": {
			damage: func(t *testing.T, fx *fixture) { require.NoError(t, os.Remove(fx.path(0))) },
			want:   "partition t-0: the log starts at offset %[5]d in %[6]s, but retention kept offsets from 0 (oldest segment deleted)",
		},
		"partition directory deleted": {
			damage: func(t *testing.T, fx *fixture) { require.NoError(t, os.RemoveAll(fx.pdir)) },
			want:   "partition t-0: directory %[1]s is gone with offsets 0 to %[2]d",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fx := writeFixture(t, 12, 1200)
			require.Greater(t, len(fx.segs), 2)
			newestBase, _ := parseSegmentName(fx.segs[len(fx.segs)-1])
			secondBase, _ := parseSegmentName(fx.segs[1])
			tc.damage(t, fx)
			want := fmt.Sprintf(tc.want, fx.pdir, fx.end(), newestBase, fx.newest(), secondBase, fx.path(1))
			_, _, err := fx.reopen(t)
			require.ErrorIs(t, err, ErrDataLoss)
			require.ErrorContains(t, err, want)
			require.ErrorContains(t, err, filepath.Join(fx.dir, checkpointFile))

			logger, logs := newTestLogger(t)
			cfg := testConfig(t, fx.dir)
			cfg.Logger, cfg.AcceptDataLoss = logger, true
			l := open(t, cfg)
			lines := logs.find(slog.LevelError, "acknowledged records missing; starting anyway as told")
			require.Len(t, lines, 1)
			require.Contains(t, lines[0], want)
			require.NoError(t, l.Close())
			// The checkpoint now says what the log holds: the next start
			// is clean.
			_, _, err = fx.reopen(t)
			require.NoError(t, err)
		})
	}
}

// TestCheckpointRetention: retention rewrites the checkpoint before it
// deletes, so the log start it moved is no loss at the next Open, even
// after a crash (no Close).
func TestCheckpointRetention(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.SegmentBytes, cfg.RetentionBytes = 1024, 2048
	l, err := openAnyPID(cfg)
	require.NoError(t, err)
	require.NoError(t, l.CreatePartitions("t", 1))
	for range 40 {
		produce(t, l, "t", 0, build(t, spec{n: 2, value: 100}))
	}
	st, err := l.PartitionStats("t", 0)
	require.NoError(t, err)
	require.Positive(t, st.LogStartOffset)
	data, err := os.ReadFile(filepath.Join(dir, checkpointFile))
	require.NoError(t, err)
	want, err := parseCheckpoint(data)
	require.NoError(t, err)
	require.Equal(t, st.LogStartOffset, want[TopicPartition{"t", 0}].logStart)
	// A crash: the files stay as they are, without the Close checkpoint.
	l.closed.Store(true)
	l.flush.stop()
	close(l.ckpt.stopc)
	<-l.ckpt.donec
	for _, p := range *l.parts.Load() {
		require.NoError(t, p.closeFiles())
	}
	l2 := open(t, testConfig(t, dir))
	st2, err := l2.PartitionStats("t", 0)
	require.NoError(t, err)
	require.Equal(t, st.LogStartOffset, st2.LogStartOffset)
	require.Equal(t, int64(80), st2.HighWatermark)
}

// TestCheckpointCorrupt refuses a checkpoint it cannot read, naming it.
func TestCheckpointCorrupt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, checkpointFile), []byte("minibroker-log-checkpoint 1\nt 0 5 3\n"), 0o644))
	_, err := Open(testConfig(t, dir))
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, checkpointFile+": not a log checkpoint: line 2")
}

// FuzzParseCheckpoint: any input is read or refused without a panic, and
// what is read renders back to the same bytes, sorted.
func FuzzParseCheckpoint(f *testing.F) {
	f.Add([]byte("minibroker-log-checkpoint 1\nt 0 0 0\nt 1 0 3\n"))
	f.Add([]byte("minibroker-log-checkpoint 1\n"))
	f.Add([]byte("minibroker-log-checkpoint 1\nt 0 0 3\nt 0 0 3\n"))
	f.Add([]byte("minibroker-log-checkpoint 2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseCheckpoint(data)
		if err != nil {
			return
		}
		tps := make([]TopicPartition, 0, len(m))
		for tp, e := range m {
			if e.logStart < 0 || e.hw < e.logStart || validTopic(tp.Topic) != nil || tp.Partition < 0 {
				t.Fatalf("accepted %v %v", tp, e)
			}
			tps = append(tps, tp)
		}
		sortPartitions(tps)
		again, err := parseCheckpoint(formatCheckpoint(tps, m))
		if err != nil {
			t.Fatalf("rendered checkpoint refused: %v", err)
		}
		require.Equal(t, m, again)
	})
}
