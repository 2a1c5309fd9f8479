package integration

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/internal/atomicfile"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// diskFault is how faultFS fails while a fault is on.
type diskFault int32

const (
	diskHealthy diskFault = iota
	// diskFull: creating a file fails with ENOSPC, a write writes half
	// its bytes and fails with ENOSPC, and fsync fails with ENOSPC, as a
	// full file system does.
	diskFull
	// diskFsyncFails: writes succeed, fsync fails with EIO, as a failing
	// disk reports.
	diskFsyncFails
	// dirUnwritable: the data directory refuses new entries (create,
	// rename, remove fail with EACCES), as after a permission change or a
	// read-only remount under the broker; files already open still take
	// writes.
	dirUnwritable
)

// faultFS is the real file system with faults switched on and off by the
// test. Its files embed *os.File, so the store can still cut a failed
// write off its journal (Truncate, Seek), as it can on a real full disk.
type faultFS struct {
	atomicfile.OS
	fault atomic.Int32
}

func (f *faultFS) set(d diskFault) { f.fault.Store(int32(d)) }
func (f *faultFS) now() diskFault  { return diskFault(f.fault.Load()) }

func (f *faultFS) CreateTemp(dir, pattern string) (atomicfile.File, error) {
	switch f.now() {
	case diskFull:
		return nil, &os.PathError{Op: "open", Path: dir, Err: syscall.ENOSPC}
	case dirUnwritable:
		return nil, &os.PathError{Op: "open", Path: dir, Err: syscall.EACCES}
	}
	file, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f}, nil
}

func (f *faultFS) Rename(oldpath, newpath string) error {
	if f.now() == dirUnwritable {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: syscall.EACCES}
	}
	return f.OS.Rename(oldpath, newpath)
}

func (f *faultFS) Remove(name string) error {
	if f.now() == dirUnwritable {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.EACCES}
	}
	return f.OS.Remove(name)
}

type faultFile struct {
	*os.File
	fs *faultFS
}

