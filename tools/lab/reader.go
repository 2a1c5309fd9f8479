package lab

// reader and tally: the pieces of the record labs (replay, zombie). A
// reader is a group member that fetches and processes records by hand, so
// that the lab can print what lives only in the member's memory (its
// position, the records it holds) beside what the broker keeps (the
// committed offset). A tally counts who processed each record and checks
// that a record processed again is the same bytes.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/records"
)

// reader is one member of a record lab. Membership, generation and
// assignment come from the broker's answers (the embedded Member); the
// position and the held records exist only in the member's memory and
// die with it.
type reader struct {
	*Member
	name     string // "A", as the lab's prose calls it
	tp       assignor.TopicPartition
	w        io.Writer
	tally    *tally
	position int64                   // the next offset to fetch; -1 until the member knows where to start
	held     []records.DecodedRecord // fetched and not yet processed
	done     []int64                 // offsets this member processed, in order
	gone     string                  // "crashed" or "left" once the member is gone
}

// newReader dials a member for a record lab: client id name in lower case,
// so that its member id reads "a-000001".
func newReader(ctx context.Context, addr, name string, cfg MemberConfig, tp assignor.TopicPartition, t *tally, w io.Writer) (*reader, error) {
	cfg.ClientID = strings.ToLower(name)
	cfg.Topics = []string{tp.Topic}
	cfg.Trace = w
	m, err := Dial(ctx, addr, cfg)
	if err != nil {
		return nil, err
	}
	return &reader{Member: m, name: name, tp: tp, w: w, tally: t, position: -1}, nil
}

// join joins and syncs, and insists that the member is given the lab's
// partition.
func (r *reader) join(ctx context.Context) error {
	if err := joinAndSync(ctx, r.Member); err != nil {
		return err
	}
	if !slices.Equal(r.Assigned, []assignor.TopicPartition{r.tp}) {
		return fmt.Errorf("lab: member %s was assigned %s, want %s", r.name, Partitions(r.Assigned), r.tp)
	}
	return nil
}

// start asks where to begin, as a consumer does when it is given a
// partition: the group's committed offset, or, with none, the log start
// (a reset policy of earliest). It returns the committed offset (-1 for
// none).
func (r *reader) start(ctx context.Context) (int64, error) {
	code, got, err := r.Fetch(ctx, r.tp)
	if err != nil {
		return 0, err
	}
	if err := checkFetchShape(code, got, r.tp); err != nil {
		return 0, err
	}
	committed := got[0].Offset
	if committed >= 0 {
		r.position = committed
		fmt.Fprintf(r.w, "  %s starts at the committed offset, %d.\n", r.name, committed)
		return committed, nil
	}
	code, start, err := r.ListOffset(ctx, r.tp, ListOffsetsEarliest)
	if err != nil {
		return 0, err
	}
	if code != 0 {
		return 0, fmt.Errorf("lab: ListOffsets of %s answered %s", r.tp, CodeName(code))
	}
	r.position = start
	fmt.Fprintf(r.w, "  Nothing is committed, so %s starts at the log start, %d.\n", r.name, start)
	return -1, nil
}

// checkFetchShape insists on an OffsetFetch answer of NONE for tp alone.
func checkFetchShape(code int16, got []PartitionOffset, tp assignor.TopicPartition) error {
	if code != 0 || len(got) != 1 || got[0].TopicPartition != tp {
		return fmt.Errorf("lab: OffsetFetch answered %s %v, want NONE for %s", CodeName(code), got, tp)
	}
	return nil
}

// fetch fetches from the member's position. The records it gets are held
// until processed, and the position moves past them: the position counts
// what the member has fetched, not what it has processed.
func (r *reader) fetch(ctx context.Context) error {
	f, err := r.FetchRecords(ctx, r.tp, r.position)
	if err != nil {
		return err
	}
	if f.Code != 0 {
		return fmt.Errorf("lab: Fetch of %s at %d answered %s", r.tp, r.position, CodeName(f.Code))
	}
	r.held = append(r.held, f.Records...)
	if n := len(f.Records); n > 0 {
		r.position = f.Records[n-1].Offset + 1
	}
	return nil
}

// process processes the held records up to and including offset through,
// in order, and prints each.
func (r *reader) process(through int64) error {
	for len(r.held) > 0 && r.held[0].Offset <= through {
		rec := r.held[0]
		r.held = r.held[1:]
		note, err := r.tally.add(r.name, rec)
		if err != nil {
			return err
		}
		r.done = append(r.done, rec.Offset)
		fmt.Fprintf(r.w, "  %s processes %s offset %d: %s%s\n", r.name, r.tp, rec.Offset, rec.Value, note)
	}
	return nil
}

// drop forgets the held records unprocessed.
func (r *reader) drop() { r.held = nil }

// crash ends the member's process: its connection closes, and its
// position and held records go with it. No LeaveGroup, no commit.
func (r *reader) crash() {
	r.Close()
	r.gone = "crashed"
}

// leave makes the member leave the group, as a consumer that shuts down
// cleanly does once it has committed.
func (r *reader) leave(ctx context.Context) error {
	if err := expectLeave(ctx, r.Member); err != nil {
		return err
	}
	r.ID, r.gone = "", "left"
	return nil
}

// commit commits offset for the lab's partition under the member's
// generation and insists that the answer is want.
func (r *reader) commit(ctx context.Context, offset int64, want int16) error {
	return expectCommit(ctx, r.Member, r.ID, r.Generation, want, PartitionOffset{TopicPartition: r.tp, Offset: offset})
}

