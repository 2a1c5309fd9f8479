package admin

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/server"
)

// TestEventsTopicNotices: topics a client named that do not exist, or
// that it made exist, are in GET /v1/events with the coordinator clock's
// time, one sequence with the other events, and a sentence for the page.
func TestEventsTopicNotices(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.rec.TopicNoticed(server.TopicEvent{Kind: server.TopicMissing, Topic: "ordrs", ClientID: "kgo", Host: "/127.0.0.1"})
	_, err := f.clock.Advance(7 * time.Millisecond)
	require.NoError(t, err)
	f.rec.TopicNoticed(server.TopicEvent{Kind: server.TopicJoinRefused, Topic: "ordrs", ClientID: "sarama", Host: "/127.0.0.1", Group: "billing"})
	f.rec.TopicNoticed(server.TopicEvent{Kind: server.TopicAutoCreated, Topic: "ordesr", ClientID: "rdkafka", Host: "/127.0.0.1", Partitions: 1})
	f.rec.TopicNoticed(server.TopicEvent{Kind: server.TopicAutoCreated, Topic: "audit", ClientID: "rdkafka", Host: "/127.0.0.1", Partitions: 3})

	code, body := f.do(t, "GET", "/v1/events", "")
	require.Equal(t, http.StatusOK, code)
	requireJSON(t, `{"rebalances":[],"fencing":[],"topics":[
		{"seq":1,"time":"1970-01-01T00:00:00Z","time_ms":0,"kind":"missing","topic":"ordrs","client_id":"kgo","host":"/127.0.0.1",
		 "message":"unknown topic \"ordrs\": client kgo asked for it; a consumer of it waits until it is created"},
		{"seq":2,"time":"1970-01-01T00:00:00.007Z","time_ms":7,"kind":"join refused","topic":"ordrs","client_id":"sarama","host":"/127.0.0.1","group":"billing",
		 "message":"join refused: unknown topic \"ordrs\" (group billing, client sarama)"},
		{"seq":3,"time":"1970-01-01T00:00:00.007Z","time_ms":7,"kind":"auto-created","topic":"ordesr","client_id":"rdkafka","host":"/127.0.0.1","partitions":1,
		 "message":"topic \"ordesr\" created with 1 partition because client rdkafka named it: a typo? (--auto-create-topics=false turns this off)"},
		{"seq":4,"time":"1970-01-01T00:00:00.007Z","time_ms":7,"kind":"auto-created","topic":"audit","client_id":"rdkafka","host":"/127.0.0.1","partitions":3,
		 "message":"topic \"audit\" created with 3 partitions because client rdkafka named it: a typo? (--auto-create-topics=false turns this off)"}
	]}`, body)
}
