package txn

import (
	"time"

	"github.com/minibroker/minibroker/internal/settings"
)

// Settings are the transaction coordinator's user settings, each a
// `minibroker serve` flag (its tags). Zero fields mean the default;
// Validate is their one check.
type Settings struct {
	// TransactionMaxTimeout caps the transaction timeout a producer may
	// ask for (Kafka's transaction.max.timeout.ms): longer gets
	// ErrInvalidTimeout (INVALID_TRANSACTION_TIMEOUT). Default
	// DefaultMaxTimeout (15 min, as Kafka).
	TransactionMaxTimeout time.Duration `flag:"transaction-max-timeout" help:"the longest transaction timeout a producer may ask for (Kafka's transaction.max.timeout.ms); longer gets INVALID_TRANSACTION_TIMEOUT"`
	// TransactionalIDExpiration is how long a transactional id with no
	// transaction open may go without a request before the expiry step
	// forgets it (Kafka's transactional.id.expiration.ms): its producer id
	// and epoch go, and a later InitProducerId for it gets a new producer
	// id. An id with a transaction open or being completed never expires.
	// Default DefaultTransactionalIDExpiration (7 days, as Kafka).
	TransactionalIDExpiration time.Duration `flag:"transactional-id-expiration" help:"how long a transactional id with no open transaction may stay idle before it is forgotten (Kafka's transactional.id.expiration.ms)"`
}

// DefaultTransactionalIDExpiration is Kafka's
// transactional.id.expiration.ms default.
const DefaultTransactionalIDExpiration = 7 * 24 * time.Hour

// WithDefaults returns s with every zero field set to its default.
func (s Settings) WithDefaults() Settings {
	if s.TransactionMaxTimeout == 0 {
		s.TransactionMaxTimeout = DefaultMaxTimeout
	}
	if s.TransactionalIDExpiration == 0 {
		s.TransactionalIDExpiration = DefaultTransactionalIDExpiration
	}
	return s
}

// Validate checks the settings, a zero field standing for its default.
// Its errors are *settings.Error.
func (s Settings) Validate() error {
	if s.TransactionMaxTimeout < 0 {
		return settings.Errorf("txn", "TransactionMaxTimeout", "must be positive, got %v", s.TransactionMaxTimeout)
	}
	if s.TransactionalIDExpiration < 0 {
		return settings.Errorf("txn", "TransactionalIDExpiration", "must be positive, got %v", s.TransactionalIDExpiration)
	}
	return nil
}
