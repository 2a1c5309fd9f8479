package offsets

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// LogInterval is the least time between two log lines of one kind of
// storage event (a refused commit, a failed fold); the events in between
// are counted, and the next line says how many it stands for
// ("suppressed"). A failing disk then costs one line per interval, not
// one per commit.
const LogInterval = 10 * time.Second

// rateLog writes at most one line per kind per interval to a logger. It is
// safe for concurrent use.
type rateLog struct {
	log      *slog.Logger
	interval time.Duration
	now      func() time.Time

	mu         sync.Mutex
	last       map[string]time.Time // guarded by mu: when each kind last logged
	suppressed map[string]int       // guarded by mu: events since then, not logged
}

func newRateLog(log *slog.Logger, interval time.Duration, now func() time.Time) *rateLog {
	return &rateLog{log: log, interval: interval, now: now, last: map[string]time.Time{}, suppressed: map[string]int{}}
}

// logAs logs msg and args at level under kind, unless a line of that kind
// was logged less than the interval ago; then it only counts the event.
func (r *rateLog) logAs(kind string, level slog.Level, msg string, args ...any) {
	if !r.log.Enabled(context.Background(), level) {
		return
	}
	r.mu.Lock()
	now := r.now()
	if last, ok := r.last[kind]; ok && now.Sub(last) < r.interval {
		r.suppressed[kind]++
		r.mu.Unlock()
		return
	}
	r.last[kind] = now
	n := r.suppressed[kind]
	r.suppressed[kind] = 0
	r.mu.Unlock()
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	r.log.Log(context.Background(), level, msg, args...)
}