// committed reads the group's committed offset of the lab's partition.
func (r *reader) committed(ctx context.Context) (int64, error) {
	code, got, err := r.Fetch(ctx, r.tp)
	if err != nil {
		return 0, err
	}
	if err := checkFetchShape(code, got, r.tp); err != nil {
		return 0, err
	}
	return got[0].Offset, nil
}

// String renders what the member's memory holds: "A position 10,
// processed 0-5, holds 6-9".
func (r *reader) String() string {
	switch r.gone {
	case "crashed":
		return fmt.Sprintf("%s crashed (position %d lost with it)", r.name, r.position)
	case "left":
		return r.name + " left"
	}
	if r.position < 0 {
		return r.name + " not started"
	}
	s := fmt.Sprintf("%s position %d", r.name, r.position)
	if len(r.done) > 0 {
		s += ", processed " + offsetRanges(r.done)
	}
	if len(r.held) > 0 {
		held := make([]int64, len(r.held))
		for i, rec := range r.held {
			held[i] = rec.Offset
		}
		s += ", holds " + offsetRanges(held)
	}
	return s
}

// printState prints one line with what each member's memory holds and what
// the group has committed: two of the chapter's four states side by side.
func printState(w io.Writer, committed int64, readers ...*reader) {
	parts := make([]string, len(readers))
	for i, r := range readers {
		parts[i] = r.String()
	}
	c := strconv.FormatInt(committed, 10)
	if committed < 0 {
		c = "none"
	}
	fmt.Fprintf(w, "  state: %s | committed %s\n", strings.Join(parts, "; "), c)
}

// offsetRanges renders offsets as runs: "0-5, 8-9", "6", "(none)".
func offsetRanges(offs []int64) string {
	if len(offs) == 0 {
		return "(none)"
	}
	offs = slices.Clone(offs)
	slices.Sort(offs)
	offs = slices.Compact(offs)
	var runs []string
	for i := 0; i < len(offs); {
		j := i
		for j+1 < len(offs) && offs[j+1] == offs[j]+1 {
			j++
		}
		if i == j {
			runs = append(runs, strconv.FormatInt(offs[i], 10))
		} else {
			runs = append(runs, fmt.Sprintf("%d-%d", offs[i], offs[j]))
		}
		i = j + 1
	}
	return strings.Join(runs, ", ")
}

// tally counts who processed each record.
type tally struct {
	first map[int64]records.DecodedRecord // each record as it was first processed
	by    map[int64][]string              // who processed each offset, in order
}

func newTally() *tally {
	return &tally{first: map[int64]records.DecodedRecord{}, by: map[int64][]string{}}
}

// timesWords names the second and later times a record is processed.
var timesWords = []string{"", "", "second", "third", "fourth"}

// add counts one processing of rec by name. A record processed before
// must be the same bytes (key, value, timestamp, headers) as the first
// time, or add fails; the note it returns says which time this is.
func (t *tally) add(name string, rec records.DecodedRecord) (string, error) {
	t.by[rec.Offset] = append(t.by[rec.Offset], name)
	first, seen := t.first[rec.Offset]
	if !seen {
		t.first[rec.Offset] = rec
		return "", nil
	}
	if !SameRecord(first, rec) {
		return "", fmt.Errorf("lab: offset %d came back as %q at %d, first processed as %q at %d", rec.Offset, rec.Value, rec.Timestamp, first.Value, first.Timestamp)
	}
	n := len(t.by[rec.Offset])
	word := strconv.Itoa(n) + "th"
	if n < len(timesWords) {
		word = timesWords[n]
	}
	return fmt.Sprintf("   (%s time; the same key, value and timestamp %s processed)", word, t.by[rec.Offset][0]), nil
}

// SameRecord reports whether two fetched records are the same bytes as a
// consumer sees them: offset, timestamp, key, value and headers.
func SameRecord(a, b records.DecodedRecord) bool {
	if a.Offset != b.Offset || a.Timestamp != b.Timestamp || !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) || len(a.Headers) != len(b.Headers) {
		return false
	}
	for i := range a.Headers {
		if a.Headers[i].Key != b.Headers[i].Key || !bytes.Equal(a.Headers[i].Value, b.Headers[i].Value) {
			return false
		}
	}
	return true
}

// duplicates returns the number of processings beyond the first, and the
// offsets processed exactly n times for each n above one.
func (t *tally) duplicates() (extra int, byTimes map[int][]int64) {
	byTimes = map[int][]int64{}
	for off, names := range t.by {
		if len(names) > 1 {
			extra += len(names) - 1
			byTimes[len(names)] = append(byTimes[len(names)], off)
		}
	}
	for _, offs := range byTimes {
		slices.Sort(offs)
	}
	return extra, byTimes
}

// write prints the tally: one line per record, who processed it and how
// many times.
func (t *tally) write(w io.Writer) {
	offs := make([]int64, 0, len(t.by))
	for off := range t.by {
		offs = append(offs, off)
	}
	slices.Sort(offs)
	fmt.Fprintf(w, "  offset  value       times  processed by\n")
	for _, off := range offs {
		fmt.Fprintf(w, "  %-6d  %-10s  %-5d  %s\n", off, t.first[off].Value, len(t.by[off]), strings.Join(t.by[off], ", "))
	}
}

// codeIllegalGeneration is the fence's answer to a stale member.
var codeIllegalGeneration = kerr.IllegalGeneration.Code
