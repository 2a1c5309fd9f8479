package offsets

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"
)

// MaxMetadataBytes is the largest commit metadata accepted, Kafka's
// offset.metadata.max.bytes default.
const MaxMetadataBytes = 4096

// NoLeaderEpoch marks an entry committed without a leader epoch.
const NoLeaderEpoch = -1

// The reset sentinels: the two negative offsets a client may commit. They
// are ListOffsets' timestamps for the log end and the log start, and
// kafkajs commits one of them for a partition whose fetch position fell
// out of range (its setDefaultOffset), so that its next OffsetFetch
// resets it by its own policy. Kafka stores them as it stores any offset
// and OffsetFetch returns them as committed; a client reads a negative
// committed offset as no commit.
const (
	ResetLatest   = -1
	ResetEarliest = -2
)

// IsResetSentinel reports whether offset is ResetLatest or ResetEarliest.
func IsResetSentinel(offset int64) bool {
	return offset == ResetLatest || offset == ResetEarliest
}

// ErrNegativeOffset is returned for a commit of an offset below
// ResetEarliest: a negative offset that is not a reset sentinel means
// nothing to any client, and the chapter refuses it. The wire answers
// OFFSET_OUT_OF_RANGE.
var ErrNegativeOffset = errors.New("negative offset")

// ErrInvalidEntry is returned for an entry with an empty topic, a negative
// partition or commit time, or a string that is not valid UTF-8: the file
// could not hold it faithfully.
var ErrInvalidEntry = errors.New("invalid offset entry")

// ErrMetadataTooLarge is returned for commit metadata over the limit
// Validate is given (at most MaxMetadataBytes). The wire answers
// OFFSET_METADATA_TOO_LARGE.
var ErrMetadataTooLarge = errors.New("offset metadata too large")

// Entry is one committed offset: the next offset the group will consume from
// Topic's Partition.
type Entry struct {
	Topic       string
	Partition   int32
	Offset      int64
	Metadata    string
	LeaderEpoch int32 // NoLeaderEpoch when the client sent none
	// CommitTimestampMs is when the offset was committed, in milliseconds
	// since the Unix epoch, as the caller's clock said (Kafka's
	// OffsetAndMetadata.commitTimestampMs); 0 when unknown, as in a file
	// written before commit times were kept. Expire uses it.
	CommitTimestampMs int64
}

// Key identifies the partition an entry belongs to.
type Key struct {
	Topic     string
	Partition int32
}

// Key returns the partition e belongs to.
func (e Entry) Key() Key { return Key{Topic: e.Topic, Partition: e.Partition} }

// Validate checks the entries of one commit, with metadata limited to
// maxMetadata bytes (MaxMetadataBytes when it is 0 or above it). It is the
// one place the rules for a committed offset live: the coordinator calls it
// before it orders a commit (with its configured limit), the store before
// it writes one and the journal when it reads one back. The first bad
// entry decides the error; a commit with any bad entry is rejected whole.
func Validate(entries []Entry, maxMetadata int) error {
	if maxMetadata <= 0 || maxMetadata > MaxMetadataBytes {
		maxMetadata = MaxMetadataBytes
	}
	for _, e := range entries {
		if err := validateKey(e.Key()); err != nil || !utf8.ValidString(e.Metadata) || e.CommitTimestampMs < 0 {
			return fmt.Errorf("%w: topic %q partition %d", ErrInvalidEntry, e.Topic, e.Partition)
		}
		if !validOffset(e.Offset) {
			return fmt.Errorf("%w: %s-%d offset %d (only the reset sentinels -1 and -2 may be committed below 0)", ErrNegativeOffset, e.Topic, e.Partition, e.Offset)
		}
		if len(e.Metadata) > maxMetadata {
			return fmt.Errorf("%w: %s-%d has %d bytes, limit %d", ErrMetadataTooLarge, e.Topic, e.Partition, len(e.Metadata), maxMetadata)
		}
	}
	return nil
}

// validOffset is the rule for a committed offset: 0 or above, or a reset
// sentinel. Validate and the snapshot file's reader apply it.
func validOffset(offset int64) bool {
	return offset >= 0 || IsResetSentinel(offset)
}

func validateKey(k Key) error {
	if k.Topic == "" || k.Partition < 0 || !utf8.ValidString(k.Topic) {
		return fmt.Errorf("%w: topic %q partition %d", ErrInvalidEntry, k.Topic, k.Partition)
	}
	return nil
}

