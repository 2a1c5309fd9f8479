package offsets

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	atLimit := strings.Repeat("m", MaxMetadataBytes)
	overLimit := strings.Repeat("m", MaxMetadataBytes+1)
	tests := []struct {
		name    string
		entries []Entry
		want    error  // nil: accepted
		wantMsg string // part of the message naming the bad entry
	}{
		{name: "no entries", entries: nil},
		{name: "offset zero", entries: []Entry{ent("orders", 0, 0)}},
		{name: "several good entries", entries: []Entry{ent("orders", 0, 6), ent("orders", 1, 9), ent("audit", 0, 1)}},
		{name: "the reset sentinels", entries: []Entry{ent("orders", 0, ResetLatest), ent("orders", 1, ResetEarliest)}},
		{
			name:    "offset -3",
			entries: []Entry{ent("orders", 3, -3)},
			want:    ErrNegativeOffset,
			wantMsg: "orders-3 offset -3",
		},
		{
			name:    "negative offset after a good entry and a sentinel",
			entries: []Entry{ent("orders", 0, 6), ent("orders", 2, -2), ent("orders", 1, -5)},
			want:    ErrNegativeOffset,
			wantMsg: "orders-1 offset -5",
		},
		{
			name:    "the lowest offset",
			entries: []Entry{ent("orders", 0, math.MinInt64)},
			want:    ErrNegativeOffset,
			wantMsg: "orders-0 offset -9223372036854775808",
		},
		{
			name:    "metadata of 4096 bytes",
			entries: []Entry{{Topic: "orders", Partition: 0, Offset: 6, Metadata: atLimit, LeaderEpoch: NoLeaderEpoch}},
		},
		{
			name:    "metadata of 4097 bytes",
			entries: []Entry{{Topic: "orders", Partition: 2, Offset: 6, Metadata: overLimit, LeaderEpoch: NoLeaderEpoch}},
			want:    ErrMetadataTooLarge,
			wantMsg: "orders-2 has 4097 bytes, limit 4096",
		},
		{
			name: "first bad entry decides: negative offset first",
			entries: []Entry{
				ent("orders", 0, -3),
				{Topic: "orders", Partition: 1, Offset: 6, Metadata: overLimit},
			},
			want:    ErrNegativeOffset,
			wantMsg: "orders-0 offset -3",
		},
		{
			name: "first bad entry decides: large metadata first",
			entries: []Entry{
				{Topic: "orders", Partition: 1, Offset: 6, Metadata: overLimit},
				ent("orders", 0, -3),
			},
			want:    ErrMetadataTooLarge,
			wantMsg: "orders-1 has 4097 bytes",
		},
		{
			name:    "one entry with both faults reports the offset",
			entries: []Entry{{Topic: "orders", Partition: 4, Offset: -3, Metadata: overLimit}},
			want:    ErrNegativeOffset,
			wantMsg: "orders-4 offset -3",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Validate(tc.entries, MaxMetadataBytes)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
			require.ErrorContains(t, err, tc.wantMsg)
		})
	}
}

func TestIsResetSentinel(t *testing.T) {
	t.Parallel()
	for o, want := range map[int64]bool{-3: false, -2: true, -1: true, 0: false, 1: false} {
		require.Equal(t, want, IsResetSentinel(o), "offset %d", o)
	}
}

func TestEntryKey(t *testing.T) {
	t.Parallel()
	e := Entry{Topic: "orders", Partition: 7, Offset: 6, Metadata: "m", LeaderEpoch: 3}
	require.Equal(t, Key{Topic: "orders", Partition: 7}, e.Key())
}

func TestTableApplyLaterEntriesWin(t *testing.T) {
	t.Parallel()
	tb := table{}
	tb.commit("billing", []Entry{ent("orders", 0, 1), ent("orders", 1, 5), ent("orders", 0, 2)})
	tb.commit("billing", []Entry{ent("orders", 1, 6)})

	got, ok := tb.lookup("billing", Key{Topic: "orders", Partition: 0})
	require.True(t, ok)
	require.Equal(t, ent("orders", 0, 2), got)
	require.Equal(t, []Entry{ent("orders", 0, 2), ent("orders", 1, 6)}, tb.sorted("billing"))

	_, ok = tb.lookup("billing", Key{Topic: "orders", Partition: 2})
	require.False(t, ok)
	_, ok = tb.lookup("shipping", Key{Topic: "orders", Partition: 0})
	require.False(t, ok)
}

