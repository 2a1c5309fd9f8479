package protocol

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// README markers around the generated table.
const (
	apiTableBegin = "<!-- apis:begin (generated: go run ./cmd/minibroker apis) -->\n"
	apiTableEnd   = "<!-- apis:end -->"
)

// TestReadmeAPITable: the README's table of the APIs served is the one
// the version table renders, so a new API or version range fails here
// until the README says so.
func TestReadmeAPITable(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(readme), apiTableBegin)
	require.True(t, ok, "README.md has no %q marker", apiTableBegin)
	table, _, ok := strings.Cut(rest, apiTableEnd)
	require.True(t, ok, "README.md has no %q marker", apiTableEnd)
	require.Equal(t, APITable(), table, "README.md's table of APIs is stale: replace it with the output of go run ./cmd/minibroker apis")
}

// TestAPITable: one row per API with Kafka's name, key and range.
func TestAPITable(t *testing.T) {
	t.Parallel()
	lines := strings.Split(strings.TrimSuffix(APITable(), "\n"), "\n")
	require.Len(t, lines, 2+len(SupportedVersions()))
	require.Equal(t, "| API | key | versions |", lines[0])
	require.Contains(t, lines, "| Produce | 0 | 3-12 |")
	require.Contains(t, lines, "| SASLHandshake | 17 | 0-1 |")
	require.Contains(t, lines, "| SASLAuthenticate | 36 | 0-2 |")
	require.Contains(t, lines, "| DescribeCluster | 60 | 0-2 |")
	require.Contains(t, lines, "| OffsetDelete | 47 | 0 |")
}
