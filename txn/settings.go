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
}

// WithDefaults returns s with every zero field set to its default.
func (s Settings) WithDefaults() Settings {
	if s.TransactionMaxTimeout == 0 {
		s.TransactionMaxTimeout = DefaultMaxTimeout
	}
	return s
}

// Validate checks the settings, a zero field standing for its default.
// Its errors are *settings.Error.
func (s Settings) Validate() error {
	if s.TransactionMaxTimeout < 0 {
		return settings.Errorf("txn", "TransactionMaxTimeout", "must be positive, got %v", s.TransactionMaxTimeout)
	}
	return nil
}