func (f *faultFile) Write(p []byte) (int, error) {
	if f.fs.now() == diskFull {
		n, _ := f.File.Write(p[:len(p)/2])
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

func (f *faultFile) Sync() error {
	switch f.fs.now() {
	case diskFull:
		return &os.PathError{Op: "sync", Path: f.Name(), Err: syscall.ENOSPC}
	case diskFsyncFails:
		return &os.PathError{Op: "sync", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.Sync()
}

// TestCrashDiskFaultsDuringCommits: while the data dir is full, fsync
// fails, or the directory refuses the journal segment a commit needs,
// every commit (group and direct) gets KAFKA_STORAGE_ERROR and stores
// nothing, while heartbeats, joins, syncs and fetches keep working and
// OffsetFetch shows exactly the acknowledged offsets; once the disk
// recovers, commits succeed again, and the files, reopened, hold every
// acknowledged offset and none of the refused ones.
//
// A directory that turns unwritable while a journal segment is open does
// not stop commits: they are appended to the open file and fsynced, which
// needs no new directory entry, so they are acknowledged and kept. Only a
// new segment (the first commit, or the one after a fold sealed the last)
// or a fold (which is retried later) needs the directory.
func TestCrashDiskFaultsDuringCommits(t *testing.T) {
	t.Parallel()
	storage := kerr.KafkaStorageError.Code
	for _, tc := range []struct {
		name   string
		fault  diskFault
		before bool  // commits acknowledged before the fault, so a segment is open
		during int16 // the code of every commit during the fault
	}{
		{"disk full", diskFull, true, storage},
		{"fsync fails", diskFsyncFails, true, storage},
		{"directory unwritable before the first commit", dirUnwritable, false, storage},
		{"directory unwritable with the journal open", dirUnwritable, true, codeNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fsys := &faultFS{}
			b := startBroker(t, func(cfg *broker.Config) { cfg.OffsetsFS = fsys })
			c := wiretest.Dial(t, b.Addr(), "c")
			m := join(t, c, "g", "orders")
			acked := map[string]int64{"orders-0": -1, "orders-1": -1, "orders-2": -1, "orders-3": -1}
			manual := int64(-1)
			all := []tp{{"orders", 0, 0}, {"orders", 1, 0}, {"orders", 2, 0}, {"orders", 3, 0}}
			groupCommit := func(want int16, a, b tp) {
				t.Helper()
				require.Equal(t, repeat(want, 2), commit(t, c, "g", m.MemberID, m.Generation, a, b), "commit %v %v", a, b)
				if want == codeNone {
					acked[fmt.Sprintf("%s-%d", a.topic, a.partition)] = a.offset
					acked[fmt.Sprintf("%s-%d", b.topic, b.partition)] = b.offset
				}
			}
			manualCommit := func(want int16, offset int64) {
				t.Helper()
				require.Equal(t, []int16{want}, wiretest.Commit(t, c, directCommit("manual", "payments", 0, offset)), "direct commit %d", offset)
				if want == codeNone {
					manual = offset
				}
			}

			if tc.before {
				groupCommit(codeNone, tp{"orders", 0, 10}, tp{"orders", 1, 11})
				manualCommit(codeNone, 5)
			}
			fsys.set(tc.fault)
			for i := range int64(3) {
				groupCommit(tc.during, tp{"orders", 0, 20 + i}, tp{"orders", 2, 30 + i})
				manualCommit(tc.during, 50+i)
			}
			assert.Equal(t, codeNone, heartbeat(t, c, "g", m.MemberID, m.Generation), "heartbeats need no disk")
			other := join(t, c, "other", "payments")
			assert.Equal(t, []string{"payments-0"}, assignment(t, c, "other", other.MemberID, other.Generation), "joins and syncs need no disk")
			assert.Equal(t, acked, fetchOffsets(t, c, "g", all...), "memory holds what the disk holds")
			assert.Equal(t, map[string]int64{"payments-0": manual}, fetchOffsets(t, c, "manual", tp{"payments", 0, 0}))

			fsys.set(diskHealthy)
			groupCommit(codeNone, tp{"orders", 2, 40}, tp{"orders", 3, 41})
			manualCommit(codeNone, 60)
			assert.Equal(t, acked, fetchOffsets(t, c, "g", all...))

			require.NoError(t, b.Close())
			store, err := offsets.Open(offsets.Config{Dir: b.DataDir()})
			require.NoError(t, err, "the files load after the faults")
			defer store.Close()
			for _, p := range all {
				e, ok := store.Lookup("g", p.topic, p.partition)
				want := acked[fmt.Sprintf("%s-%d", p.topic, p.partition)]
				if want < 0 {
					assert.False(t, ok, "orders-%d was never acknowledged", p.partition)
					continue
				}
				assert.True(t, ok)
				assert.Equal(t, want, e.Offset, "orders-%d: exactly the acknowledged offset", p.partition)
			}
			e, _ := store.Lookup("manual", "payments", 0)
			assert.Equal(t, int64(60), e.Offset)
		})
	}
}

// TestCrashDiskFaultsDoNotStallOtherRequests: a commit that fails on the
// disk answers at once; requests queued behind it on the same connection
// are answered in order.
func TestCrashDiskFaultsDoNotStallOtherRequests(t *testing.T) {
	t.Parallel()
	fsys := &faultFS{}
	b := startBroker(t, func(cfg *broker.Config) { cfg.OffsetsFS = fsys })
	c := wiretest.Dial(t, b.Addr(), "c")
	m := join(t, c, "g", "orders")
	fsys.set(diskFull)
	resps, err := c.Pipeline(t.Context(), []kmsg.Request{
		commitRequest(9, "g", m.MemberID, m.Generation, tp{"orders", 0, 1}),
		wiretest.HeartbeatRequest(4, "g", m.MemberID, m.Generation),
		directCommit("manual", "orders", 1, 2),
		wiretest.HeartbeatRequest(4, "g", m.MemberID, m.Generation),
	})
	require.NoError(t, err)
	assert.Equal(t, kerr.KafkaStorageError.Code, resps[0].(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode)
	assert.Equal(t, codeNone, resps[1].(*kmsg.HeartbeatResponse).ErrorCode)
	assert.Equal(t, kerr.KafkaStorageError.Code, resps[2].(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode)
	assert.Equal(t, codeNone, resps[3].(*kmsg.HeartbeatResponse).ErrorCode)
}
