package lab

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/records"
)

func TestOffsetRanges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   []int64
		want string
	}{
		{nil, "(none)"},
		{[]int64{6}, "6"},
		{[]int64{0, 1, 2, 3, 4, 5}, "0-5"},
		{[]int64{9, 8, 0, 1, 8}, "0-1, 8-9"},
		{[]int64{1, 3, 5}, "1, 3, 5"},
	} {
		require.Equal(t, tc.want, offsetRanges(tc.in), "%v", tc.in)
	}
}

// TestTallyCountsRepeatsAndRefusesOtherBytes: a record processed again is
// counted and named by the time it is; one that comes back with other
// bytes fails the lab.
func TestTallyCountsRepeatsAndRefusesOtherBytes(t *testing.T) {
	t.Parallel()
	rec := func(off int64, value string) records.DecodedRecord {
		return records.DecodedRecord{Offset: off, Timestamp: RecordsTimestamp + off*1000, Value: []byte(value)}
	}
	tl := newTally()
	for _, step := range []struct {
		name string
		rec  records.DecodedRecord
		note string
	}{
		{"A", rec(6, "payment-6"), ""},
		{"A", rec(7, "payment-7"), ""},
		{"B", rec(6, "payment-6"), "   (second time; the same key, value and timestamp A processed)"},
		{"C", rec(6, "payment-6"), "   (third time; the same key, value and timestamp A processed)"},
	} {
		note, err := tl.add(step.name, step.rec)
		require.NoError(t, err)
		require.Equal(t, step.note, note)
	}
	extra, byTimes := tl.duplicates()
	require.Equal(t, 2, extra)
	require.Equal(t, map[int][]int64{3: {6}}, byTimes)

	_, err := tl.add("D", rec(7, "payment-seven"))
	require.ErrorContains(t, err, `offset 7 came back as "payment-seven"`)

	withHeader := rec(8, "payment-8")
	withHeader.Headers = []kmsg.Header{{Key: "k", Value: []byte("v")}}
	require.False(t, SameRecord(rec(8, "payment-8"), withHeader))
	require.True(t, SameRecord(withHeader, withHeader))
}
