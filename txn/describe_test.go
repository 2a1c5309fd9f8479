package txn

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/records"
)

func TestDescribeAndList(t *testing.T) {
	f := newFixture(t, "")
	a := f.init("a")
	b := f.init("b")
	f.clock.Advance(time.Second)
	require.NoError(t, f.c.AddPartitions("a", a.pid, a.epoch, []records.TopicPartition{tp(2), tp(0)}))
	began := f.clock.Now()
	f.clock.Advance(5 * time.Second)

	got := f.c.Describe([]string{"a", "nope", "b"})
	require.Equal(t, []Description{
		{TransactionalID: "a", Found: true, ProducerID: a.pid, Epoch: a.epoch, State: Ongoing, Timeout: time.Minute,
			Started: began, Partitions: map[string][]int32{"t": {0, 2}}},
		{TransactionalID: "nope"},
		{TransactionalID: "b", Found: true, ProducerID: b.pid, Epoch: b.epoch, State: Empty, Timeout: time.Minute,
			Partitions: map[string][]int32{}},
	}, got)

	list := func(f2 ListFilter) ([]string, []string) {
		ls, unknown := f.c.List(f2)
		var ids []string
		for _, l := range ls {
			ids = append(ids, l.TransactionalID)
		}
		return ids, unknown
	}
	ids, unknown := list(ListFilter{MinDuration: -1})
	require.Equal(t, []string{"a", "b"}, ids)
	require.Empty(t, unknown)
	ids, _ = list(ListFilter{States: []string{"Ongoing"}, MinDuration: -1})
	require.Equal(t, []string{"a"}, ids)
	ids, unknown = list(ListFilter{States: []string{"Bogus"}, MinDuration: -1})
	require.Empty(t, ids, "a state filter of unknown names matches nothing")
	require.Equal(t, []string{"Bogus"}, unknown)
	ids, _ = list(ListFilter{ProducerIDs: []int64{b.pid}, MinDuration: -1})
	require.Equal(t, []string{"b"}, ids)
	ids, _ = list(ListFilter{MinDuration: 5 * time.Second})
	require.Equal(t, []string{"b"}, ids, "a began exactly 5 s ago: not longer; b never began")
	ids, _ = list(ListFilter{MinDuration: 4 * time.Second})
	require.Equal(t, []string{"a", "b"}, ids)
	ls, _ := f.c.List(ListFilter{States: []string{"Ongoing"}, MinDuration: -1})
	require.Equal(t, []Listed{{TransactionalID: "a", ProducerID: a.pid, State: Ongoing}}, ls)
}
