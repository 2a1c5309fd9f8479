package settings

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestErrorf(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("broker: %w", Errorf("server", "MaxFetchWait", "must be positive, got %v", "-1s"))
	require.EqualError(t, err, "broker: server: MaxFetchWait must be positive, got -1s")
	var se *Error
	require.True(t, errors.As(err, &se))
	require.Equal(t, Error{Scope: "server", Field: "MaxFetchWait", Problem: "must be positive, got -1s"}, *se)
}
