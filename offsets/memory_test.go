package offsets

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// offsetStore is what the coordinator uses of a store (its OffsetStore),
// with the group lifecycle methods it is about to use. Both stores have
// all of it.
type offsetStore interface {
	Enqueue(group string, entries []Entry) (wait func() error)
	Delete(group string) (wait func() error)
	DeleteOffsets(group string, keys []Key) (wait func() error)
	Expire(group string, cutoff time.Time) (wait func() error)
	Commit(group string, entries []Entry) error
	Committed(group string) []Entry
	Lookup(group, topic string, partition int32) (Entry, bool)
	Groups() []string
	Stats() Stats
	Close() error
}

var (
	_ offsetStore = (*Store)(nil)
	_ offsetStore = (*Memory)(nil)
)

// TestMemoryBehavesLikeStore runs one scenario against both stores: the
// answers are the same, Memory just has no file.
func TestMemoryBehavesLikeStore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		open func(t *testing.T) offsetStore
	}{
		{name: "memory", open: func(*testing.T) offsetStore { return NewMemory() }},
		{name: "file", open: func(t *testing.T) offsetStore { return openStore(t, t.TempDir(), nil) }},
	}
	at := func(ms int64, e Entry) Entry { e.CommitTimestampMs = ms; return e }
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := tc.open(t)
			require.Empty(t, s.Groups())
			require.Nil(t, s.Committed("billing"))

			require.NoError(t, s.Commit("shipping", []Entry{ent("orders", 1, 3), ent("audit", 0, 1)}))
			require.NoError(t, s.Commit("billing", []Entry{{Topic: "orders", Partition: 0, Offset: 6, Metadata: "m", LeaderEpoch: 2}}))
			waitA := s.Enqueue("billing", []Entry{ent("orders", 0, 7)})
			waitB := s.Enqueue("billing", []Entry{ent("orders", 0, 8)})
			require.NoError(t, waitB())
			require.NoError(t, waitA())
			require.ErrorIs(t, s.Commit("billing", []Entry{ent("orders", 0, -3)}), ErrNegativeOffset)
			require.ErrorIs(t, s.Delete("g\xff")(), ErrInvalidEntry)
			require.ErrorIs(t, s.DeleteOffsets("billing", []Key{{Topic: "", Partition: 0}})(), ErrInvalidEntry)

			require.Equal(t, []string{"billing", "shipping"}, s.Groups())
			require.Equal(t, []Entry{ent("audit", 0, 1), ent("orders", 1, 3)}, s.Committed("shipping"))
			got, ok := s.Lookup("billing", "orders", 0)
			require.True(t, ok)
			require.Equal(t, ent("orders", 0, 8), got)
			_, ok = s.Lookup("billing", "orders", 1)
			require.False(t, ok)

			// Deletes and expiry, ordered with commits.
			require.NoError(t, s.DeleteOffsets("shipping", []Key{{Topic: "audit", Partition: 0}, {Topic: "nope", Partition: 9}})())
			require.Equal(t, []Entry{ent("orders", 1, 3)}, s.Committed("shipping"))
			require.NoError(t, s.Delete("shipping")())
			require.NoError(t, s.DeleteOffsets("billing", nil)(), "no keys: nothing to do")
			require.NoError(t, s.Commit("aging", []Entry{at(1000, ent("orders", 0, 1)), at(2000, ent("orders", 1, 1)), ent("orders", 2, 1)}))
			require.NoError(t, s.Expire("aging", time.UnixMilli(0))(), "nothing has a commit time that old")
			require.NoError(t, s.Expire("aging", time.UnixMilli(1000))())
			require.Equal(t, []Entry{at(2000, ent("orders", 1, 1)), ent("orders", 2, 1)}, s.Committed("aging"))
			require.Equal(t, []string{"aging", "billing"}, s.Groups())
			st := s.Stats()
			require.Equal(t, int64(5), st.Commits)
			require.Equal(t, int64(3), st.Deletes)

			pending := s.Enqueue("billing", []Entry{ent("orders", 0, 9)})
			require.NoError(t, s.Close())
			require.NoError(t, pending())
			require.NoError(t, s.Close())
			require.ErrorIs(t, s.Commit("billing", []Entry{ent("orders", 0, 10)}), ErrClosed)
			require.ErrorIs(t, s.Delete("billing")(), ErrClosed)
			require.Equal(t, []Entry{ent("orders", 0, 9)}, s.Committed("billing"))
		})
	}
}

// TestMemoryAppliesOnWait: as with the file store, an op is visible only
// once a wait (or Close) made it durable, and a wait makes every op
// enqueued before it durable too.
func TestMemoryAppliesOnWait(t *testing.T) {
	t.Parallel()
	m := NewMemory()
	waitA := m.Enqueue("billing", []Entry{ent("orders", 0, 1)})
	waitDel := m.Delete("billing")
	waitB := m.Enqueue("billing", []Entry{ent("orders", 1, 2)})
	require.Nil(t, m.Committed("billing"), "nothing is applied before a wait")
	require.NoError(t, waitB())
	require.Equal(t, []Entry{ent("orders", 1, 2)}, m.Committed("billing"), "A, the delete, then B")
	require.NoError(t, waitA())
	require.NoError(t, waitDel())
	require.Equal(t, []Entry{ent("orders", 1, 2)}, m.Committed("billing"))
}
