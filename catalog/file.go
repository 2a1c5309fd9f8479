package catalog

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/minibroker/minibroker/internal/atomicfile"
	"github.com/minibroker/minibroker/internal/datadir"
)

// fileVersion is the version this package writes; version 1 (no ids) is
// read and upgraded.
const fileVersion = 2

// file is the catalog file of one data directory.
type file struct {
	path string
	fs   atomicfile.FS
}

func newFile(dir string) *file {
	return &file{path: filepath.Join(dir, FileName), fs: atomicfile.OS{}}
}

// fileTopic is one topic as version 2 stores it.
type fileTopic struct {
	Partitions int32             `json:"partitions"`
	ID         string            `json:"id"`
	Configs    map[string]string `json:"configs,omitempty"`
}

// load reads the catalog. upgrade is true for a version 1 file, whose
// topics have no ids yet. A missing file is an empty catalog.
func (f *file) load() (st *state, upgrade bool, err error) {
	st = newState()
	data, err := datadir.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read topic catalog: %w", err)
	}
	topics, upgrade, err := decode(data)
	if err == nil {
		for _, t := range topics {
			st.topics[t.Name] = t
			st.ids[t.ID] = t.Name
		}
		err = decodeDeleting(data, st)
	}
	if err != nil {
		return nil, false, fmt.Errorf("corrupt topic catalog %s: %w", f.path, err)
	}
	return st, upgrade, nil
}

// decodeDeleting reads the file's pending deletes and the seq of the last
// journal line folded into it (both absent before topics were deleted).
func decodeDeleting(data []byte, st *state) error {
	var doc struct {
		Seq      uint64            `json:"seq"`
		Deleting map[string]string `json:"deleting"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return err
	}
	st.seq = doc.Seq
	for name, s := range doc.Deleting {
		id, err := decodeID(s)
		if err != nil {
			return fmt.Errorf("deleting %q: %w", name, err)
		}
		if !ValidTopicName(name) {
			return fmt.Errorf("deleting %q: invalid name", name)
		}
		if _, ok := st.topics[name]; ok {
			return fmt.Errorf("topic %q is both present and being deleted", name)
		}
		st.deleting[name] = id
	}
	return nil
}

// decode parses a catalog strictly: a known version, no topic named twice,
// valid names, at least one partition each, and (version 2) distinct,
// non-zero ids.
func decode(data []byte) ([]Topic, bool, error) {
	var doc struct {
		Version *int            `json:"version"`
		Topics  json.RawMessage `json:"topics"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, false, err
	}
	if doc.Version == nil || (*doc.Version != 1 && *doc.Version != fileVersion) {
		return nil, false, errors.New("missing or unknown version")
	}
	raw, err := objectMembers(doc.Topics)
	if err != nil {
		return nil, false, fmt.Errorf("topics: %w", err)
	}
	ids := map[ID]string{}
	topics := make([]Topic, 0, len(raw))
	for _, m := range raw {
		t := Topic{Name: m.key}
		if *doc.Version == 1 {
			err = json.Unmarshal(m.value, &t.Partitions)
		} else {
			t.Partitions, t.ID, t.Configs, err = decodeTopic(m.value)
		}
		if err != nil {
			return nil, false, fmt.Errorf("topic %q: %w", m.key, err)
		}
		switch {
		case !ValidTopicName(t.Name):
			return nil, false, fmt.Errorf("topic %q: invalid name", t.Name)
		case t.Partitions < 1:
			return nil, false, fmt.Errorf("topic %q has %d partitions", t.Name, t.Partitions)
		}
		if *doc.Version == fileVersion {
			if other, dup := ids[t.ID]; dup {
				return nil, false, fmt.Errorf("topics %q and %q share id %s", other, t.Name, t.ID)
			}
			ids[t.ID] = t.Name
		}
		topics = append(topics, t)
	}
	return topics, *doc.Version == 1, nil
}

func decodeTopic(raw json.RawMessage) (int32, ID, map[string]string, error) {
	var ft fileTopic
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ft); err != nil {
		return 0, ID{}, nil, err
	}
	if err := checkConfigs(ft.Configs); err != nil {
		return 0, ID{}, nil, err
	}
	id, err := decodeID(ft.ID)
	return ft.Partitions, id, ownConfigs(ft.Configs), err
}

// member is one key and value of a JSON object, in file order.
type member struct {
	key   string
	value json.RawMessage
}

// objectMembers splits a JSON object into its members, refusing a key
// that appears twice: encoding/json would silently keep the last one.
func objectMembers(raw json.RawMessage) ([]member, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	seen := map[string]bool{}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string) // inside an object, keys are strings
		if seen[key] {
			return nil, fmt.Errorf("%q appears twice", key)
		}
		seen[key] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, fmt.Errorf("%q: %w", key, err)
		}
		out = append(out, member{key: key, value: value})
	}
	return out, nil
}

// save atomically replaces the file with topics, as version 2.
func (f *file) save(topics map[string]Topic, deleting map[string]ID, seq uint64) error {
	doc := struct {
		Version  int                  `json:"version"`
		Topics   map[string]fileTopic `json:"topics"`
		Deleting map[string]string    `json:"deleting,omitempty"`
		Seq      uint64               `json:"seq,omitempty"`
	}{Version: fileVersion, Topics: make(map[string]fileTopic, len(topics)), Seq: seq}
	for name, t := range topics {
		doc.Topics[name] = fileTopic{Partitions: t.Partitions, ID: encodeID(t.ID), Configs: t.Configs}
	}
	if len(deleting) > 0 {
		doc.Deleting = make(map[string]string, len(deleting))
		for name, id := range deleting {
			doc.Deleting[name] = encodeID(id)
		}
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("encode topic catalog: %w", err)
	}
	return atomicfile.Write(f.fs, f.path, append(data, '\n'))
}

// encodeID renders an id as Kafka's Uuid.toString does.
func encodeID(id ID) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

func decodeID(s string) (ID, error) {
	var id ID
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("topic id %q is not 16 bytes of unpadded base64url", s)
	}
	copy(id[:], b)
	if id == (ID{}) {
		return id, errors.New("topic id is zero")
	}
	return id, nil
}
