package server

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFaultValidate: every way a fault can be wrong is refused with an
// error that says what is wrong.
func TestFaultValidate(t *testing.T) {
	t.Parallel()
	nc := kerr.NotCoordinator.Code
	for _, tc := range []struct {
		name  string
		fault Fault
		want  string // "" means valid
	}{
		{"an error code", Fault{Keys: []int16{8}, Err: nc}, ""},
		{"a drop until removed", Fault{Keys: []int16{12}, Group: "g", Member: "m", Drop: true, Count: -1}, ""},
		{"a delay three times", Fault{Delay: time.Second, Count: 3}, ""},
		{"a close", Fault{ClientID: "c", Close: true}, ""},
		{"UNKNOWN_SERVER_ERROR is a code", Fault{Err: kerr.UnknownServerError.Code}, ""},
		{"no action", Fault{Keys: []int16{12}}, "exactly one action"},
		{"two actions", Fault{Drop: true, Close: true}, "got 2"},
		{"an unknown API key", Fault{Keys: []int16{12, 57}, Drop: true}, "API key 57 is not one this broker serves"},
		{"a code Kafka does not define", Fault{Err: 9999}, "9999 is not a Kafka error code"},
		{"a negative delay", Fault{Delay: -time.Millisecond}, "delay -1ms is not within"},
		{"a delay past the cap", Fault{Delay: MaxFaultDelay + 1}, "is not within 0 and 10m0s"},
		{"a count below -1", Fault{Drop: true, Count: -2}, "count -2"},
		{"a negative partition", Fault{Drop: true, Partitions: []int32{-1}}, "partition -1 is negative"},
		{"a code on an API without one", Fault{Keys: []int16{3}, Err: nc}, "Metadata has no error code of its own"},
		{"too many keys", Fault{Keys: make([]int16, maxFaultFilter+1), Drop: true}, "at most 1000 keys"},
		{"a huge id", Fault{Group: strings.Repeat("g", maxFaultFilter+1), Drop: true}, "an id of 1001 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.fault.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				_, err = NewFaults(nil, nil).Inject(tc.fault)
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
			_, err = NewFaults(nil, nil).Inject(tc.fault)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestFaultCount: Count 0 applies once, N applies N times, -1 until
// removed; Hits, Remaining and Wait follow, and a used-up fault stays
// listed until removed.
func TestFaultCount(t *testing.T) {
	t.Parallel()
	at := &faultTarget{groups: []string{"g"}}
	for _, tc := range []struct {
		count, want int
	}{{0, 1}, {3, 3}, {-1, 50}} {
		t.Run(strconv.Itoa(tc.count), func(t *testing.T) {
			t.Parallel()
			fs := NewFaults(nil, nil)
			h, err := fs.Inject(Fault{Keys: []int16{12}, Drop: true, Count: tc.count})
			require.NoError(t, err)
			require.Equal(t, 1, fs.Live())
			applied := 0
			for range 50 {
				if fs.claim(kmsg.Heartbeat, "c", at) != nil {
					applied++
				}
			}
			require.Equal(t, tc.want, applied)
			require.Equal(t, int64(tc.want), h.Hits())
			if tc.count == -1 {
				require.Equal(t, -1, h.Remaining())
				require.Equal(t, 1, fs.Live())
				ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
				defer cancel()
				require.ErrorIs(t, h.Wait(ctx), context.DeadlineExceeded)
				h.Remove()
				require.ErrorIs(t, h.Wait(t.Context()), ErrFaultRemoved)
			} else {
				require.Zero(t, h.Remaining())
				require.Zero(t, fs.Live())
				require.NoError(t, h.Wait(t.Context()))
				list := fs.List()
				require.Len(t, list, 1, "a used-up fault is listed until removed")
				require.Equal(t, FaultStatus{ID: h.ID(), Fault: h.Fault(), Hits: int64(tc.want), Remaining: 0}, list[0])
				require.True(t, fs.Remove(h.ID()))
			}
			require.Empty(t, fs.List())
			require.False(t, fs.Remove(h.ID()))
			h.Remove() // idempotent
			require.Equal(t, map[string]map[string]int64{"drop": {"Heartbeat": int64(tc.want)}}, fs.Counts())
		})
	}
}

// TestFaultFirstInjectedWins: of two faults that match, the first
// injected applies; once it is used up, the second.
func TestFaultFirstInjectedWins(t *testing.T) {
	t.Parallel()
	fs := NewFaults(nil, nil)
	a, err := fs.Inject(Fault{Keys: []int16{12}, Err: kerr.NotCoordinator.Code})
	require.NoError(t, err)
	b, err := fs.Inject(Fault{Drop: true, Count: -1})
	require.NoError(t, err)
	require.Equal(t, "1", a.ID())
	require.Equal(t, "2", b.ID())
	at := &faultTarget{}
	require.Same(t, a, fs.claim(kmsg.Heartbeat, "", at))
	require.Same(t, b, fs.claim(kmsg.Heartbeat, "", at))
	require.Same(t, b, fs.claim(kmsg.Metadata, "", at))
	require.Equal(t, int64(1), a.Hits())
	require.Equal(t, int64(2), b.Hits())
}

// TestFaultCap: at most MaxFaults are listed; a used-up one gives its
// place to a new one, one in force does not.
func TestFaultCap(t *testing.T) {
	t.Parallel()
	fs := NewFaults(nil, nil)
	first, err := fs.Inject(Fault{Keys: []int16{12}, Drop: true})
	require.NoError(t, err)
	for range MaxFaults - 1 {
		_, err := fs.Inject(Fault{Keys: []int16{8}, Drop: true, Count: -1})
		require.NoError(t, err)
	}
	_, err = fs.Inject(Fault{Drop: true})
	require.ErrorIs(t, err, ErrTooManyFaults)
	require.Len(t, fs.List(), MaxFaults)
	require.NotNil(t, fs.claim(kmsg.Heartbeat, "", &faultTarget{}), "the first fault is used up")
	_, err = fs.Inject(Fault{Drop: true})
	require.NoError(t, err)
	list := fs.List()
	require.Len(t, list, MaxFaults)
	require.NotEqual(t, first.ID(), list[0].ID, "the used-up fault gave its place")
}

// TestFaultRaces: requests claiming, Remove and Inject running at once
// never apply a fault more than its count, and Hits adds up (run with
// -race).
func TestFaultRaces(t *testing.T) {
	t.Parallel()
	fs := NewFaults(nil, nil)
	h, err := fs.Inject(Fault{Keys: []int16{12}, Drop: true, Count: 100})
	require.NoError(t, err)
	forever, err := fs.Inject(Fault{Keys: []int16{12}, Err: kerr.NotCoordinator.Code, Count: -1})
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	applied := map[string]int64{}
	for range 8 {
		wg.Go(func() {
			for range 200 {
				if got := fs.claim(kmsg.Heartbeat, "", &faultTarget{}); got != nil {
					mu.Lock()
					applied[got.ID()]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Go(func() {
		require.NoError(t, h.Wait(t.Context()))
		forever.Remove()
	})
	wg.Go(func() {
		for range 100 {
			extra, err := fs.Inject(Fault{Keys: []int16{8}, Drop: true})
			if err == nil {
				extra.Remove()
			}
		}
	})
	wg.Wait()
	require.Equal(t, int64(100), applied[h.ID()])
	require.Equal(t, applied[forever.ID()], forever.Hits())
	require.Zero(t, fs.Live())
}
