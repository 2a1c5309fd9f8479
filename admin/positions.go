package admin

// Fetch positions: where each consumer last asked to read, as the broker
// sees it. The server reports every partition of every Fetch
// (server.Observer.Fetched); the Recorder keeps, per connection (remote
// address and client id) and partition, the last offset asked for and
// when. A connection's positions go when it closes, and the table holds
// at most RecorderConfig.MaxFetchPositions of them, the least recently
// updated dropped first.
//
// A Fetch names no group and no member, and a consumer such as kgo
// fetches on a connection of its own, not the one it heartbeats on. So a
// position is tied to a member only by inference (attribute, below; the
// rule is docs/design.md section 10's).

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/server"
)

// DefaultMaxFetchPositions is RecorderConfig.MaxFetchPositions's default.
// An entry costs about 200 bytes besides its strings (remote address,
// client id and topic name, each at most a few hundred bytes), so the
// table stays within a few MiB however many consumers come and go.
const DefaultMaxFetchPositions = 10_000

// fetchKey names one connection's position in one partition.
type fetchKey struct {
	remote, clientID, topic string
	partition               int32
}

// fetchPosition is where a connection last asked to read a partition,
// and when, by the recorder's clock.
type fetchPosition struct {
	host   string // "/127.0.0.1", as MemberView.ClientHost
	offset int64
	at     time.Time
}

// fetched is one position with its connection, as the API reads it.
type fetched struct {
	remote, host, clientID string
	offset                 int64
	at                     time.Time
}

// fetchTable is the Recorder's positions. Guarded by Recorder.posMu.
type fetchTable struct {
	positions *lru[fetchKey, fetchPosition]
	// byRemote indexes the keys of each connection, to forget them when
	// it closes.
	byRemote map[string]map[fetchKey]struct{}
}

func newFetchTable(max int) *fetchTable {
	t := &fetchTable{positions: newLRU[fetchKey, fetchPosition](max), byRemote: make(map[string]map[fetchKey]struct{})}
	t.positions.forgot = t.unindex
	return t
}

// unindex removes k from byRemote.
func (t *fetchTable) unindex(k fetchKey) {
	keys := t.byRemote[k.remote]
	delete(keys, k)
	if len(keys) == 0 {
		delete(t.byRemote, k.remote)
	}
}

// Fetched records where a connection asked to read a partition
// (server.Observer). It allocates only for a connection and partition it
// does not hold yet.
func (s *Recorder) Fetched(ev server.FetchEvent) {
	at := s.now()
	k := fetchKey{remote: ev.Remote, clientID: ev.ClientID, topic: ev.Topic, partition: ev.Partition}
	s.posMu.Lock()
	defer s.posMu.Unlock()
	if s.fetches.positions.set(k, fetchPosition{host: ev.Host, offset: ev.FetchOffset, at: at}) {
		keys := s.fetches.byRemote[ev.Remote]
		if keys == nil {
			keys = make(map[fetchKey]struct{})
			s.fetches.byRemote[ev.Remote] = keys
		}
		keys[k] = struct{}{}
	}
}

// forgetConn drops every position of the connection from remote.
func (s *Recorder) forgetConn(remote string) {
	s.posMu.Lock()
	defer s.posMu.Unlock()
	for k := range s.fetches.byRemote[remote] {
		s.fetches.positions.delete(k)
	}
	delete(s.fetches.byRemote, remote)
}

// fetchPositions returns every position held, by partition, each
// partition's sorted by client id, then remote address.
func (s *Recorder) fetchPositions() map[assignor.TopicPartition][]fetched {
	out := make(map[assignor.TopicPartition][]fetched)
	s.posMu.Lock()
	s.fetches.positions.each(func(k fetchKey, p fetchPosition) {
		tp := assignor.TopicPartition{Topic: k.topic, Partition: k.partition}
		out[tp] = append(out[tp], fetched{remote: k.remote, host: p.host, clientID: k.clientID, offset: p.offset, at: p.at})
	})
	s.posMu.Unlock()
	for _, list := range out {
		slices.SortFunc(list, func(a, b fetched) int {
			return cmp.Or(strings.Compare(a.clientID, b.clientID), strings.Compare(a.remote, b.remote))
		})
	}
	return out
}

// fetchPositionJSON is one connection's fetch position in a partition.
type fetchPositionJSON struct {
	// MemberID is the member the position is attributed to, "" when it
	// is not; Unattributed then says why (groups only).
	MemberID     string `json:"member_id,omitempty"`
	Unattributed string `json:"unattributed,omitempty"`
	ClientID     string `json:"client_id"`
	Remote       string `json:"remote"` // the connection's address, "127.0.0.1:54321"
	Offset       int64  `json:"offset"` // the FetchOffset it last asked for
	Time         string `json:"time"`
	TimeMS       int64  `json:"time_ms"`
	AgeMS        int64  `json:"age_ms"` // now - time
}

func positionJSON(f fetched, now time.Time) fetchPositionJSON {
	p := fetchPositionJSON{ClientID: f.clientID, Remote: f.remote, Offset: f.offset, AgeMS: now.Sub(f.at).Milliseconds()}
	p.Time, p.TimeMS = stamp(f.at)
	return p
}

// attribution ties a group's members to fetching connections: Kafka's
// Fetch carries no member id, so a connection's position belongs to a
// member only when exactly one member of the group has the connection's
// client id and client host. Any other connection with the client id of
// a member is shown unattributed, with the reason; a connection whose
// client id no member has is not the group's and is not shown with it.
type attribution map[string]map[string][]string // client id -> host -> member ids

func newAttribution(members []coordinator.MemberView) attribution {
	a := attribution{}
	for _, m := range members {
		if a[m.ClientID] == nil {
			a[m.ClientID] = map[string][]string{}
		}
		a[m.ClientID][m.ClientHost] = append(a[m.ClientID][m.ClientHost], m.MemberID)
	}
	return a
}

// attribute returns f's position in the group, and false when no member
// has f's client id.
func (a attribution) attribute(f fetched, now time.Time) (fetchPositionJSON, bool) {
	hosts, ok := a[f.clientID]
	if !ok {
		return fetchPositionJSON{}, false
	}
	p := positionJSON(f, now)
	switch ids := hosts[f.host]; len(ids) {
	case 1:
		p.MemberID = ids[0]
	case 0:
		p.Unattributed = fmt.Sprintf("no member with client id %s is on %s", f.clientID, f.host)
	default:
		p.Unattributed = fmt.Sprintf("%d members share client id %s on %s", len(ids), f.clientID, f.host)
	}
	return p, true
}
