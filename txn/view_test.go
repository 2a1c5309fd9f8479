package txn

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/records"
)

func TestViews(t *testing.T) {
	f := newFixture(t, "")
	b := f.init("b")
	a := f.init("a")
	f.clock.Advance(time.Second)
	require.NoError(t, f.c.AddPartitions("b", b.pid, b.epoch, []records.TopicPartition{tp(2), tp(0)}))
	require.NoError(t, f.c.AddOffsets("b", b.pid, b.epoch, "g2"))
	require.NoError(t, f.c.AddOffsets("b", b.pid, b.epoch, "g1"))
	vs := f.c.Views()
	require.Len(t, vs, 2)
	require.Equal(t, View{TransactionalID: "a", ProducerID: a.pid, State: Empty, Timeout: time.Minute,
		Groups: []string{}, Partitions: []records.TopicPartition{}, Updated: time.UnixMilli(0)}, vs[0])
	require.Equal(t, []records.TopicPartition{tp(0), tp(2)}, vs[1].Partitions)
	require.Equal(t, []string{"g1", "g2"}, vs[1].Groups)
	require.Equal(t, time.UnixMilli(1000), vs[1].Started)
	require.Equal(t, Stats{Open: 1}, f.c.Stats())
}
