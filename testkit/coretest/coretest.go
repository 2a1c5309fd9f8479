// Package coretest assembles, for a test, the broker's core in memory as
// broker.Start wires it: a partition log, a topic catalog whose new topics
// get their partitions in that log, and a group coordinator over the
// catalog with a committed-offsets store. The server's and the admin
// side's in-package tests call their handlers over it; a test that means a
// whole broker on a socket uses broker.Start (the integration tests'
// startBroker) instead.
//
// It is imported only by _test.go files (scripts/boundaries.sh checks) and
// knows nothing of the wire, so that the in-package tests of server/ and
// admin/ can use it without an import cycle.
package coretest

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/topics"
)

// Config is what a test changes in the core. The zero Config is an empty
// catalog over an in-memory log, and a coordinator on the system clock
// with an in-memory offsets store.
type Config struct {
	// Topics are created, in name order, before New returns.
	Topics map[string]int32
	// Catalog configures the catalog (in memory unless Dir is set); a nil
	// Prepare creates each new topic's partitions in the log with the
	// settings of its configs (topics.Prepare, as the broker does).
	Catalog catalog.Config
	// Coordinator configures the coordinator. Its Topics is always the
	// catalog; a nil Clock is clock.System{}, a nil Store an
	// offsets.NewMemory().
	Coordinator coordinator.Config
}

// Core is the log, the catalog and the coordinator New assembled.
type Core struct {
	Log         *records.Log
	Catalog     *catalog.Catalog
	Coordinator *coordinator.Coordinator
}

// New assembles the core of cfg; cleanup closes the log. Any error fails
// the test.
func New(t testing.TB, cfg Config) *Core {
	t.Helper()
	log, err := records.Open(records.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	catCfg := cfg.Catalog
	if catCfg.Prepare == nil {
		catCfg.Prepare = func(tp catalog.Topic) error { return topics.Prepare(log, tp) }
	}
	cat, err := catalog.Open(catCfg)
	require.NoError(t, err)
	for _, name := range slices.Sorted(maps.Keys(cfg.Topics)) {
		_, err := cat.Create(name, cfg.Topics[name])
		require.NoError(t, err)
	}
	coordCfg := cfg.Coordinator
	coordCfg.Topics = cat
	if coordCfg.Clock == nil {
		coordCfg.Clock = clock.System{}
	}
	if coordCfg.Store == nil {
		coordCfg.Store = offsets.NewMemory()
	}
	coord, err := coordinator.New(coordCfg)
	require.NoError(t, err)
	return &Core{Log: log, Catalog: cat, Coordinator: coord}
}
