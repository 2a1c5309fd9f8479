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
//	{"topic":"orders","partitions":4,"id":"<base64url>"}
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
	Topic      string `json:"topic"`
	Partitions int32  `json:"partitions"`
	ID         string `json:"id"`
}

// append writes t's line and syncs it. A failed write is cut back off
// the file, so that the next line does not follow a torn one.
func (j *journal) append(t Topic) error {
	if j.broken != nil {
		return j.broken
	}
	line, _ := json.Marshal(journalEntry{Topic: t.Name, Partitions: t.Partitions, ID: encodeID(t.ID)})
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
func decodeJournal(data []byte) (topics []Topic, whole int, err error) {
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

func decodeEntry(b []byte) (Topic, error) {
	var e journalEntry
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return Topic{}, err
	}
	if dec.More() {
		return Topic{}, errors.New("more than one entry on the line")
	}
	id, err := decodeID(e.ID)
	if err != nil {
		return Topic{}, err
	}
	switch {
	case !ValidTopicName(e.Topic):
		return Topic{}, fmt.Errorf("topic %q: invalid name", e.Topic)
	case e.Partitions < 1:
		return Topic{}, fmt.Errorf("topic %q has %d partitions", e.Topic, e.Partitions)
	}
	return Topic{Name: e.Topic, Partitions: e.Partitions, ID: id}, nil
}

// loadJournal reads the journal of the catalog in dir and merges it into
// topics (FileName's): a topic already there must be the same (a fold
// that crashed before removing the journal), an id must not be taken. A
// torn last line is cut off the file, logged by the caller. It returns
// the merged topics, how many came from the journal and the bytes cut.
func loadJournal(path string, topics []Topic) ([]Topic, int, int, error) {
	data, err := datadir.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return topics, 0, 0, nil
	}
	if err != nil {
		return nil, 0, 0, fmt.Errorf("read topic journal: %w", err)
	}
	entries, whole, err := decodeJournal(data)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("corrupt topic journal %s: %w", path, err)
	}
	byName := map[string]Topic{}
	ids := map[ID]string{}
	for _, t := range topics {
		byName[t.Name] = t
		ids[t.ID] = t.Name
	}
	added := 0
	for _, t := range entries {
		if old, ok := byName[t.Name]; ok {
			if old != t {
				return nil, 0, 0, fmt.Errorf("corrupt topic journal %s: topic %q is also in %s, differently", path, t.Name, FileName)
			}
			continue
		}
		if other, ok := ids[t.ID]; ok {
			return nil, 0, 0, fmt.Errorf("corrupt topic journal %s: topics %q and %q share id %s", path, other, t.Name, t.ID)
		}
		byName[t.Name], ids[t.ID] = t, t.Name
		topics = append(topics, t)
		added++
	}
	if cut := len(data) - whole; cut > 0 {
		if err := os.Truncate(path, int64(whole)); err != nil {
			return nil, 0, 0, fmt.Errorf("cut the torn tail of %s: %w", path, err)
		}
		return topics, added, cut, nil
	}
	return topics, added, 0, nil
}
