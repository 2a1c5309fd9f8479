package offsets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/minibroker/minibroker/internal/datadir"
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
	// CommitTimestampMs is Entry.CommitTimestampMs; absent when unknown,
	// so that a chapter file reads and writes back unchanged.
	CommitTimestampMs int64 `json:"commit_timestamp_ms,omitempty"`
}

// load reads path into a table. A missing file is an empty table; anything
// else that is not a valid document is an error naming the path. It reads
// only a regular file, never through a symbolic link.
func load(path string) (t table, size int64, exists bool, err error) {
	data, err := datadir.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return table{}, 0, false, nil
	}
	if errors.Is(err, datadir.ErrNotRegular) {
		return nil, 0, true, fmt.Errorf("%w; move it out of the data directory", err)
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("read offsets file %s: %w", path, err)
	}
	t, err = decode(data)
	if err != nil {
		return nil, 0, true, fmt.Errorf("%w %s: %w", ErrCorrupt, path, err)
	}
	return t, int64(len(data)), true, nil
}

// decode parses one document, strictly: every entry needs a topic, a
// partition and an offset, none of them negative; a group, or a partition
// within a group, appears once; and every id reads back as written
// (checkDoc).
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
	if err := checkDoc(data); err != nil {
		return nil, err
	}
	t := make(table, len(doc.Groups))
	for _, group := range slices.Sorted(maps.Keys(doc.Groups)) {
		entries := doc.Groups[group]
		g := make(map[Key]Entry, len(entries))
		first := make(map[Key]int, len(entries))
		for i, fe := range entries {
			if fe.Topic == nil || *fe.Topic == "" || fe.Partition == nil || fe.Offset == nil {
				return nil, fmt.Errorf("group %q entry %d: topic, partition and offset are required", group, i)
			}
			if *fe.Partition < 0 || !validOffset(*fe.Offset) || fe.CommitTimestampMs < 0 {
				return nil, fmt.Errorf("group %q entry %d: negative partition or commit time, or an offset below -2", group, i)
			}
			e := Entry{Topic: *fe.Topic, Partition: *fe.Partition, Offset: *fe.Offset, Metadata: fe.Metadata,
				LeaderEpoch: NoLeaderEpoch, CommitTimestampMs: fe.CommitTimestampMs}
			if fe.LeaderEpoch != nil {
				e.LeaderEpoch = *fe.LeaderEpoch
			}
			if j, dup := first[e.Key()]; dup {
				return nil, fmt.Errorf("group %q entry %d: %s-%d again (first as entry %d); which one holds is unknown", group, i, e.Topic, e.Partition, j)
			}
			first[e.Key()] = i
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
			out[i] = fileEntry{Topic: &e.Topic, Partition: &e.Partition, Offset: &e.Offset, Metadata: e.Metadata,
				CommitTimestampMs: e.CommitTimestampMs}
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

// checkDoc walks the tokens of a document that json.Unmarshal accepted,
// for what Unmarshal lets through silently: a key repeated in the
// document, in "groups" or in an entry (Unmarshal keeps the last, or
// merges), and a group name, topic or metadata that does not read back as
// written (invalid UTF-8 or a lone surrogate escape, which Unmarshal
// replaces with U+FFFD). Unknown fields are skipped unchecked.
func checkDoc(data []byte) error {
	w := walker{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	w.dec.UseNumber()
	return w.object("", func(key string) error {
		if key != "groups" {
			return w.skip()
		}
		return w.object("groups", func(group string) error {
			if !w.faithful(group) {
				return fmt.Errorf("group %q: the name is not valid UTF-8; the file cannot hold it", group)
			}
			return w.array(func(i int) error {
				where := fmt.Sprintf("group %q entry %d", group, i)
				return w.object(where, func(field string) error {
					if field != "topic" && field != "metadata" {
						return w.skip()
					}
					s, ok, err := w.str()
					if err == nil && ok && !w.faithful(s) {
						err = fmt.Errorf("%s: %s %q is not valid UTF-8; the file cannot hold it", where, field, s)
					}
					return err
				})
			})
		})
	})
}

// walker reads a document token by token and keeps the bytes of the last
// one.
type walker struct {
	data []byte
	dec  *json.Decoder
	raw  []byte // the last token as it is in data
}

func (w *walker) token() (json.Token, error) {
	start := w.dec.InputOffset()
	tok, err := w.dec.Token()
	w.raw = bytes.TrimLeft(w.data[start:w.dec.InputOffset()], " \t\r\n:,")
	return tok, err
}

// object reads an object (or null), calling member for each key, after
// which member reads the value. A key seen twice is an error; where says
// which object this is.
func (w *walker) object(where string, member func(key string) error) error {
	tok, err := w.token()
	if err != nil || tok == nil {
		return err
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("%s: not an object", where)
	}
	seen := map[string]bool{}
	for w.dec.More() {
		tok, err := w.token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if seen[key] {
			switch where {
			case "":
				return fmt.Errorf("%q appears twice", key)
			case "groups":
				return fmt.Errorf("group %q appears twice; which one holds is unknown", key)
			}
			return fmt.Errorf("%s: %q appears twice", where, key)
		}
		seen[key] = true
		if err := member(key); err != nil {
			return err
		}
	}
	_, err = w.token() // '}'
	return err
}

// array reads an array (or null), calling elem for each element.
func (w *walker) array(elem func(i int) error) error {
	tok, err := w.token()
	if err != nil || tok == nil {
		return err
	}
	for i := 0; w.dec.More(); i++ {
		if err := elem(i); err != nil {
			return err
		}
	}
	_, err = w.token() // ']'
	return err
}

// str reads a value and returns it if it is a string.
func (w *walker) str() (string, bool, error) {
	tok, err := w.token()
	if err != nil {
		return "", false, err
	}
	if d, ok := tok.(json.Delim); ok {
		return "", false, w.skipRest(d)
	}
	s, ok := tok.(string)
	return s, ok, nil
}

// skip reads one value, however deep.
func (w *walker) skip() error {
	tok, err := w.token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); ok {
		return w.skipRest(d)
	}
	return nil
}

// skipRest reads the rest of the object or array that d opened.
func (w *walker) skipRest(d json.Delim) error {
	if d != '{' && d != '[' {
		return nil
	}
	for depth := 1; depth > 0; {
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

// faithful reports whether s, the string the last token decoded to, holds
// what the token spells: Unmarshal turns invalid UTF-8 and lone surrogate
// escapes into U+FFFD, so s holds more of them than the token spells,
// literally or as \ufffd.
func (w *walker) faithful(s string) bool {
	want := strings.Count(s, "\uFFFD")
	if want == 0 {
		return true
	}
	raw := w.raw
	if !utf8.Valid(raw) {
		return false
	}
	spelled := 0
	for i := 0; i < len(raw); i++ {
		switch {
		case raw[i] == '\\' && i+5 < len(raw) && raw[i+1] == 'u' && strings.EqualFold(string(raw[i+2:i+6]), "fffd"):
			spelled++
			i += 5
		case raw[i] == '\\':
			i++ // the escaped byte
		case bytes.HasPrefix(raw[i:], []byte("\uFFFD")):
			spelled++
			i += len("\uFFFD") - 1
		}
	}
	return spelled == want
}
