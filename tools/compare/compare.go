package compare

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/minibroker/minibroker/tools/lab"
)

// scenarioTimeout bounds one scenario on one side in Run. Every scenario
// takes well under 2 s; only a broker that fails to act (a session that
// never expires) makes one wait this long.
const scenarioTimeout = 5 * time.Second

// Result is what one scenario observed on each side.
type Result struct {
	Scenario Scenario
	// Answer holds each side's answer; a failed run's answer is "error: "
	// and the error.
	Answer map[Side]string
}

// Same reports whether both sides gave the same answer.
func (r Result) Same() bool { return r.Answer[Minibroker] == r.Answer[Kfake] }

// Expected reports whether side gave the answer it is documented to give.
func (r Result) Expected(side Side) bool { return r.Scenario.Matches(side, r.Answer[side]) }

// RunScenario plays sc once against the broker at addr, in a group of its
// own (names.Group of its name), and returns the answer, or an error if
// the script could not finish. The answer names the chapter's topics
// (orders, payments) whatever the run calls them. ctx bounds the whole
// script: a scenario that waits for the broker to act (session-expiry)
// waits until ctx ends. Prepare must have run for addr and names first.
func RunScenario(ctx context.Context, sc Scenario, addr string, names lab.Scope) (string, error) {
	s := &Script{addr: addr, group: names.Group(sc.Name), names: names}
	defer s.Close()
	answer, err := sc.Run(ctx, s)
	return names.Chapter(answer, topicNames()...), err
}

// topicNames are the chapter's topics the scenarios use.
func topicNames() []string { return slices.Sorted(maps.Keys(Topics())) }

// RunTopics returns the topics a run under names creates on its broker:
// the scenarios' catalog (Topics) under the run's names, and a topic of
// one partition for each record scenario, named like its group.
func RunTopics(names lab.Scope) map[string]int32 {
	topics := names.RunTopics(Topics())
	for _, sc := range Scenarios() {
		if sc.Records {
			topics[names.Group(sc.Name)] = 1
		}
		for suffix, n := range sc.Topics {
			topics[names.Group(sc.Name)+"-"+suffix] = n
		}
	}
	return topics
}

// Prepare creates, on the broker at addr, the topics of a run under names
// (RunTopics). It runs before any scenario does because kfake moves the
// epoch of every consumer-protocol group when a topic is created
// (Cluster.notifyTopicChange), which would disturb the kip848 scenarios
// running beside it; minibroker moves only the groups subscribed to the
// new topic (docs/design.md section 9).
func Prepare(ctx context.Context, addr string, names lab.Scope) error {
	return lab.EnsureTopics(ctx, addr, RunTopics(names))
}

// Run plays every scenario against both brokers, all at once (each in its
// own group), then those marked Alone, and returns the results in table
// order. names says what
// each side's run calls its groups and topics: lab.OnBroker for a broker
// the comparison does not own (minicompare --broker), lab.InProcess
// ("compare") for a side it lacks. It prepares both brokers first; a
// side that cannot be prepared answers every scenario with the error.
func Run(ctx context.Context, addrs map[Side]string, names map[Side]lab.Scope) []Result {
	scopes := map[Side]lab.Scope{}
	prepared := map[Side]error{}
	for _, side := range Sides() {
		scope, ok := names[side]
		if !ok {
			scope = lab.InProcess("compare")
		}
		scopes[side] = scope
		prepared[side] = Prepare(ctx, addrs[side], scope)
	}
	scenarios := Scenarios()
	results := make([]Result, len(scenarios))
	var mu sync.Mutex // guards the Answer maps
	for _, alone := range []bool{false, true} {
		var wg sync.WaitGroup
		for i, sc := range scenarios {
			if sc.Alone != alone {
				continue
			}
			results[i] = Result{Scenario: sc, Answer: map[Side]string{}}
			for _, side := range Sides() {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(ctx, cmp.Or(sc.Timeout, scenarioTimeout))
					defer cancel()
					answer, err := "", prepared[side]
					if err == nil {
						answer, err = RunScenario(ctx, sc, addrs[side], scopes[side])
					}
					if err != nil {
						answer = "error: " + err.Error()
					}
					mu.Lock()
					results[i].Answer[side] = answer
					mu.Unlock()
				})
			}
		}
		wg.Wait()
	}
	return results
}

// longAnswer is the widest answer WriteTable prints in the table; a
// longer one (a scenario that tells a story, such as kip848-two-owners)
// is printed below it, so that the table stays readable.
const longAnswer = 82

// WriteTable prints results as a table: scenario, minibroker's answer,
// kfake's, whether they agree, and the behaviour-matrix row that explains
// them. Answers longer than longAnswer are printed after the table, one
// scenario at a time. An answer that is not the documented one is marked
// with "!", and a closing line counts agreements and surprises. It
// returns the number of surprises.
func WriteTable(w io.Writer, results []Result) (unexpected int, err error) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tMINIBROKER\tKAFKA (KFAKE)\tSAME\tMATRIX ROW")
	same := 0
	var surprises []string
	var long strings.Builder
	for _, r := range results {
		cells := make([]string, 0, 2)
		below := false
		for _, side := range Sides() {
			below = below || len(r.Answer[side]) > longAnswer
		}
		if below {
			fmt.Fprintf(&long, "\n%s (%s):\n", r.Scenario.Name, r.Scenario.Row)
		}
		for _, side := range Sides() {
			cell := r.Answer[side]
			mark := ""
			if !r.Expected(side) {
				mark = "! "
				unexpected++
				surprises = append(surprises, fmt.Sprintf("  %s on %s: got %q, documented %q", r.Scenario.Name, side, r.Answer[side], r.Scenario.Want(side)))
			}
			if below {
				fmt.Fprintf(&long, "  %-11s %s%s\n", side+":", mark, cell)
				cell = "(below)"
			}
			cells = append(cells, mark+cell)
		}
		verdict := "different"
		if r.Same() {
			verdict = "same"
			same++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Scenario.Name, cells[0], cells[1], verdict, r.Scenario.Row)
	}
	if err := tw.Flush(); err != nil {
		return unexpected, err
	}
	if long.Len() > 0 {
		fmt.Fprintf(w, "%s", long.String())
	}
	fmt.Fprintf(w, "\n%d scenarios: %d same, %d different. Rows are in docs/behavior-matrix.md.\n", len(results), same, len(results)-same)
	if unexpected == 0 {
		_, err = fmt.Fprintln(w, "Every answer is the documented one.")
		return 0, err
	}
	_, err = fmt.Fprintf(w, "%d answers (marked !) differ from the documented ones:\n%s\n", unexpected, strings.Join(surprises, "\n"))
	return unexpected, err
}
