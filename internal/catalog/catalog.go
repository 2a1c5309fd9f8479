// Package catalog persists the topic catalog, <data-dir>/topics.json:
// {"version":1,"topics":{"orders":4}}, replaced atomically like the
// offsets file.
package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/minibroker/minibroker/internal/atomicfile"
)

// FileName is the catalog's name inside the data directory.
const FileName = "topics.json"

type document struct {
	Version *int             `json:"version"`
	Topics  map[string]int32 `json:"topics"`
}

// File is the catalog file of one data directory.
type File struct {
	path string
	fs   atomicfile.FS
}

// Open returns the catalog of dir, and the topics it holds (none when the
// file does not exist yet). A file that is not a valid catalog is an error
// naming its path.
func Open(dir string) (*File, map[string]int32, error) {
	f := &File{path: filepath.Join(dir, FileName), fs: atomicfile.OS{}}
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, map[string]int32{}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read topic catalog %s: %w", f.path, err)
	}
	var doc document
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("corrupt topic catalog %s: %w", f.path, err)
	}
	if doc.Version == nil || *doc.Version != 1 {
		return nil, nil, fmt.Errorf("corrupt topic catalog %s: missing or unknown version", f.path)
	}
	for name, n := range doc.Topics {
		if n < 1 {
			return nil, nil, fmt.Errorf("corrupt topic catalog %s: topic %q has %d partitions", f.path, name, n)
		}
	}
	if doc.Topics == nil {
		doc.Topics = map[string]int32{}
	}
	return f, doc.Topics, nil
}

// SaveTopics atomically replaces the catalog with topics.
func (f *File) SaveTopics(topics map[string]int32) error {
	version := 1
	data, err := json.MarshalIndent(document{Version: &version, Topics: topics}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode topic catalog: %w", err)
	}
	return atomicfile.Write(f.fs, f.path, append(data, '\n'))
}
