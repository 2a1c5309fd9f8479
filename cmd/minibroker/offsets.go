package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/minibroker/minibroker/offsets"
)

const offsetsUsage = `usage: minibroker offsets [--data-dir DIR] [--group GROUP]

Prints the committed offsets held in a data directory now: offsets.json
with the journal replayed over it. While a broker runs, acknowledged
commits sit in the journal until the next fold, so offsets.json alone can
lag; this command reads both, takes no lock and changes nothing, so it can
run beside the broker.
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
	all, err := offsets.Read(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "minibroker offsets: %v\n", err)
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
