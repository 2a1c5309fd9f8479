package testutil

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
)

// Record is one log record as a test checks it: its level, its message
// and its attributes, each rendered as slog's Value.String does ("250ms",
// "2", "[a b]"). An attribute inside a group is keyed "group.key".
// Repeated names the keys the record carries more than once (a logger
// With'd a key that the call gives again): Attrs keeps the last value,
// and a text handler prints the key twice. It is nil when there are none.
type Record struct {
	Level    slog.Level
	Message  string
	Attrs    map[string]string
	Repeated []string
}

// LogRecorder is a slog.Handler that keeps every record, at every level,
// for the test to inspect; it can also echo records to the test's output.
// The handlers that WithAttrs and WithGroup derive from it share its
// records. It is safe for concurrent use.
type LogRecorder struct {
	shared *logStore
	echo   slog.Handler // nil: record only
	attrs  []slog.Attr  // from WithAttrs, keys already qualified by groups
	group  string       // "a.b." from WithGroup, prefix of later keys
}

type logStore struct {
	mu      sync.Mutex
	records []Record // guarded by mu
}

// NewLogRecorder returns a LogRecorder. With a non-nil echo, records at
// echoLevel or above are also written to echo as text; pass t.Output() to
// see a broker's warnings beside a failing test's messages.
func NewLogRecorder(echo io.Writer, echoLevel slog.Leveler) *LogRecorder {
	h := &LogRecorder{shared: &logStore{}}
	if echo != nil {
		h.echo = slog.NewTextHandler(echo, &slog.HandlerOptions{Level: echoLevel})
	}
	return h
}

// Logger returns a logger that writes to h.
func (h *LogRecorder) Logger() *slog.Logger { return slog.New(h) }

// Enabled reports true: every level is recorded.
func (h *LogRecorder) Enabled(context.Context, slog.Level) bool { return true }

// Handle records r and echoes it if its level is high enough.
func (h *LogRecorder) Handle(ctx context.Context, r slog.Record) error {
	rec := Record{Level: r.Level, Message: r.Message, Attrs: map[string]string{}}
	for _, a := range h.attrs {
		flatten(&rec, "", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		flatten(&rec, h.group, a)
		return true
	})
	h.shared.mu.Lock()
	h.shared.records = append(h.shared.records, rec)
	h.shared.mu.Unlock()
	if h.echo != nil && h.echo.Enabled(ctx, r.Level) {
		return h.echo.Handle(ctx, r)
	}
	return nil
}

// flatten adds a to rec's attributes under prefix, resolving LogValuers
// and spreading groups into "group.key" entries, and notes a key it
// already holds as repeated.
func flatten(rec *Record, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() != slog.KindGroup {
		key := prefix + a.Key
		if _, dup := rec.Attrs[key]; dup {
			rec.Repeated = append(rec.Repeated, key)
		}
		rec.Attrs[key] = v.String()
		return
	}
	if a.Key != "" {
		prefix += a.Key + "."
	}
	for _, ga := range v.Group() {
		flatten(rec, prefix, ga)
	}
}

// WithAttrs returns a handler that adds attrs to every record.
func (h *LogRecorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	next := *h
	next.attrs = slices.Clone(h.attrs)
	for _, a := range attrs {
		a.Key = h.group + a.Key
		next.attrs = append(next.attrs, a)
	}
	if h.echo != nil {
		next.echo = h.echo.WithAttrs(attrs)
	}
	return &next
}

// WithGroup returns a handler that puts later attributes in group name.
func (h *LogRecorder) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	next := *h
	next.group = h.group + name + "."
	if h.echo != nil {
		next.echo = h.echo.WithGroup(name)
	}
	return &next
}

// Records returns a copy of every record so far, in the order logged;
// the caller may change it.
func (h *LogRecorder) Records() []Record {
	h.shared.mu.Lock()
	defer h.shared.mu.Unlock()
	out := make([]Record, len(h.shared.records))
	for i, r := range h.shared.records {
		r.Attrs = maps.Clone(r.Attrs)
		r.Repeated = slices.Clone(r.Repeated)
		out[i] = r
	}
	return out
}

// Find returns the records whose message is msg.
func (h *LogRecorder) Find(msg string) []Record {
	return slices.DeleteFunc(h.Records(), func(r Record) bool { return r.Message != msg })
}

// AtLevel returns the records at level or above.
func (h *LogRecorder) AtLevel(level slog.Level) []Record {
	return slices.DeleteFunc(h.Records(), func(r Record) bool { return r.Level < level })
}
