package offsets

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRateLog: one line per kind per interval; the next line says how many
// events it stands for.
func TestRateLog(t *testing.T) {
	t.Parallel()
	logger, logs := newLogger()
	now := time.UnixMilli(0)
	r := newRateLog(logger, 10*time.Second, func() time.Time { return now })
	event := func(kind string) { r.logAs(kind, slog.LevelError, kind+" happened", "n", 1) }

	event("fold")
	event("fold")
	event("refused") // another kind has its own interval
	now = now.Add(9 * time.Second)
	event("fold")
	now = now.Add(time.Second)
	event("fold")
	event("fold")
	now = now.Add(10 * time.Second)
	event("fold")

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 4, logs.String())
	require.Contains(t, lines[0], `msg="fold happened" n=1`)
	require.NotContains(t, lines[0], "suppressed")
	require.Contains(t, lines[1], `msg="refused happened" n=1`)
	require.Contains(t, lines[2], `msg="fold happened" n=1 suppressed=2`)
	require.Contains(t, lines[3], `msg="fold happened" n=1 suppressed=1`)
}

func TestRateLogDisabledLevel(t *testing.T) {
	t.Parallel()
	r := newRateLog(slog.New(slog.DiscardHandler), time.Second, func() time.Time {
		t.Fatal("a discarded event reads no clock")
		return time.Time{}
	})
	r.logAs("fold", slog.LevelError, "x")
}
