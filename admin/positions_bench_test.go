package admin

import (
	"testing"
	"time"

	"github.com/minibroker/minibroker/server"
)

// BenchmarkRecorderFetched measures what the Fetch path pays per
// partition when the admin API watches: one Fetched call for a position
// the table already holds, on the system clock, as a consumer's repeated
// fetches make it.
func BenchmarkRecorderFetched(b *testing.B) {
	rec, err := NewRecorder(RecorderConfig{})
	if err != nil {
		b.Fatal(err)
	}
	ev := server.FetchEvent{Remote: "127.0.0.1:50001", Host: "/127.0.0.1", ClientID: "kgo", Topic: "orders", Partition: 3}
	rec.Fetched(ev)
	b.ReportAllocs()
	for b.Loop() {
		ev.FetchOffset++
		rec.Fetched(ev)
	}
}

// BenchmarkRecorderRequestDone measures what every answered request pays
// when the admin API watches: its count and its latency, for an API and
// code seen before.
func BenchmarkRecorderRequestDone(b *testing.B) {
	rec, err := NewRecorder(RecorderConfig{Metrics: NewMetrics()})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		rec.RequestDone(12, 4, 0, 30*time.Microsecond)
	}
}
