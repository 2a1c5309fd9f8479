package testutil

import (
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestLogRecorderKeepsEveryRecord(t *testing.T) {
	t.Parallel()
	var echo Buffer
	rec := NewLogRecorder(&echo, slog.LevelWarn)
	logger := rec.Logger().With("remote", "127.0.0.1:1")
	logger.Debug("request", "api", "Heartbeat")
	logger.WithGroup("g").Warn("slow", "took", 250*time.Millisecond, slog.Group("sub", "n", 2))
	logger.Error("boom", "members", []string{"a", "b"})

	want := []Record{
		{Level: slog.LevelDebug, Message: "request", Attrs: map[string]string{"remote": "127.0.0.1:1", "api": "Heartbeat"}},
		{Level: slog.LevelWarn, Message: "slow", Attrs: map[string]string{"remote": "127.0.0.1:1", "g.took": "250ms", "g.sub.n": "2"}},
		{Level: slog.LevelError, Message: "boom", Attrs: map[string]string{"remote": "127.0.0.1:1", "members": "[a b]"}},
	}
	if got := rec.Records(); !reflect.DeepEqual(got, want) {
		t.Fatalf("records\n got %v\nwant %v", got, want)
	}
	if got := rec.Find("slow"); !reflect.DeepEqual(got, want[1:2]) {
		t.Fatalf("Find: %v", got)
	}
	if got := rec.AtLevel(slog.LevelWarn); !reflect.DeepEqual(got, want[1:]) {
		t.Fatalf("AtLevel: %v", got)
	}
	out := echo.String()
	if strings.Contains(out, "request") || !strings.Contains(out, "msg=slow") || !strings.Contains(out, "msg=boom") {
		t.Fatalf("echo holds Warn and above only:\n%s", out)
	}
}

// TestLogRecorderNotesRepeatedKeys: a key the logger was With'd and the
// call gives again is one a text handler prints twice; the record names
// it, and keeps the call's value. A key in another group is another key.
func TestLogRecorderNotesRepeatedKeys(t *testing.T) {
	t.Parallel()
	rec := NewLogRecorder(nil, nil)
	logger := rec.Logger().With("remote", "127.0.0.1:1")
	logger.Warn("twice", "remote", "127.0.0.1:2", "topic", "t")
	logger.WithGroup("g").Warn("grouped", "remote", "127.0.0.1:3")
	logger.Warn("once", "topic", "t")
	want := []Record{
		{Level: slog.LevelWarn, Message: "twice", Attrs: map[string]string{"remote": "127.0.0.1:2", "topic": "t"}, Repeated: []string{"remote"}},
		{Level: slog.LevelWarn, Message: "grouped", Attrs: map[string]string{"remote": "127.0.0.1:1", "g.remote": "127.0.0.1:3"}},
		{Level: slog.LevelWarn, Message: "once", Attrs: map[string]string{"remote": "127.0.0.1:1", "topic": "t"}},
	}
	if got := rec.Records(); !reflect.DeepEqual(got, want) {
		t.Fatalf("records\n got %v\nwant %v", got, want)
	}
}

func TestLogRecorderWithoutEcho(t *testing.T) {
	t.Parallel()
	rec := NewLogRecorder(nil, nil)
	rec.Logger().Error("boom")
	if n := len(rec.Find("boom")); n != 1 {
		t.Fatalf("%d records", n)
	}
}
