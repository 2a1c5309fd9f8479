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
		{slog.LevelDebug, "request", map[string]string{"remote": "127.0.0.1:1", "api": "Heartbeat"}},
		{slog.LevelWarn, "slow", map[string]string{"remote": "127.0.0.1:1", "g.took": "250ms", "g.sub.n": "2"}},
		{slog.LevelError, "boom", map[string]string{"remote": "127.0.0.1:1", "members": "[a b]"}},
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

func TestLogRecorderWithoutEcho(t *testing.T) {
	t.Parallel()
	rec := NewLogRecorder(nil, nil)
	rec.Logger().Error("boom")
	if n := len(rec.Find("boom")); n != 1 {
		t.Fatalf("%d records", n)
	}
}
