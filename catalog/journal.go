package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/minibroker/minibroker/internal/atomicfile"
	"github.com/minibroker/minibroker/internal/datadir"
)

// JournalName is the catalog's journal beside FileName: one line per
// topic created since FileName was last written,
//
//	{"topic":"orders","partitions":4,"id":"<base64url>","configs":{"segment.bytes":"1048576"}}
//
// (configs only for a topic that has its own), and one per change since:
// {"op":"delete"}, {"op":"purge"}, {"op":"partitions"} and
// {"op":"configs"}, which replaces the topic's configs (configs.go).
//
// appended and fsynced before the topic is shown, so a create costs one
// short write and one sync, however many topics exist. Open folds the
// journal into FileName (atomically) and removes it, and so does a
// Create once the journal holds foldEntries lines.
const JournalName = "topics.journal"

// foldEntries is how many journal lines make Create fold the journal
// into FileName: the rewrite of every topic is paid once per that many
// creates.
const foldEntries = 1024

// journal is the append side of the catalog's journal.
type journal struct {
	path    string
	syncDir func(dir string) error
	f       *os.File // nil until the first append after Open or a fold
	size    int64    // bytes of whole lines in the file
	entries int      // lines in the file
	broken  error    // a failed append could not be taken back: refuse more
}

func newJournal(dir string) *journal {
	return &journal{path: filepath.Join(dir, JournalName), syncDir: atomicfile.OS{}.SyncDir}
}

// journalEntry is one line.
type journalEntry struct {
	Op         string `json:"op,omitempty"` // "" creates, opDelete, opPurge
	Topic      string `json:"topic"`
	Partitions int32  `json:"partitions,omitempty"`
	ID         string `json:"id"`
	Seq        uint64 `json:"seq,omitempty"`
	// Configs: a create's or an opConfigs line's topic configs.
	Configs map[string]string `json:"configs,omitempty"`
}

// The journal's operations beside a create (delete.go).
const (
	opDelete     = "delete"
	opPurge      = "purge"
	opPartitions = "partitions" // a new, larger partition count
)

// entry is one decoded journal line.
type entry struct {
	op  string
	t   Topic
	seq uint64
}

// append writes t's line and syncs it. A failed write is cut back off
// the file, so that the next line does not follow a torn one.
func (j *journal) append(e entry) error {
	if j.broken != nil {
		return j.broken
	}
	je := journalEntry{Op: e.op, Topic: e.t.Name, Partitions: e.t.Partitions, ID: encodeID(e.t.ID), Seq: e.seq}
	switch e.op {
	case "", opConfigs:
		je.Configs = e.t.Configs
	}
	if e.op == opConfigs {
		je.Partitions = 0
	}
	line, _ := json.Marshal(je)
	line = append(line, '\n')
	if j.f == nil {
		f, err := datadir.OpenFile(j.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("open %s: %w", j.path, err)
		}
		if err := j.syncDir(filepath.Dir(j.path)); err != nil {
			_ = f.Close()
			return fmt.Errorf("sync %s: %w", filepath.Dir(j.path), err)
		}
		j.f = f
	}
	_, err := j.f.Write(line)
	if err == nil {
		err = j.f.Sync()
	}
	if err != nil {
		if terr := j.f.Truncate(j.size); terr != nil {
			j.broken = fmt.Errorf("%s: a failed append could not be cut back: %w", j.path, terr)
		}
		return fmt.Errorf("append to %s: %w", j.path, err)
	}
	j.size += int64(len(line))
	j.entries++
	return nil
}

// reset removes the journal once FileName holds everything in it.
func (j *journal) reset() error {
	if j.f != nil {
		_ = j.f.Close()
		j.f = nil
	}
	if err := os.Remove(j.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	j.size, j.entries = 0, 0
	return j.syncDir(filepath.Dir(j.path))
}

func (j *journal) close() {
	if j.f != nil {
		_ = j.f.Close()
		j.f = nil
	}
}

// decodeJournal reads a journal: whole lines, each a valid entry. A last
// line without its newline is a torn append (the topic was never shown)
// and is dropped: whole is the length of what is kept. A bad line
// anywhere else is an error naming it.
func decodeJournal(data []byte) (topics []entry, whole int, err error) {
	for line := 1; whole < len(data); line++ {
		i := bytes.IndexByte(data[whole:], '\n')
		if i < 0 {
			return topics, whole, nil // torn
		}
		t, err := decodeEntry(data[whole : whole+i])
		if err != nil {
			return nil, 0, fmt.Errorf("line %d: %w", line, err)
		}
		topics = append(topics, t)
		whole += i + 1
	}
	return topics, whole, nil
}

func decodeEntry(b []byte) (entry, error) {
	var e journalEntry
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return entry{}, err
	}
	if dec.More() {
		return entry{}, errors.New("more than one entry on the line")
	}
	id, err := decodeID(e.ID)
	if err != nil {
		return entry{}, err
	}
	switch {
	case !ValidTopicName(e.Topic):
		return entry{}, fmt.Errorf("topic %q: invalid name", e.Topic)
	case e.Op != "" && e.Op != opDelete && e.Op != opPurge && e.Op != opPartitions && e.Op != opConfigs:
		return entry{}, fmt.Errorf("topic %q: unknown op %q", e.Topic, e.Op)
	case (e.Op == "" || e.Op == opPartitions) && e.Partitions < 1:
		return entry{}, fmt.Errorf("topic %q has %d partitions", e.Topic, e.Partitions)
	}
	if err := checkConfigs(e.Configs); err != nil {
		return entry{}, fmt.Errorf("topic %q: %w", e.Topic, err)
	}
	return entry{op: e.Op, t: Topic{Name: e.Topic, Partitions: e.Partitions, ID: id, Configs: ownConfigs(e.Configs)}, seq: e.Seq}, nil
}

// loadJournal reads the journal of the catalog in dir and applies it to
// st (FileName's). A line whose seq the file already holds was folded
// into it by a fold that crashed before removing the journal, and is
// passed over; so is a line from before lines had a seq (0) creating a
// topic the file has, the same. Anything else must apply cleanly: a
// create of a new name and a free id, a delete of the topic as it is, a
// purge of a pending delete. A torn last line is cut off the file, logged
// by the caller. It returns how many lines applied and the bytes cut.
func loadJournal(path string, st *state) (int, int, error) {
	data, err := datadir.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("read topic journal: %w", err)
	}
	entries, whole, err := decodeJournal(data)
	if err != nil {
		return 0, 0, fmt.Errorf("corrupt topic journal %s: %w", path, err)
	}
	folded := st.seq
	added := 0
	for i, e := range entries {
		if e.seq != 0 && e.seq <= folded {
			continue
		}
		if err := st.apply(e); err != nil {
			return 0, 0, fmt.Errorf("corrupt topic journal %s: line %d: %w", path, i+1, err)
		}
		added++
	}
	if cut := len(data) - whole; cut > 0 {
		if err := os.Truncate(path, int64(whole)); err != nil {
			return 0, 0, fmt.Errorf("cut the torn tail of %s: %w", path, err)
		}
		return added, cut, nil
	}
	return added, 0, nil
}
