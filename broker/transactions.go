package broker

import (
	"github.com/minibroker/minibroker/txn"
)

// openTransactions opens the transaction coordinator on the data dir's
// transaction log (or in memory), after the partition logs, the offsets
// store and the group coordinator it completes transactions through: at
// open it finishes what a crash left half done. Its timeouts run in the
// group coordinator's expiry step.
func openTransactions(cfg Config, b *Broker) (*txn.Coordinator, error) {
	t, err := txn.New(txn.Config{
		Clock: b.clock, Partitions: b.log, Offsets: b.coord, Dir: b.dataDir,
		Settings: cfg.TransactionSettings, Logger: b.logger,
	})
	if err != nil {
		return nil, err
	}
	b.coord.OnExpire(func() { t.Expire() })
	return t, nil
}

// Transactions returns the transaction coordinator (the admin API and
// tests read it).
func (b *Broker) Transactions() *txn.Coordinator { return b.txns }
