package offsets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
)

// FileName is the offsets file's name inside the data directory.
const FileName = "offsets.json"

// fileVersion is the only format version this package reads and writes.
const fileVersion = 1

// ErrCorrupt is returned when the offsets file exists but cannot be read as
// the chapter's format, when a journal segment holds damage that a torn
// write cannot explain, or when segments exist without the offsets file.
// The store never replaces or repairs such files.
var ErrCorrupt = errors.New("corrupt offsets file")

// fileDoc is the chapter's document:
// {"version":1,"groups":{"<group>":[{"topic":"t","partition":0,"offset":6}]}}.
// Unknown fields are ignored on load, so files with extra fields still load.
type fileDoc struct {
	Version *int                   `json:"version"`
	Groups  map[string][]fileEntry `json:"groups"`
}

type fileEntry struct {
	Topic       *string `json:"topic"`
	Partition   *int32  `json:"partition"`
	Offset      *int64  `json:"offset"`
	Metadata    string  `json:"metadata,omitempty"`
	LeaderEpoch *int32  `json:"leader_epoch,omitempty"`
}

// load reads path into a table. A missing file is an empty table; anything
// else that is not a valid document is an error naming the path.
func load(path string) (table, bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return table{}, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read offsets file %s: %w", path, err)
	}
	t, err := decode(data)
	if err != nil {
		return nil, true, fmt.Errorf("%w %s: %w", ErrCorrupt, path, err)
	}
	return t, true, nil
}

// decode parses one document, strictly: every entry needs a topic, a
// partition and an offset, none of them negative.
func decode(data []byte) (table, error) {
	var doc fileDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Version == nil {
		return nil, errors.New(`missing "version"`)
	}
	if *doc.Version != fileVersion {
		return nil, fmt.Errorf("version %d, want %d", *doc.Version, fileVersion)
	}
	t := make(table, len(doc.Groups))
	for group, entries := range doc.Groups {
		g := make(map[Key]Entry, len(entries))
		for i, fe := range entries {
			if fe.Topic == nil || *fe.Topic == "" || fe.Partition == nil || fe.Offset == nil {
				return nil, fmt.Errorf("group %q entry %d: topic, partition and offset are required", group, i)
			}
			if *fe.Partition < 0 || *fe.Offset < 0 {
				return nil, fmt.Errorf("group %q entry %d: negative partition or offset", group, i)
			}
			e := Entry{Topic: *fe.Topic, Partition: *fe.Partition, Offset: *fe.Offset, Metadata: fe.Metadata, LeaderEpoch: NoLeaderEpoch}
			if fe.LeaderEpoch != nil {
				e.LeaderEpoch = *fe.LeaderEpoch
			}
			g[e.Key()] = e
		}
		if len(g) > 0 {
			t[group] = g
		}
	}
	return t, nil
}

// encode renders t, with overlay's groups replacing t's, as a sorted,
// indented document.
func encode(t, overlay table) []byte {
	doc := struct {
		Version int                    `json:"version"`
		Groups  map[string][]fileEntry `json:"groups"`
	}{Version: fileVersion, Groups: make(map[string][]fileEntry, len(t)+len(overlay))}
	add := func(group string, g map[Key]Entry) {
		if len(g) == 0 {
			return
		}
		entries := make([]Entry, 0, len(g))
		for _, e := range g {
			entries = append(entries, e)
		}
		slices.SortFunc(entries, compareEntries)
		out := make([]fileEntry, len(entries))
		for i := range entries {
			e := &entries[i]
			out[i] = fileEntry{Topic: &e.Topic, Partition: &e.Partition, Offset: &e.Offset, Metadata: e.Metadata}
			if e.LeaderEpoch != NoLeaderEpoch {
				out[i].LeaderEpoch = &e.LeaderEpoch
			}
		}
		doc.Groups[group] = out
	}
	for group, g := range t {
		if _, replaced := overlay[group]; !replaced {
			add(group, g)
		}
	}
	for group, g := range overlay {
		add(group, g)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		// Only strings, integers, maps and slices: Encode cannot fail.
		panic(fmt.Sprintf("encode offsets: %v", err))
	}
	return buf.Bytes()
}
