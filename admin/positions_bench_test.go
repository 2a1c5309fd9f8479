package admin

import (
	"testing"

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
