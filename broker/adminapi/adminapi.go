// Package adminapi serves minibroker's admin side (package admin: the
// HTTP API, /metrics and the live page) beside a broker: give New as
// broker.Config.AdminAPI with Config.Admin, as `minibroker serve` does.
//
// It is apart from package broker so that a program that embeds a broker
// without the admin API links neither package admin nor Prometheus and
// protobuf, which package admin's metrics need. It imports broker and
// admin; neither imports it.
package adminapi

import (
	"github.com/minibroker/minibroker/admin"
	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/coordinator"
)

// New is a broker.AdminAPI: a recorder on clock that the broker's parts
// report to, and, once they are made, the admin server over them, which
// reads the recorder.
func New(clock coordinator.Clock) (*broker.AdminHooks, error) {
	rec, err := admin.NewRecorder(admin.RecorderConfig{Clock: clock})
	if err != nil {
		return nil, err
	}
	m := rec.Metrics()
	return &broker.AdminHooks{
		Observer:       rec,
		OnRebalance:    rec.Rebalanced,
		OnGroupDeleted: rec.GroupDeleted,
		ObserveSync:    m.ObserveFsync,
		Start: func(p broker.AdminParts) (broker.AdminServer, error) {
			m.WatchOffsets(p.OffsetStats)
			m.WatchRecords(p.Log.Stats)
			m.WatchTransactions(p.Transactions.Stats)
			m.WatchMemory(p.MemoryStats)
			m.WatchAuthentication(p.AuthStats)
			return admin.New(admin.Config{
				Coordinator: p.Coordinator, Catalog: p.Catalog, Recorder: rec, Clock: p.Clock, Logger: p.Logger,
				Token: p.Token, OffsetStats: p.OffsetStats, Log: p.Log, Faults: p.Faults, Transactions: p.Transactions, Topics: p.Topics,
				Advertised: p.Advertised,
			})
		},
	}, nil
}

var _ broker.AdminAPI = New
