package offsets

import (
	"strings"
	"testing"

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
		{
			name:    "negative offset",
			entries: []Entry{ent("orders", 3, -1)},
			want:    ErrNegativeOffset,
			wantMsg: "orders-3 offset -1",
		},
		{
			name:    "negative offset after a good entry",
			entries: []Entry{ent("orders", 0, 6), ent("orders", 1, -5)},
			want:    ErrNegativeOffset,
			wantMsg: "orders-1 offset -5",
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
				ent("orders", 0, -1),
				{Topic: "orders", Partition: 1, Offset: 6, Metadata: overLimit},
			},
			want:    ErrNegativeOffset,
			wantMsg: "orders-0 offset -1",
		},
		{
			name: "first bad entry decides: large metadata first",
			entries: []Entry{
				{Topic: "orders", Partition: 1, Offset: 6, Metadata: overLimit},
				ent("orders", 0, -1),
			},
			want:    ErrMetadataTooLarge,
			wantMsg: "orders-1 has 4097 bytes",
		},
		{
			name:    "one entry with both faults reports the offset",
			entries: []Entry{{Topic: "orders", Partition: 4, Offset: -2, Metadata: overLimit}},
			want:    ErrNegativeOffset,
			wantMsg: "orders-4 offset -2",
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

func TestEntryKey(t *testing.T) {
	t.Parallel()
	e := Entry{Topic: "orders", Partition: 7, Offset: 6, Metadata: "m", LeaderEpoch: 3}
	require.Equal(t, Key{Topic: "orders", Partition: 7}, e.Key())
}

func TestTableApplyLaterEntriesWin(t *testing.T) {
	t.Parallel()
	tb := table{}
	tb.apply("billing", []Entry{ent("orders", 0, 1), ent("orders", 1, 5), ent("orders", 0, 2)})
	tb.apply("billing", []Entry{ent("orders", 1, 6)})

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
		{name: "empty group", entries: nil, want: []Entry{}},
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
			tb.apply("g", tc.entries)
			require.Equal(t, tc.want, tb.sorted("g"))
		})
	}
}

func TestTableGroupsSorted(t *testing.T) {
	t.Parallel()
	tb := table{}
	require.Equal(t, []string{}, tb.groups())
	for _, g := range []string{"shipping", "billing", "analytics", "Zeta"} {
		tb.apply(g, []Entry{ent("orders", 0, 1)})
	}
	require.Equal(t, []string{"Zeta", "analytics", "billing", "shipping"}, tb.groups())
}
