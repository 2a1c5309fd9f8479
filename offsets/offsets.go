package offsets

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"
)

// MaxMetadataBytes is the largest commit metadata accepted, Kafka's
// offset.metadata.max.bytes default.
const MaxMetadataBytes = 4096

// NoLeaderEpoch marks an entry committed without a leader epoch.
const NoLeaderEpoch = -1

// ErrNegativeOffset is returned for a commit of an offset below zero: the
// chapter refuses it, and the file format has no place for it. The wire
// answers OFFSET_OUT_OF_RANGE.
var ErrNegativeOffset = errors.New("negative offset")

// ErrInvalidEntry is returned for an entry with an empty topic, a negative
// partition, or a string that is not valid UTF-8: the file could not hold
// it faithfully.
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
		if e.Topic == "" || e.Partition < 0 || !utf8.ValidString(e.Topic) || !utf8.ValidString(e.Metadata) {
			return fmt.Errorf("%w: topic %q partition %d", ErrInvalidEntry, e.Topic, e.Partition)
		}
		if e.Offset < 0 {
			return fmt.Errorf("%w: %s-%d offset %d", ErrNegativeOffset, e.Topic, e.Partition, e.Offset)
		}
		if len(e.Metadata) > maxMetadata {
			return fmt.Errorf("%w: %s-%d has %d bytes, limit %d", ErrMetadataTooLarge, e.Topic, e.Partition, len(e.Metadata), maxMetadata)
		}
	}
	return nil
}

// table holds every group's committed offsets. It is not safe for
// concurrent use; its owner guards it.
type table map[string]map[Key]Entry

// apply stores entries for group, later entries winning.
func (t table) apply(group string, entries []Entry) {
	g := t[group]
	if g == nil {
		g = make(map[Key]Entry, len(entries))
		t[group] = g
	}
	for _, e := range entries {
		g[e.Key()] = e
	}
}

// sorted returns group's entries ordered by topic, then partition.
func (t table) sorted(group string) []Entry {
	g := t[group]
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
