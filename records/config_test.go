package records

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConfigDefaults fills every zero field.
func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	c := Config{}.withDefaults()
	require.Equal(t, int64(DefaultSegmentBytes), c.SegmentBytes)
	require.Equal(t, int64(-1), c.RetentionBytes)
	require.Equal(t, int32(1048588), c.MaxMessageBytes)
	require.Equal(t, int64(64*1048588), c.MaxUncompressedBytes)
	require.Equal(t, time.Hour, c.MessageTimestampAfterMax)
	require.Zero(t, c.MessageTimestampBeforeMax)
	require.Equal(t, DefaultMaxProducers, c.MaxProducers)
	require.NotNil(t, c.Now)
	require.NotNil(t, c.Logger)
	require.IsType(t, &memFS{}, c.fs)
	require.IsType(t, osFS{}, Config{Dir: "x"}.withDefaults().fs)
	require.NoError(t, Config{}.Validate())
}

// TestTimestampBounds checks the accepted range of record timestamps,
// Kafka 4's defaults first.
func TestTimestampBounds(t *testing.T) {
	t.Parallel()
	now := int64(1_000_000)
	lo, hi := Config{}.withDefaults().timestampBounds(now)
	require.Equal(t, [2]int64{math.MinInt64, now + 3_600_000}, [2]int64{lo, hi})
	lo, hi = Config{MessageTimestampBeforeMax: time.Second, MessageTimestampAfterMax: -1}.timestampBounds(now)
	require.Equal(t, [2]int64{now - 1000, math.MaxInt64}, [2]int64{lo, hi})
	_, hi = Config{MessageTimestampAfterMax: time.Duration(math.MaxInt64)}.timestampBounds(now)
	require.Equal(t, now+math.MaxInt64/int64(time.Millisecond), hi)
	_, hi = Config{MessageTimestampAfterMax: time.Hour}.timestampBounds(math.MaxInt64 - 10)
	require.Equal(t, int64(math.MaxInt64), hi, "no overflow: no bound")
}
