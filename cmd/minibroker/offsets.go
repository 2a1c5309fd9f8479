package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/internal/datadir"
	"github.com/minibroker/minibroker/offsets"
)

const offsetsUsage = `usage: minibroker offsets [--data-dir DIR] [--group GROUP]

Prints the committed offsets held in a data directory now: offsets.json
with the journal replayed over it. While a broker runs, acknowledged
commits sit in the journal until the next fold, so offsets.json alone can
lag; this command reads both, takes no lock and changes nothing, so it can
run beside the broker. The data dir is ./minibroker-data unless --data-dir
says otherwise; a group that has committed nothing there is an error that
names the groups that have.
`

// offsetsCmd runs "minibroker offsets".
func offsetsCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("minibroker offsets", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("data-dir", "./minibroker-data", "`DIR` to read")
	group := fs.String("group", "", "show only `GROUP`")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, offsetsUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "minibroker offsets: %v (minibroker offsets -h for help)\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "minibroker offsets: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if err := isDataDir(*dir); err != nil {
		fmt.Fprintf(stderr, "minibroker offsets: %v\n", err)
		return 1
	}
	all, err := offsets.Read(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "minibroker offsets: %v\n", err)
		return 1
	}
	if _, ok := all[*group]; *group != "" && !ok {
		fmt.Fprintf(stderr, "minibroker offsets: %v\n", unknownGroup(*dir, *group, sortedKeys(all)))
		return 1
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tOFFSET\tMETADATA")
	rows := 0
	for _, g := range sortedKeys(all) {
		if *group != "" && g != *group {
			continue
		}
		for _, e := range all[g] {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", g, e.Topic, e.Partition, e.Offset, e.Metadata)
			rows++
		}
	}
	tw.Flush()
	if rows == 0 {
		fmt.Fprintln(stdout, "(no committed offsets)")
	}
	return 0
}

// isDataDir says why dir is not a data directory a broker made, naming
// the flag that points at one: it does not exist, is not a directory, or
// holds none of the files a broker keeps there (its lock, offsets.json,
// topics.json). A directory with the chapter's offsets.json alone is one.
func isDataDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no data dir at %s: run this where the broker runs (make run keeps its data dir in the repository's root), or give the broker's with --data-dir DIR", dir)
	case err != nil:
		return fmt.Errorf("data dir %s: %w", dir, err)
	case !st.IsDir():
		return fmt.Errorf("%s is not a directory; give the broker's data dir with --data-dir DIR", dir)
	}
	for _, name := range []string{datadir.LockName, offsets.FileName, catalog.FileName} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%s is not a minibroker data dir (it holds no %s, %s or %s); give the broker's with --data-dir DIR", dir, datadir.LockName, offsets.FileName, catalog.FileName)
}

// unknownGroup is the error for a --group that has no committed offsets
// in dir: it names the groups that have some. A group's members live in
// the broker's memory; what the data dir knows of a group is its commits.
func unknownGroup(dir, group string, groups []string) error {
	if len(groups) == 0 {
		return fmt.Errorf("group %q has no committed offsets in %s, and no group has any there yet", group, dir)
	}
	return fmt.Errorf("group %q has no committed offsets in %s; the groups that have: %s", group, dir, strings.Join(groups, ", "))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
