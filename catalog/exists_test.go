package catalog

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// counts is a Counter without a catalog behind it.
type counts map[string]int32

func (c counts) Partitions(topic string) (int32, bool) {
	n, ok := c[topic]
	return n, ok
}

// TestHasPartition: partitions 0 to count-1 of a known topic exist;
// a negative one, the count itself, and any of an unknown topic do not.
// The catalog's method answers the same as the rule over any Counter.
func TestHasPartition(t *testing.T) {
	t.Parallel()
	c, err := Open(Config{})
	require.NoError(t, err)
	_, err = c.Create("orders", 3)
	require.NoError(t, err)
	fixed := counts{"orders": 3}
	for _, tc := range []struct {
		topic string
		p     int32
		want  bool
	}{
		{"orders", 0, true},
		{"orders", 2, true},
		{"orders", 3, false},
		{"orders", -1, false},
		{"orders", 1 << 30, false},
		{"payments", 0, false},
		{"", 0, false},
	} {
		require.Equal(t, tc.want, c.HasPartition(tc.topic, tc.p), "catalog %s-%d", tc.topic, tc.p)
		require.Equal(t, tc.want, HasPartition(fixed, tc.topic, tc.p), "counter %s-%d", tc.topic, tc.p)
	}
	_, err = c.AddPartitions("orders", 4)
	require.NoError(t, err)
	require.True(t, c.HasPartition("orders", 3), "a new partition exists at once")
}
