package txn

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/settings"
)

func TestSettings(t *testing.T) {
	t.Parallel()
	require.Equal(t, Settings{TransactionMaxTimeout: 15 * time.Minute, TransactionalIDExpiration: 7 * 24 * time.Hour}, Settings{}.WithDefaults())
	require.NoError(t, Settings{}.Validate())
	var se *settings.Error
	require.True(t, errors.As(Settings{TransactionMaxTimeout: -time.Second}.Validate(), &se))
	require.Equal(t, settings.Error{Scope: "txn", Field: "TransactionMaxTimeout", Problem: "must be positive, got -1s"}, *se)
	require.True(t, errors.As(Settings{TransactionalIDExpiration: -time.Hour}.Validate(), &se))
	require.Equal(t, settings.Error{Scope: "txn", Field: "TransactionalIDExpiration", Problem: "must be positive, got -1h0m0s"}, *se)
}
