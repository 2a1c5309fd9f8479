package broker

import (
	"context"
	"log/slog"
	"net"
	"time"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/server"
	"github.com/minibroker/minibroker/topics"
	"github.com/minibroker/minibroker/txn"
)

// AdminAPI makes the admin side of one broker: the HTTP API, /metrics
// and the live page that Config.Admin asks for. Package broker does not
// link it, so that a program that serves no admin API (a Go test that
// embeds a broker) links neither the admin package nor Prometheus;
// package broker/adminapi has the one there is, adminapi.New, which
// `minibroker serve` gives every broker it starts.
//
// Start calls it once, with the broker's clock, before it makes the
// broker's parts: the hooks it returns are what those parts report to.
// Once every part is made, Start calls the hooks' Start with them and
// serves what that returns on the admin listener.
type AdminAPI func(clock coordinator.Clock) (*AdminHooks, error)

// AdminHooks are what the admin side is told while the broker runs, and
// how its server is made. Nil fields are not called.
type AdminHooks struct {
	// Observer is told of requests, commits, fetches, connections and
	// fencing (server.Config.Observer).
	Observer server.Observer
	// OnRebalance and OnGroupDeleted are coordinator.Config's.
	OnRebalance    func(coordinator.Rebalance)
	OnGroupDeleted func(group string)
	// ObserveSync is told how long each durable write of the offsets
	// journal took (offsets.Config.ObserveSync).
	ObserveSync func(time.Duration)
	// Start makes the admin server over the broker's parts. Required.
	Start func(AdminParts) (AdminServer, error)
}

// AdminParts are the parts of a broker the admin API reads and drives.
type AdminParts struct {
	Coordinator  *coordinator.Coordinator
	Catalog      *catalog.Catalog
	Log          *records.Log
	Topics       *topics.Admin
	Faults       *server.Faults
	Transactions *txn.Coordinator
	// Clock is the coordinator's: a *clock.Manual with Config.ManualClock.
	Clock  coordinator.Clock
	Logger *slog.Logger
	// Token is Config.AdminToken.
	Token string
	// OffsetStats, MemoryStats and AuthStats read the offsets store's
	// counters, the Kafka server's memory budget and its failed
	// authentications.
	OffsetStats func() offsets.Stats
	MemoryStats func() server.MemoryStats
	AuthStats   func() server.AuthStats
	// Advertised is the Kafka address Metadata names (GET /v1/cluster).
	Advertised func() string
}

// AdminServer serves the admin API on ln until ctx is done, and returns
// once everything it started has stopped.
type AdminServer interface {
	Serve(ctx context.Context, ln net.Listener) error
}
