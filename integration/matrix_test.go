package integration

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/tools/compare"
)

// matrixPath is docs/behavior-matrix.md, seen from this package's directory.
const matrixPath = "../docs/behavior-matrix.md"

// matrixGrades are the only grades a row may carry.
var matrixGrades = []string{"Equivalent", "Intentional simplification", "Semantically different"}

// matrixRow is one row of a behaviour-matrix table.
type matrixRow struct {
	line     int
	id       string
	cells    []string
	evidence []string // test names cited in the Evidence cell
}

var (
	// matrixTestRef matches a cited test: `TestName` or `TestName/subtest`.
	matrixTestRef = regexp.MustCompile("`(Test[A-Za-z0-9_]*(?:/[A-Za-z0-9_.-]+)*)`")
	// matrixRowID matches a row id cell: `kebab-case`.
	matrixRowID = regexp.MustCompile("^`([a-z0-9]+(?:-[a-z0-9]+)*)`$")
	// matrixTestFunc matches a top-level test function declaration.
	matrixTestFunc = regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)
)

// matrixRows parses every table row of the matrix below a
// "| Row | Semantic | minibroker | Evidence | Chapter | Kafka | Grade |"
// header.
func matrixRows(t *testing.T) []matrixRow {
	t.Helper()
	raw, err := os.ReadFile(matrixPath)
	require.NoError(t, err)
	var rows []matrixRow
	for i, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		if strings.HasPrefix(cells[0], "---") {
			continue
		}
		if cells[0] == "Row" {
			require.Equal(t, []string{"Row", "Semantic", "minibroker", "Evidence", "Chapter", "Kafka", "Grade"}, cells,
				"line %d: every table has the same columns", i+1)
			continue
		}
		require.Len(t, cells, 7, "line %d: a row has 7 cells (a | inside a cell breaks the table)", i+1)
		id := matrixRowID.FindStringSubmatch(cells[0])
		require.NotNil(t, id, "line %d: the row id %q must be `kebab-case` in backticks", i+1, cells[0])
		row := matrixRow{line: i + 1, id: id[1], cells: cells}
		for _, m := range matrixTestRef.FindAllStringSubmatch(cells[3], -1) {
			row.evidence = append(row.evidence, m[1])
		}
		rows = append(rows, row)
	}
	return rows
}

// matrixTestNames returns the name of every top-level test function in
// the module's *_test.go files.
func matrixTestNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range matrixTestFunc.FindAllStringSubmatch(string(src), -1) {
			names[m[1]] = true
		}
		return nil
	})
	require.NoError(t, err)
	return names
}

// TestBehaviorMatrixEvidenceExists checks docs/behavior-matrix.md: every
// row has a unique id, a grade from the three, and at least one evidence
// test; every test the document names, in any column, exists in the
// repository; and every TestCompareScenarios subtest it names is a
// comparison scenario.
func TestBehaviorMatrixEvidenceExists(t *testing.T) {
	t.Parallel()
	rows := matrixRows(t)
	require.GreaterOrEqual(t, len(rows), 40, "the matrix lists every semantic")
	tests := matrixTestNames(t)
	scenarios := map[string]bool{}
	for _, sc := range compare.Scenarios() {
		scenarios[sc.Name] = true
	}

	seen := map[string]int{}
	for _, row := range rows {
		require.Zero(t, seen[row.id], "line %d: row id %s is also on line %d", row.line, row.id, seen[row.id])
		seen[row.id] = row.line
		require.Contains(t, matrixGrades, row.cells[6], "line %d (%s): unknown grade", row.line, row.id)
		require.NotEmpty(t, row.evidence, "line %d (%s): no evidence test", row.line, row.id)
		for j, cell := range row.cells {
			for _, m := range matrixTestRef.FindAllStringSubmatch(cell, -1) {
				name, sub, _ := strings.Cut(m[1], "/")
				require.True(t, tests[name], "line %d (%s), column %d: no func %s( in any _test.go", row.line, row.id, j+1, name)
				if name == "TestCompareScenarios" {
					require.True(t, scenarios[sub], "line %d (%s): %s is not a comparison scenario", row.line, row.id, m[1])
				}
			}
		}
	}
}

// TestBehaviorMatrixExplainsEveryScenario checks that each comparison
// scenario names a matrix row, and that the row cites the scenario's test,
// so `minibroker compare`'s last column always leads somewhere.
func TestBehaviorMatrixExplainsEveryScenario(t *testing.T) {
	t.Parallel()
	byID := map[string]matrixRow{}
	for _, row := range matrixRows(t) {
		byID[row.id] = row
	}
	for _, sc := range compare.Scenarios() {
		row, ok := byID[sc.Row]
		require.True(t, ok, "scenario %s names row %s, which the matrix lacks", sc.Name, sc.Row)
		require.True(t, slices.Contains(row.evidence, "TestCompareScenarios/"+sc.Name),
			"row %s (line %d) does not cite TestCompareScenarios/%s", sc.Row, row.line, sc.Name)
	}
}
