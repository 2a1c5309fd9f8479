package compare

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/minibroker/minibroker/internal/interrupt"
)

// WriteETLTable prints the results as a table, a row per protocol, mode
// and broker, then a few lines on what it shows.
func WriteETLTable(w io.Writer, cfg ETLConfig, results []ETLResult) error {
	cfg = cfg.withDefaults()
	fmt.Fprintf(w, "ETL: %d records, stages %d, partitions %d per topic, members %d per stage, churn %d per stage (seed %d), heartbeat %s\n\n",
		cfg.Records, cfg.Stages, cfg.Partitions, cfg.Members, cfg.Churn, cfg.Seed, cfg.Heartbeat)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROTOCOL\tMODE\tBROKER\tIN\tOUT\tMISSING\tTWICE+\tTIMES\tDUP OUT\tREBALANCES\tPOLL ERRORS\tCOMMIT ERRORS\tTIME")
	for i, r := range results {
		protocol, mode := r.Row.Protocol.Name, r.Row.Mode()
		if i > 0 && results[i-1].Row.slug() == r.Row.slug() {
			protocol, mode = "", ""
		}
		if errors.Is(r.Err, interrupt.ErrInterrupted) {
			fmt.Fprintf(tw, "%s\t%s\t%s\tinterrupted\n", protocol, mode, r.Side)
			continue
		}
		if r.Err != nil {
			fmt.Fprintf(tw, "%s\t%s\t%s\terror: %s\n", protocol, mode, r.Side, r.Err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%s\t%s\t%s\n", protocol, mode, r.Side,
			r.In, r.Out, r.Missing, r.Twice(), histogram(r.Reprocessed), r.DupOut, r.Rebalances,
			errorKinds(r.PollErrors), errorKinds(r.CommitErrors),
			r.Elapsed.Round(100*time.Millisecond))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprint(w, etlLegend+"\n"+etlReading(results))
	return err
}

// histogram prints how many records were processed how many times, in
// the buckets 2, 3, 4 to 9 and 10 or more: "x2:130 x3:4 x4-9:12", "-"
// for none.
func histogram(byTimes map[int]int) string {
	if len(byTimes) == 0 {
		return "-"
	}
	buckets := []struct {
		name   string
		lo, hi int
	}{{"x2", 2, 2}, {"x3", 3, 3}, {"x4-9", 4, 9}, {"x10+", 10, int(^uint(0) >> 1)}}
	var parts []string
	for _, b := range buckets {
		n := 0
		for times, c := range byTimes {
			if times >= b.lo && times <= b.hi {
				n += c
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s:%d", b.name, n))
		}
	}
	return strings.Join(parts, " ")
}

// errorKinds prints errors by kind, sorted: "ILLEGAL_GENERATION 3", "-"
// for none.
func errorKinds(errs map[string]int) string {
	if len(errs) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(errs)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, errs[k]))
	}
	return strings.Join(parts, ", ")
}

const etlLegend = `
IN: records written to the source. OUT: records the last topic holds (read to its
end; read_committed in txn mode). TWICE+: source records some stage processed
(wrote downstream, committed or not) more than once; TIMES: how many, by the most
times one stage did. DUP OUT: source records the last topic holds more than once.
REBALANCES: generations (member epochs) the members were told of after their first.
POLL ERRORS: what PollFetches handed the application, by kerr name; COMMIT ERRORS:
what CommitUncommittedOffsets (plain) or End (txn) returned.

Where the duplicates come from. A join completes at once on minibroker: the
coordinator moves partitions to the newcomer in a new generation while the old
owner still consumes them on its old assignment, until its next heartbeat or
commit is fenced (ILLEGAL_GENERATION) and it re-joins; on the consumer protocol
each member gets its new target at its next heartbeat, the newcomer before the
old owner has given anything up. In that window both read the same partitions:
the newcomer from the last commit, the old owner onwards, and the old owner's
commit of what it read is refused, so the records after the last commit are
written twice. Kafka closes the window before it opens: the classic protocol's
join barrier holds the newcomer until every member has re-joined, and kgo
commits and revokes (all partitions eager, the moved ones cooperative) before
it re-joins; the consumer protocol revokes a partition from its owner first and
gives it to the newcomer only once the owner has acknowledged. With
transactions the fence reaches the output on both brokers: the old owner's
offsets commit in its transaction, the fence refuses them, the transaction
aborts, and a read_committed reader never sees its writes. The work is still
done twice (TWICE+, on kfake too: GroupTransactSession aborts whatever
transaction a revocation interrupts), its effect once (DUP OUT 0).
`

// etlReading sums the table up: duplicates per broker and mode, and
// whether anything went missing.
func etlReading(results []ETLResult) string {
	type key struct {
		side Side
		txn  bool
	}
	twice, dup, missing := map[key]int{}, map[key]int{}, 0
	failed, interrupted := 0, 0
	for _, r := range results {
		switch {
		case errors.Is(r.Err, interrupt.ErrInterrupted):
			interrupted++
			continue
		case r.Err != nil:
			failed++
			continue
		}
		k := key{r.Side, r.Row.Transactional}
		twice[k] += r.Twice()
		dup[k] += r.DupOut
		missing += r.Missing
	}
	var b strings.Builder
	fmt.Fprintf(&b, "This run, summed over the rows: plain, minibroker processed %d records twice or more\n",
		twice[key{Minibroker, false}])
	fmt.Fprintf(&b, "and kfake %d; in transactions, %d and %d reached the output twice (processed twice:\n%d and %d).\n",
		twice[key{Kfake, false}],
		dup[key{Minibroker, true}], dup[key{Kfake, true}], twice[key{Minibroker, true}], twice[key{Kfake, true}])
	switch {
	case missing > 0:
		fmt.Fprintf(&b, "%d records went missing (see MISSING).\n", missing)
	case failed+interrupted == 0:
		b.WriteString("No record went missing on either broker.\n")
	default:
		b.WriteString("No record went missing in the runs that finished.\n")
	}
	if interrupted > 0 {
		fmt.Fprintf(&b, "Interrupted: %d of %d runs did not finish; the sums leave them out.\n", interrupted, len(results))
	}
	if failed > 0 {
		fmt.Fprintf(&b, "%d of %d runs failed (their error is in the table): the sums leave them out, and what they lost is unknown.\n", failed, len(results))
	}
	return b.String()
}