func TestTableSorted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		entries []Entry
		want    []Entry
	}{
		{name: "empty group", entries: nil, want: nil},
		{
			name:    "partitions sort as numbers",
			entries: []Entry{ent("orders", 10, 1), ent("orders", 2, 1), ent("orders", 0, 1)},
			want:    []Entry{ent("orders", 0, 1), ent("orders", 2, 1), ent("orders", 10, 1)},
		},
		{
			name:    "topic before partition",
			entries: []Entry{ent("orders", 0, 1), ent("audit", 5, 1), ent("Orders", 1, 1), ent("audit", 1, 1)},
			want:    []Entry{ent("Orders", 1, 1), ent("audit", 1, 1), ent("audit", 5, 1), ent("orders", 0, 1)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb := table{}
			tb.commit("g", tc.entries)
			require.Equal(t, tc.want, tb.sorted("g"))
		})
	}
}

func TestTableGroupsSorted(t *testing.T) {
	t.Parallel()
	tb := table{}
	require.Equal(t, []string{}, tb.groups())
	for _, g := range []string{"shipping", "billing", "analytics", "Zeta"} {
		tb.commit(g, []Entry{ent("orders", 0, 1)})
	}
	require.Equal(t, []string{"Zeta", "analytics", "billing", "shipping"}, tb.groups())
}

func TestValidateCommitTime(t *testing.T) {
	t.Parallel()
	e := ent("orders", 0, 1)
	e.CommitTimestampMs = -1
	require.ErrorIs(t, Validate([]Entry{e}, 0), ErrInvalidEntry)
	e.CommitTimestampMs = 1_700_000_000_000
	require.NoError(t, Validate([]Entry{e}, 0))
}

// TestTableRemove: a delete removes the named partitions, or the whole
// group; an expiry removes only entries whose commit time is known and at
// or before the cutoff (Kafka's >= retention).
func TestTableRemove(t *testing.T) {
	t.Parallel()
	at := func(ms int64, e Entry) Entry { e.CommitTimestampMs = ms; return e }
	base := []Entry{at(1000, ent("orders", 0, 1)), at(2000, ent("orders", 1, 2)), ent("orders", 2, 3)}
	tests := []struct {
		name string
		op   *op
		want []Entry
	}{
		{"whole group", deleteOf("g"), nil},
		{"some partitions", deleteOf("g", Key{"orders", 0}, Key{"orders", 2}, Key{"audit", 0}), []Entry{base[1]}},
		{"other group", deleteOf("h"), base},
		{"expire at the cutoff", &op{kind: opDelete, group: "g", expireMs: 1000}, base[1:]},
		{"expire after both", &op{kind: opDelete, group: "g", expireMs: 5000}, base[2:]},
		{"expire before both", &op{kind: opDelete, group: "g", expireMs: 999}, base},
		{"expire some partitions", &op{kind: opDelete, group: "g", keys: []Key{{"orders", 1}, {"orders", 2}}, expireMs: 5000}, []Entry{base[0], base[2]}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb := table{}
			tb.commit("g", base)
			tb.apply(tc.op)
			require.Equal(t, tc.want, tb.sorted("g"))
			_, kept := tb["g"]
			require.Equal(t, tc.want != nil, kept, "an emptied group is gone")
		})
	}
}

func TestOpConstructors(t *testing.T) {
	t.Parallel()
	o, err := commitOp("g", nil)
	require.NoError(t, err)
	require.Nil(t, o, "a commit of nothing is nothing to do")
	o, err = deleteOffsetsOp("g", nil)
	require.NoError(t, err)
	require.Nil(t, o)
	o, err = expireOp("g", time.Time{})
	require.NoError(t, err)
	require.Nil(t, o, "the zero time is before every commit time")
	o, err = expireOp("g", time.UnixMilli(1234))
	require.NoError(t, err)
	require.Equal(t, &op{kind: opDelete, group: "g", expireMs: 1234}, o)

	entries := []Entry{ent("orders", 0, 1)}
	o, err = commitOp("g", entries)
	require.NoError(t, err)
	entries[0].Offset = 9
	require.Equal(t, int64(1), o.entries[0].Offset, "ops copy their arguments")
}
