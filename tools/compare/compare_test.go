package compare

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/tools/lab"
)

func TestCompareWriteTable(t *testing.T) {
	t.Parallel()
	same := Scenario{Name: "a", Row: "row-a", Minibroker: "NONE", Kfake: "NONE"}
	differ := Scenario{Name: "b", Row: "row-b", Minibroker: "NONE", Kfake: "UNKNOWN_MEMBER_ID"}
	results := []Result{
		{Scenario: same, Answer: map[Side]string{Minibroker: "NONE", Kfake: "NONE"}},
		{Scenario: differ, Answer: map[Side]string{Minibroker: "NONE", Kfake: "UNKNOWN_MEMBER_ID"}},
	}
	var out bytes.Buffer
	unexpected, err := WriteTable(&out, results)
	require.NoError(t, err)
	require.Zero(t, unexpected)
	lines := strings.Split(out.String(), "\n")
	require.Regexp(t, `^SCENARIO +MINIBROKER +KAFKA \(KFAKE\) +SAME +MATRIX ROW$`, lines[0])
	require.Regexp(t, `^a +NONE +NONE +same +row-a$`, lines[1])
	require.Regexp(t, `^b +NONE +UNKNOWN_MEMBER_ID +different +row-b$`, lines[2])
	require.Contains(t, out.String(), "2 scenarios: 1 same, 1 different.")
	require.Contains(t, out.String(), "Every answer is the documented one.")

	story := strings.Repeat("a long answer ", 10)
	results = append(results, Result{Scenario: Scenario{Name: "c", Row: "row-c", Minibroker: story, Kfake: "short"},
		Answer: map[Side]string{Minibroker: story, Kfake: "short"}})
	out.Reset()
	unexpected, err = WriteTable(&out, results)
	require.NoError(t, err)
	require.Zero(t, unexpected)
	lines = strings.Split(out.String(), "\n")
	require.Regexp(t, `^c +\(below\) +\(below\) +different +row-c$`, lines[3], "a long answer leaves the table")
	require.Contains(t, out.String(), "\nc (row-c):\n  minibroker: "+story+"\n  kfake:      short\n")
	require.Contains(t, out.String(), "3 scenarios: 1 same, 2 different.")

	results = results[:2]
	results[1].Answer[Kfake] = "error: boom"
	out.Reset()
	unexpected, err = WriteTable(&out, results)
	require.NoError(t, err)
	require.Equal(t, 1, unexpected)
	require.Contains(t, out.String(), "! error: boom")
	require.Contains(t, out.String(), `b on kfake: got "error: boom", documented "UNKNOWN_MEMBER_ID"`)
}

// TestCompareRunScenarioNeedsABroker: a scenario that cannot reach its broker
// reports an error, which the table shows as an unexpected answer.
func TestCompareRunScenarioNeedsABroker(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := RunScenario(ctx, Scenarios()[0], "127.0.0.1:1", lab.OnBroker("compare"))
	require.Error(t, err)
	results := Run(ctx, map[Side]string{Minibroker: "127.0.0.1:1", Kfake: "127.0.0.1:1"}, nil)
	require.Len(t, results, len(Scenarios()))
	for _, r := range results {
		require.True(t, strings.HasPrefix(r.Answer[Minibroker], "error: "), r.Scenario.Name)
	}
}
