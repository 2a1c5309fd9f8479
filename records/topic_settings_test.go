package records

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTopicSettings gives topic "a" settings of its own beside "b", which
// keeps the Log's: a small segment size rolls a's segments only, a small
// batch limit refuses a's batch only, a retention limit deletes a's
// oldest segment at once (no produce after it), and a topic deleted and
// made again starts from the defaults.
func TestTopicSettings(t *testing.T) {
	t.Parallel()
	one := build(t, spec{value: 350})
	b := int64(len(one))
	cfg := testConfig(t, t.TempDir())
	l := open(t, cfg)
	def := l.Defaults()
	require.Equal(t, TopicSettings{SegmentBytes: DefaultSegmentBytes, RetentionBytes: -1, MaxMessageBytes: DefaultMaxMessageBytes}, def)
	require.NoError(t, l.CreatePartitions("a", 1))
	require.NoError(t, l.CreatePartitions("b", 1))

	small := def
	small.SegmentBytes = 3 * b
	require.NoError(t, l.SetSettings("a", small))
	require.Equal(t, small, l.Settings("a"))
	require.Equal(t, def, l.Settings("b"))
	for range 7 {
		produce(t, l, "a", 0, build(t, spec{value: 350}))
		produce(t, l, "b", 0, build(t, spec{value: 350}))
	}
	require.Equal(t, []string{segmentName(0), segmentName(3), segmentName(6)}, segmentFiles(t, filepath.Join(cfg.Dir, "a-0")))
	require.Equal(t, []string{segmentName(0)}, segmentFiles(t, filepath.Join(cfg.Dir, "b-0")))

	tight := small
	tight.MaxMessageBytes = int32(b) - 1
	require.NoError(t, l.SetSettings("a", tight))
	_, err := l.ValidateTopic("a", build(t, spec{value: 350}))
	require.ErrorIs(t, err, ErrMessageTooLarge)
	_, err = l.ValidateTopic("b", build(t, spec{value: 350}))
	require.NoError(t, err)
	require.Equal(t, def.MaxMessageBytes, l.MaxMessageBytes())

	large := small
	large.MaxMessageBytes = 4 << 20
	large.RetentionBytes = 3*b + 1 // 7b held: segment 0 (3b) goes, 4b stay
	require.NoError(t, l.SetSettings("a", large))
	require.Equal(t, int32(4<<20), l.MaxMessageBytes())
	start, hw, err := l.Offsets("a", 0)
	require.NoError(t, err)
	require.Equal(t, [2]int64{3, 7}, [2]int64{start, hw})
	require.Equal(t, []string{segmentName(3), segmentName(6)}, segmentFiles(t, filepath.Join(cfg.Dir, "a-0")))
	start, _, err = l.Offsets("b", 0)
	require.NoError(t, err)
	require.Equal(t, int64(0), start)

	_, err = l.DeleteTopic("a")
	require.NoError(t, err)
	require.Equal(t, def, l.Settings("a"))
	require.Equal(t, def.MaxMessageBytes, l.MaxMessageBytes())

	require.NoError(t, l.SetSettings("b", def)) // the defaults: nothing of its own
	require.Equal(t, def, l.Settings("b"))
}

// TestTopicSettingsCheck refuses values the Log cannot run with and
// leaves the topic's settings as they were.
func TestTopicSettingsCheck(t *testing.T) {
	t.Parallel()
	l := openWith(t, testConfig(t, ""), 1)
	def := l.Defaults()
	for name, s := range map[string]TopicSettings{
		"segment too small":  {SegmentBytes: MinSegmentBytes - 1, RetentionBytes: -1, MaxMessageBytes: def.MaxMessageBytes},
		"segment too large":  {SegmentBytes: 1 << 31, RetentionBytes: -1, MaxMessageBytes: def.MaxMessageBytes},
		"retention below -1": {SegmentBytes: def.SegmentBytes, RetentionBytes: -2, MaxMessageBytes: def.MaxMessageBytes},
		"batch limit small":  {SegmentBytes: def.SegmentBytes, RetentionBytes: -1, MaxMessageBytes: MinMaxMessageBytes - 1},
	} {
		require.Error(t, l.SetSettings("t", s), name)
		require.Equal(t, def, l.Settings("t"), name)
	}
}

// TestFileBudget: a Log on disk holds at most maxOpen partitions (half
// the open-file limit, each holding its active segment open); a create
// past it is ErrTooManyPartitions and makes nothing; one within it, or
// of partitions that exist, goes through. A Log in memory has no bound.
func TestFileBudget(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, t.TempDir())
	l := open(t, cfg)
	require.Equal(t, openFileLimit()/2, l.maxOpen)
	l.maxOpen = 5
	require.NoError(t, l.CreatePartitions("a", 3))
	err := l.CreatePartitions("b", 3)
	require.ErrorIs(t, err, ErrTooManyPartitions)
	require.ErrorContains(t, err, "3 partitions would hold 6 segment files open, more than 5")
	_, _, err = l.Offsets("b", 0)
	require.ErrorIs(t, err, ErrUnknownPartition, "nothing made")
	require.NoFileExists(t, filepath.Join(cfg.Dir, "b-0", segmentName(0)))
	require.NoError(t, l.CreatePartitions("a", 3), "existing partitions open nothing new")
	require.NoError(t, l.CreatePartitions("b", 2))
	require.Len(t, segmentFiles(t, filepath.Join(cfg.Dir, "b-1")), 1)

	mem := open(t, testConfig(t, ""))
	require.Zero(t, mem.maxOpen)
}
