package txn

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/records"
)

// JournalFile is the transaction log's name in the data directory.
const JournalFile = "transactions.log"

// A journal record on disk: the payload's length and its CRC-32C, both
// big endian, then the payload (JSON). A record is appended with one
// write; a record whose change is acknowledged is made durable with
// fdatasync first (see journal for which records wait). The file is
// filled with zeros a chunk ahead of its records (preallocate), so a
// kill leaves zeros after the last record: replay reads them as space
// not yet written. Replay stops at the first record that is short or
// fails its CRC: a torn tail, cut off (and logged) at Open. A record
// torn in the middle of the file cannot happen (every record is synced
// before the next is written), so damage there is indistinguishable from
// a torn tail and treated the same way.
const (
	frameBytes      = 8
	maxPayloadBytes = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// entry is one journal record.
type entry struct {
	Kind      string `json:"k"` // kindInit, kindBegin, kindEnd, kindDone
	ID        string `json:"id"`
	PID       int64  `json:"pid"`
	Epoch     int16  `json:"epoch"`
	TimeoutMs int64  `json:"timeout_ms,omitempty"`
	Commit    bool   `json:"commit,omitempty"`
	// LastEpoch is the epoch before the broker bumped it (kindInit).
	LastEpoch  int16                    `json:"last_epoch,omitempty"`
	Partitions []records.TopicPartition `json:"partitions,omitempty"`
	// First is, for each of Partitions (kindEnd), the offset of the
	// transaction's first record there when it was decided, -1 for none:
	// a restart that completes the decision again marks only a partition
	// that still holds that transaction open.
	First   []int64                    `json:"first,omitempty"`
	Offsets map[string][]offsets.Entry `json:"offsets,omitempty"`
	// At is when the record was written, Unix milliseconds (Kafka's
	// txnLastUpdateTimestamp): a restart keeps how long an id has been
	// idle, which its expiration counts from. 0 in logs written before
	// it: the restart's time then.
	At int64 `json:"at,omitempty"`
}

const (
	kindInit   = "init"   // a transactional id's producer id, epoch and timeout
	kindBegin  = "begin"  // a transaction started
	kindEnd    = "end"    // its decision, with what completing it takes
	kindDone   = "done"   // the decision is applied everywhere
	kindExpire = "expire" // the id expired: forget it (Kafka's tombstone)
)

// journal is the durable transaction log. nil-file journals (in memory)
// accept every append and keep nothing.
//
// Records are written in order, one write each, and made durable by a
// group commit: a writer that needs its record durable (append) waits
// for one fdatasync that covers everything written before it, and
// writers that arrive while a sync runs share the next one. A record that
// need not survive a crash on its own (write) is written and left for the
// next sync to cover. A failed sync cuts the file back to what the last
// good sync covered, and every writer whose record was cut gets the error.
type journal struct {
	mu      sync.Mutex
	synced  *sync.Cond // signalled when a sync ends
	path    string
	f       *os.File // nil in memory
	size    int64    // bytes written
	durable int64    // bytes a sync covered
	// allocated is the file's length: size, and the zeros preallocate
	// wrote ahead of it.
	allocated int64
	cuts      int // failed syncs so far: a writer's record before a cut is lost
	syncing   bool
	syncs     int64 // fdatasyncs so far, for Stats
	closed    bool
	logger    *slog.Logger

	// gen counts the files the journal has had: a rewrite (compact.go)
	// swaps in a new one holding, synced, every record written before
	// the swap, so a writer waiting for a sync of the old file is done.
	gen int
	// live is the size of the journal's records as a rewrite last left
	// them (or as Open found them): the rewrite pays once the file holds
	// garbageRatio times that again.
	live       int64
	rewriting  bool  // a rewrite is running
	rewrites   int64 // rewrites done, for Stats
	compactMin int64 // no rewrite below this size; compactMinBytes unless a test sets it
	// sync makes the file's written bytes durable: syncData, or a test's
	// seam that counts or fails syncs.
	sync func(*os.File) error
	// hold, if set, runs in a rewrite once the new file holds the
	// records it folded, before the tail written meanwhile is copied: a
	// test holds the rewrite there.
	hold func()
}

// openJournal reads the journal under dir and returns it with its
// records, cutting a torn tail. dir "" is a journal in memory.
func openJournal(dir string, logger *slog.Logger) (*journal, []entry, error) {
	j := &journal{logger: logger, sync: syncData, compactMin: compactMinBytes}
	j.synced = sync.NewCond(&j.mu)
	if dir == "" {
		return j, nil, nil
	}
	j.path = filepath.Join(dir, JournalFile)
	f, err := os.OpenFile(j.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("%w: read %s: %w", ErrStorage, j.path, err)
	}
	entries, good := decodeJournal(data)
	allocated := int64(len(data))
	if torn := tornEnd(data, good); torn > good {
		logger.Warn("torn tail cut off the transaction log", "file", j.path, "from", good, "to", torn)
		allocated = good
		if err := f.Truncate(good); err != nil {
			_ = f.Close()
			return nil, nil, fmt.Errorf("%w: truncate %s: %w", ErrStorage, j.path, err)
		}
		if err := f.Sync(); err != nil {
			_ = f.Close()
			return nil, nil, fmt.Errorf("%w: sync %s: %w", ErrStorage, j.path, err)
		}
	}
	j.f, j.size, j.durable, j.allocated = f, good, good, allocated
	j.live = good
	return j, entries, nil
}

// tornEnd is where the bytes of data past its sound records, good, end:
// good itself when there are none but the zeros preallocate writes
// ahead of the records (a kill leaves them), which are space, not a torn
// record. A record never ends in zeros, since its payload is a JSON
// object; one torn over the zeros is its bytes up to its last written one.
func tornEnd(data []byte, good int64) int64 {
	end := int64(len(data))
	for end > good && data[end-1] == 0 {
		end--
	}
	return end
}

// Preallocation, as in the offsets journal: an fdatasync after an append
// writes the file's new length as well as the record; after an overwrite
// of bytes the file already has, only the record. So the journal writes
// zeros a chunk ahead of its records and writes each record over them.
// Measured here, an 800-byte record's fdatasync took 230-240 µs appended
// and 130-160 µs written over zeros (docs/performance.md). A chunk is
// small beside compactMinBytes, the least size a rewrite runs at.
const preallocBytes = 256 << 10

// zeros is what preallocate writes, a piece at a time.
var zeros = make([]byte, 64<<10)

// preallocate makes room for n more bytes of records: if the file ends
// before them, it writes zeros from its end to a chunk past them. A
// failure costs only the speed: the record is then appended. Called with
// mu held.
func (j *journal) preallocate(n int64) {
	end := j.size + n + preallocBytes
	if j.size+n <= j.allocated {
		return
	}
	for at := j.allocated; at < end; {
		k := min(int64(len(zeros)), end-at)
		if _, err := j.f.WriteAt(zeros[:k], at); err != nil {
			return
		}
		at += k
		j.allocated = at
	}
}

// cut truncates the file to size after a failed write or sync: the
// zeros ahead go too. Called with mu held.
func (j *journal) cut(size int64) {
	_ = j.f.Truncate(size)
	j.allocated = size
}

// decodeJournal returns the whole, sound records of data and the length
// of the prefix they fill.
func decodeJournal(data []byte) ([]entry, int64) {
	var out []entry
	pos := 0
	for len(data)-pos >= frameBytes {
		n := binary.BigEndian.Uint32(data[pos:])
		sum := binary.BigEndian.Uint32(data[pos+4:])
		if n > maxPayloadBytes || int64(len(data)-pos-frameBytes) < int64(n) {
			break
		}
		payload := data[pos+frameBytes : pos+frameBytes+int(n)]
		if crc32.Checksum(payload, castagnoli) != sum {
			break
		}
		var e entry
		if err := json.Unmarshal(payload, &e); err != nil || !e.valid() {
			break
		}
		out = append(out, e)
		pos += frameBytes + int(n)
	}
	return out, int64(pos)
}

func (e *entry) valid() bool {
	switch e.Kind {
	case kindInit, kindBegin, kindEnd, kindDone, kindExpire:
		return e.ID != "" && e.PID >= 0
	}
	return false
}

// encode frames one record.
func (e *entry) encode(dst []byte) []byte {
	payload, err := json.Marshal(e)
	if err != nil {
		panic(fmt.Sprintf("txn: journal entry: %v", err)) // plain data: cannot fail
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.BigEndian.AppendUint32(dst, crc32.Checksum(payload, castagnoli))
	return append(dst, payload...)
}

// append writes records and returns once they are durable (with every
// record written before them).
func (j *journal) append(es ...entry) error {
	return j.put(true, es)
}

// write writes records without waiting for them to be durable: the next
// sync covers them. For records whose loss a restart repairs.
func (j *journal) write(es ...entry) error {
	return j.put(false, es)
}

func (j *journal) put(wait bool, es []entry) error {
	if j.f == nil {
		return nil
	}
	var buf []byte
	for i := range es {
		buf = es[i].encode(buf)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return ErrClosed
	}
	j.preallocate(int64(len(buf)))
	if _, err := j.f.WriteAt(buf, j.size); err != nil {
		j.cut(j.size)
		return fmt.Errorf("%w: write %s: %w", ErrStorage, j.path, err)
	}
	j.size += int64(len(buf))
	j.allocated = max(j.allocated, j.size)
	if !wait {
		return nil
	}
	end, cuts, gen := j.size, j.cuts, j.gen
	for j.durable < end {
		if j.gen != gen {
			return nil // a rewrite synced the record into the new file
		}
		if j.cuts != cuts {
			return fmt.Errorf("%w: sync %s failed", ErrStorage, j.path)
		}
		if j.closed {
			return ErrClosed
		}
		if j.syncing {
			j.synced.Wait()
			continue
		}
		j.syncing = true
		upto := j.size
		j.mu.Unlock()
		err := j.sync(j.f)
		j.mu.Lock()
		j.syncing = false
		j.syncs++
		if err != nil {
			// Everything after the last good sync is in doubt: cut it.
			j.cut(j.durable)
			j.size = j.durable
			j.cuts++
			j.synced.Broadcast()
			return fmt.Errorf("%w: sync %s: %w", ErrStorage, j.path, err)
		}
		j.durable = upto
		j.synced.Broadcast()
	}
	return nil
}

// counts is the fdatasyncs and the rewrites the journal has made.
func (j *journal) counts() (syncs, rewrites int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.syncs, j.rewrites
}

// postpone puts the next rewrite off until the log has grown by
// garbageRatio again, after one that failed.
func (j *journal) postpone() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.live = j.size
}

func (j *journal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil || j.closed {
		return nil
	}
	for j.syncing {
		j.synced.Wait()
	}
	j.closed = true
	j.synced.Broadcast()
	if j.allocated > j.size {
		j.cut(j.size) // a clean close leaves no zeros behind
	}
	if err := j.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}
