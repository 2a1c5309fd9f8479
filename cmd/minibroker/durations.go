package main

import (
	"flag"
	"fmt"
	"time"
)

// durationHint is what a duration flag's error says beside the value it
// could not read: the flag package alone says only "parse error", which
// does not tell a user of --expiry-interval 10 that a unit is missing.
const durationHint = "want a duration with a unit: 10ms, 2s, 5m"

// explainedDuration is a duration flag whose parse error says what a
// duration looks like.
type explainedDuration struct{ flag.Value }

func (d explainedDuration) Set(s string) error {
	if err := d.Value.Set(s); err != nil {
		return fmt.Errorf("%s", durationHint)
	}
	return nil
}

// explainDurations makes every duration flag of fs defined so far explain
// its parse errors. It wraps fs.Usage so that, when usage is printed (-h
// or a parse error), the flags are back to the flag package's own values
// first, and the flag list still says "duration" for them.
func explainDurations(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok {
			if _, ok := g.Get().(time.Duration); ok {
				f.Value = explainedDuration{f.Value}
			}
		}
	})
	usage := fs.Usage
	fs.Usage = func() {
		fs.VisitAll(func(f *flag.Flag) {
			if d, ok := f.Value.(explainedDuration); ok {
				f.Value = d.Value
			}
		})
		if usage != nil {
			usage()
		}
	}
}