func validateGroup(group string) error {
	if !utf8.ValidString(group) {
		return fmt.Errorf("%w: group %q", ErrInvalidEntry, group)
	}
	return nil
}

// opKind says what an op does.
type opKind uint8

const (
	opCommit opKind = 1 // set entries
	opDelete opKind = 2 // remove entries: all of the group's, or keys
)

// op is one change to the committed offsets. Both stores apply ops in the
// order they were enqueued; the file store journals each one.
type op struct {
	kind    opKind
	group   string
	entries []Entry // opCommit
	keys    []Key   // opDelete: the partitions to remove; nil: every one
	// expireMs, for opDelete, limits the removal to entries whose commit
	// time is known and at or before it (Expire); 0: no limit.
	expireMs int64
}

// The constructors below validate a request and return its op, or nil
// when there is nothing to do. They copy their arguments.

func commitOp(group string, entries []Entry) (*op, error) {
	if err := Validate(entries, MaxMetadataBytes); err != nil {
		return nil, err
	}
	if err := validateGroup(group); err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, nil
	}
	return &op{kind: opCommit, group: group, entries: slices.Clone(entries)}, nil
}

func deleteOp(group string) (*op, error) {
	if err := validateGroup(group); err != nil {
		return nil, err
	}
	return &op{kind: opDelete, group: group}, nil
}

func deleteOffsetsOp(group string, keys []Key) (*op, error) {
	if err := validateGroup(group); err != nil {
		return nil, err
	}
	for _, k := range keys {
		if err := validateKey(k); err != nil {
			return nil, err
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	return &op{kind: opDelete, group: group, keys: slices.Clone(keys)}, nil
}

func expireOp(group string, cutoff time.Time) (*op, error) {
	if err := validateGroup(group); err != nil {
		return nil, err
	}
	ms := cutoff.UnixMilli()
	if ms <= 0 { // nothing with a known commit time is that old
		return nil, nil
	}
	return &op{kind: opDelete, group: group, expireMs: ms}, nil
}

// table holds every group's committed offsets. It is not safe for
// concurrent use; its owner guards it. A group with no entries is not in
// it.
type table map[string]map[Key]Entry

// apply makes the change o describes.
func (t table) apply(o *op) {
	switch o.kind {
	case opCommit:
		t.commit(o.group, o.entries)
	case opDelete:
		t.remove(o.group, o.keys, o.expireMs)
	}
}

// commit stores entries for group, later entries winning.
func (t table) commit(group string, entries []Entry) {
	if len(entries) == 0 {
		return
	}
	g := t[group]
	if g == nil {
		g = make(map[Key]Entry, len(entries))
		t[group] = g
	}
	for _, e := range entries {
		g[e.Key()] = e
	}
}

// remove deletes group's entries for keys (nil: all of them); with
// expireMs > 0, only those committed at a known time at or before it.
// Each entry's fate depends only on its own value, which is what keeps
// replaying a journal over a snapshot that already holds it harmless
// (compact.go).
func (t table) remove(group string, keys []Key, expireMs int64) {
	g := t[group]
	expired := func(e Entry) bool {
		return expireMs <= 0 || (e.CommitTimestampMs > 0 && e.CommitTimestampMs <= expireMs)
	}
	if keys == nil {
		for k, e := range g {
			if expired(e) {
				delete(g, k)
			}
		}
	}
	for _, k := range keys {
		if e, ok := g[k]; ok && expired(e) {
			delete(g, k)
		}
	}
	if len(g) == 0 {
		delete(t, group)
	}
}

// sorted returns group's entries ordered by topic, then partition; nil
// when it has none.
func (t table) sorted(group string) []Entry {
	g := t[group]
	if len(g) == 0 {
		return nil
	}
	out := make([]Entry, 0, len(g))
	for _, e := range g {
		out = append(out, e)
	}
	slices.SortFunc(out, compareEntries)
	return out
}

func (t table) lookup(group string, k Key) (Entry, bool) {
	e, ok := t[group][k]
	return e, ok
}

func (t table) groups() []string {
	out := make([]string, 0, len(t))
	for g, entries := range t {
		if len(entries) > 0 {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

func compareEntries(a, b Entry) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}
